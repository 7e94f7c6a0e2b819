import Foundation
import HTTP1
import HTTPClient

/// Objects in the Google Cloud Storage JSON API: `GET`, `PATCH` and `DELETE`
/// on `/storage/v1/b/{bucket}/o/{object}`, listings on `/storage/v1/b/{bucket}/o`,
/// and media with `alt=media`.
///
/// Reads (metadata, listings, media) and deletes are idempotent; a `PATCH`
/// is not marked so (each one bumps the metageneration, and it carries no
/// precondition), so a transport never resends one on its own.
extension GCSJSONProtocol: ObjectWireProtocol {
    func getMetadata(bucket: String, name: String, generation: Int64? = nil) -> HTTPRequest {
        var request = HTTPRequest(
            method: "GET",
            url: objectURL(bucket: bucket, name: name, query: Self.generationItem(generation) + billingItems),
            isIdempotent: true)
        // Without the key Cloud Storage leaves out the hashes of a CSEK object.
        addEncryption(options.encryptionKey, to: &request)
        return request
    }

    func updateMetadata(
        bucket: String, name: String, generation: Int64? = nil, _ update: StorageMetadataUpdate,
        preconditions: StoragePreconditions = .none
    ) -> HTTPRequest {
        var query = Self.generationItem(generation) + preconditions.queryItems
        if update.overrideUnlockedRetention { query.append(("overrideUnlockedRetention", "true")) }
        query += billingItems
        var request = HTTPRequest(
            method: "PATCH", url: objectURL(bucket: bucket, name: name, query: query),
            body: .data(update.patchBody), isIdempotent: false)
        request.headers.add("Content-Type", "application/json; charset=UTF-8")
        return request
    }

    func delete(
        bucket: String, name: String, generation: Int64? = nil, preconditions: StoragePreconditions = .none
    ) -> HTTPRequest {
        HTTPRequest(
            method: "DELETE",
            url: objectURL(
                bucket: bucket, name: name,
                query: Self.generationItem(generation) + preconditions.queryItems + billingItems),
            isIdempotent: true)
    }

    func list(bucket: String, _ query: StorageObjectQuery, pageToken: String?) -> HTTPRequest {
        var items = [("maxResults", String(query.pageSize))]
        if !query.prefix.isEmpty { items.append(("prefix", query.prefix)) }
        if let delimiter = query.delimiter { items.append(("delimiter", delimiter)) }
        if let glob = query.matchGlob { items.append(("matchGlob", glob)) }
        if let start = query.startOffset { items.append(("startOffset", start)) }
        if let end = query.endOffset { items.append(("endOffset", end)) }
        if query.includesVersions { items.append(("versions", "true")) }
        if query.includesTrailingDelimiter { items.append(("includeTrailingDelimiter", "true")) }
        if query.includesFoldersAsPrefixes { items.append(("includeFoldersAsPrefixes", "true")) }
        if let pageToken { items.append(("pageToken", pageToken)) }
        // Each item's resource, so a listing answers what `ls -l` or a sync needs without a
        // request per object; but only the fields StorageMetadata reads: `selfLink`,
        // `mediaLink`, `id`, `etag`, `kind` and the storage class would about double it.
        items.append(("fields", "items(\(StorageMetadata.gcsResourceFields)),prefixes,nextPageToken"))
        items += billingItems
        return HTTPRequest(
            method: "GET",
            url: WireURL.make(base: baseURL, path: "/storage/v1/b/\(WireURL.pathSegment(bucket))/o", query: items),
            isIdempotent: true
        )
    }

    func listPage(from response: HTTPResponse) throws(StorageError) -> ObjectListPage {
        try ObjectListPage(listJSON: response.body, readingResources: true)
    }

    /// Holds a resumed download to its generation with `ifGenerationMatch`, unless the
    /// caller's preconditions already name one.
    var pinsGenerations: Bool { true }

    var mediaAnswerStatuses: Set<Int> { [200, 206] }

    func media(
        bucket: String, name: String, _ read: MediaRead, preconditions: StoragePreconditions = .none
    ) -> HTTPRequest {
        var conditions = preconditions
        if conditions.ifGenerationMatch == nil, let expected = read.expectedGeneration {
            conditions.ifGenerationMatch = expected
        }
        let url = objectURL(
            bucket: bucket, name: name,
            query: [("alt", "media")] + Self.generationItem(read.generation) + conditions.queryItems + billingItems)
        var request = HTTPRequest(method: "GET", url: url, isIdempotent: true)
        addEncryption(options.encryptionKey, to: &request)
        if let range = read.rangeHeader { request.headers.add("Range", range) }
        // The stored bytes, never Cloud Storage's decompressive transcoding: their CRC32C can be
        // checked and a Range continues them; the download decodes gzip itself.
        request.headers.add("Accept-Encoding", "gzip")
        return request
    }

    func mediaHead(status: Int, headers: HTTPHeaders, answering read: MediaRead) throws(StorageError) -> MediaHead {
        try MediaHead(googleMediaStatus: status, headers: headers, answering: read)
    }

    /// The object's media URL on this endpoint: it needs no token, and serves
    /// whoever the bucket's access rules allow.
    func downloadURL(bucket: String, name: String, generation: Int64? = nil, metadata: StorageMetadata) -> URL? {
        objectURL(bucket: bucket, name: name, query: [("alt", "media")] + Self.generationItem(generation))
    }

    func addDownloadToken(bucket: String, name: String, token: String) -> HTTPRequest? {
        nil
    }

    /// `generation=N` when a generation is named; nothing for the live object.
    static func generationItem(_ generation: Int64?) -> [(String, String)] {
        generation.map { [("generation", String($0))] } ?? []
    }

    func objectURL(bucket: String, name: String, query: [(String, String)] = []) -> URL {
        WireURL.make(
            base: baseURL,
            path: "/storage/v1/b/\(WireURL.pathSegment(bucket))/o/\(WireURL.pathSegment(name))",
            query: query
        )
    }
}
