import Foundation
import HTTP1
import HTTPClient

/// Objects in Firebase Storage v0: `GET`, `PATCH` and `DELETE` on
/// `/v0/b/{bucket}/o/{object}`, listings on `/v0/b/{bucket}/o`, media with
/// `alt=media`, and download URLs carrying one of the object's download
/// tokens (`alt=media&token=…`), as the Firebase SDKs build them.
///
/// Reads (metadata, listings, media) and deletes are idempotent; a `PATCH`
/// is not marked so (each one bumps the metageneration, and adding a download
/// token twice would leave two), so a transport never resends one on its own.
extension FirebaseV0Protocol: ObjectWireProtocol {
    /// v0 has no generations; callers refuse a pinned reference before building a request
    /// (``StoragePath/validatedObject(generation:on:)``), so `generation` is always nil here.
    func getMetadata(bucket: String, name: String, generation: Int64? = nil) -> HTTPRequest {
        HTTPRequest(method: "GET", url: objectURL(bucket: bucket, name: name), isIdempotent: true)
    }

    /// v0 has no preconditions; callers refuse any before building a request
    /// (``StoragePreconditions/validate(for:)``), so `preconditions` is always empty here, and
    /// no generations (see ``getMetadata(bucket:name:generation:)``).
    func updateMetadata(
        bucket: String, name: String, generation: Int64? = nil, _ update: StorageMetadataUpdate,
        preconditions: StoragePreconditions = .none
    ) -> HTTPRequest {
        patch(bucket: bucket, name: name, body: update.patchBody)
    }

    /// v0 has no preconditions or generations (see ``updateMetadata(bucket:name:generation:_:preconditions:)``).
    func delete(
        bucket: String, name: String, generation: Int64? = nil, preconditions: StoragePreconditions = .none
    ) -> HTTPRequest {
        HTTPRequest(method: "DELETE", url: objectURL(bucket: bucket, name: name), isIdempotent: true)
    }

    /// v0 takes a prefix, the delimiter and a page size, as the Firebase SDKs send them (the
    /// query was validated to hold no more).
    func list(bucket: String, _ query: StorageObjectQuery, pageToken: String?) -> HTTPRequest {
        var items = [
            ("prefix", query.prefix), ("delimiter", query.delimiter ?? "/"), ("maxResults", String(query.pageSize)),
        ]
        if let pageToken { items.append(("pageToken", pageToken)) }
        return HTTPRequest(
            method: "GET",
            url: WireURL.make(base: baseURL, path: "/v0/b/\(WireURL.pathSegment(bucket))/o", query: items),
            isIdempotent: true
        )
    }

    /// v0 listing items carry only `name` and `bucket`: the page has no metadata.
    func listPage(from response: HTTPResponse) throws(StorageError) -> ObjectListPage {
        try ObjectListPage(listJSON: response.body)
    }

    /// v0 has no preconditions: a resumed download cannot be held to its generation.
    var pinsGenerations: Bool { false }

    var mediaAnswerStatuses: Set<Int> { [200, 206] }

    /// v0 has no preconditions or generations (see ``updateMetadata(bucket:name:generation:_:preconditions:)``),
    /// and is never given an expected generation (``pinsGenerations``).
    func media(
        bucket: String, name: String, _ read: MediaRead, preconditions: StoragePreconditions = .none
    ) -> HTTPRequest {
        var request = HTTPRequest(
            method: "GET", url: mediaURL(bucket: bucket, name: name, token: nil), isIdempotent: true)
        if let range = read.rangeHeader { request.headers.add("Range", range) }
        // The stored bytes, never Cloud Storage's decompressive transcoding: their CRC32C can be
        // checked and a Range continues them; the download decodes gzip itself.
        request.headers.add("Accept-Encoding", "gzip")
        return request
    }

    /// Firebase Storage serves media with the headers of the Cloud Storage behind it.
    func mediaHead(status: Int, headers: HTTPHeaders, answering read: MediaRead) throws(StorageError) -> MediaHead {
        try MediaHead(googleMediaStatus: status, headers: headers, answering: read)
    }

    /// `…/v0/b/{bucket}/o/{object}?alt=media&token={first token}`; nil when the
    /// object has no download token.
    func downloadURL(bucket: String, name: String, generation: Int64? = nil, metadata: StorageMetadata) -> URL? {
        guard let token = metadata.downloadTokens.first else { return nil }
        return mediaURL(bucket: bucket, name: name, token: token)
    }

    /// A PATCH of `downloadTokens`, the field through which Firebase Storage
    /// creates tokens for objects that have none.
    func addDownloadToken(bucket: String, name: String, token: String) -> HTTPRequest? {
        let body = JSONText.serialize(.object([("downloadTokens", .string(token))]))
        return patch(bucket: bucket, name: name, body: Data(body.utf8))
    }

    /// v0 has no server-side copy.
    func rewrite(_ copy: ServerSideCopy, rewriteToken: String?) -> HTTPRequest? { nil }

    /// v0 has no compose.
    func compose(
        bucket: String, name: String, sources: [ComposeSource], metadata: StorageMetadata,
        preconditions: StoragePreconditions
    ) -> HTTPRequest? { nil }

    /// v0 has no move.
    func move(
        bucket: String, from source: String, to destination: String, preconditions: StoragePreconditions,
        sourcePreconditions: StoragePreconditions
    ) -> HTTPRequest? { nil }

    private func patch(bucket: String, name: String, body: Data) -> HTTPRequest {
        var request = HTTPRequest(
            method: "PATCH", url: objectURL(bucket: bucket, name: name), body: .data(body), isIdempotent: false)
        request.headers.add("Content-Type", "application/json; charset=utf-8")
        return request
    }

    private func mediaURL(bucket: String, name: String, token: String?) -> URL {
        var query = [("alt", "media")]
        if let token { query.append(("token", token)) }
        return WireURL.make(
            base: baseURL,
            path: "/v0/b/\(WireURL.pathSegment(bucket))/o/\(WireURL.pathSegment(name))",
            query: query
        )
    }
}
