import Foundation
import HTTPClient

/// Cloud Storage's XML API multipart upload, on the JSON API's host and credentials: the parts
/// of one object go up on separate connections and one request assembles them.
///
/// Requests, all at `<base>/<bucket>/<object>`: initiate `POST ?uploads` (the final object's
/// metadata as headers; the answer names the `UploadId`), upload part `PUT ?partNumber=N&uploadId=`
/// (the answer's `ETag` names the part), complete `POST ?uploadId=` with a
/// `CompleteMultipartUpload` document listing every part in ascending order, abort
/// `DELETE ?uploadId=` (204), list parts `GET ?uploadId=`.
///
/// What the service does not take here, an upload does not send here (``accepts(_:options:)``):
/// preconditions, customer-supplied keys, ACLs and the metadata fields without an XML header.
///
/// Which requests may reach the server twice (``HTTPRequest/isIdempotent``): a part (the
/// same number replaces the same bytes), abort and list; not initiate (each opens an upload)
/// nor complete (a second one finds the upload gone).
struct XMLMultipartProtocol: Sendable {
    let baseURL: URL
    var options = StorageRequestOptions()

    /// Whether an upload of `metadata` with `preconditions` can go this way: everything it sets
    /// has an XML API header.
    static func accepts(
        _ metadata: StorageMetadata, preconditions: StoragePreconditions, options: StorageRequestOptions
    ) -> Bool {
        preconditions.isEmpty && options.encryptionKey == nil && options.kmsKeyName == nil
            && options.predefinedACL == nil && metadata.customTime == nil && metadata.temporaryHold == nil
            && metadata.eventBasedHold == nil && metadata.retention == nil && metadata.downloadTokens.isEmpty
    }

    /// `POST ?uploads`: opens an upload whose object will have `metadata` and `contentType`.
    func initiate(bucket: String, name: String, metadata: StorageMetadata, contentType: String) -> HTTPRequest {
        var request = HTTPRequest(
            method: "POST", url: url(bucket, name, [("uploads", "")]), body: .empty, isIdempotent: false)
        request.headers.add("Content-Type", contentType)
        let fields: [(String, String?)] = [
            ("Cache-Control", metadata.cacheControl), ("Content-Disposition", metadata.contentDisposition),
            ("Content-Encoding", metadata.contentEncoding), ("Content-Language", metadata.contentLanguage),
            ("x-goog-storage-class", metadata.storageClass ?? options.storageClass),
        ]
        for case (let field, let value?) in fields { request.headers.add(field, value) }
        for (key, value) in metadata.customMetadata.sorted(by: { $0.key < $1.key }) {
            request.headers.add("x-goog-meta-" + key, value)
        }
        addBilling(to: &request)
        return request
    }

    /// The `UploadId` of an answer to ``initiate(bucket:name:metadata:contentType:)``.
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation`` when the answer names none.
    func uploadID(from response: HTTPResponse) throws(StorageError) -> String {
        guard let id = Self.element("UploadId", in: response.body), !id.isEmpty else {
            throw .protocolViolation("The server opened a multipart upload but named no UploadId for it.")
        }
        return id
    }

    /// `PUT ?partNumber=&uploadId=`: one part, with its CRC32C for the server to check.
    func part(
        uploadID: String, bucket: String, name: String, number: Int, body: HTTPRequestBody, crc32c: UInt32?
    )
        -> HTTPRequest
    {
        var request = HTTPRequest(
            method: "PUT", url: url(bucket, name, [("partNumber", String(number)), ("uploadId", uploadID)]),
            body: body, isIdempotent: true)
        if let crc32c { request.headers.add("x-goog-hash", "crc32c=" + CRC32CEncoding.base64(crc32c)) }
        addBilling(to: &request)
        return request
    }

    /// The part's ETag from the answer to ``part(uploadID:bucket:name:number:body:crc32c:)``.
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation`` without one, and
    ///   ``StorageErrorCode/nonMatchingChecksum`` when the server's CRC32C of the part differs.
    func partETag(from response: HTTPResponse, crc32c: UInt32?) throws(StorageError) -> String {
        guard let etag = response.headers["ETag"], !etag.isEmpty else {
            throw .protocolViolation("The server stored a part of a multipart upload but sent no ETag for it.")
        }
        if let crc32c, let reported = Self.crc32c(response.headers.values("x-goog-hash")), reported != crc32c {
            throw StorageError(
                .nonMatchingChecksum,
                "The server's CRC32C of a part (\(CRC32CEncoding.base64(reported))) differs from the bytes sent"
                    + " (\(CRC32CEncoding.base64(crc32c))).")
        }
        return etag
    }

    /// `POST ?uploadId=`: assembles `parts` (number and ETag, in ascending order) into the object.
    func complete(
        uploadID: String, bucket: String, name: String, parts: [(number: Int, etag: String)]
    )
        -> HTTPRequest
    {
        var document = "<CompleteMultipartUpload>"
        for (number, etag) in parts {
            document += "<Part><PartNumber>\(number)</PartNumber><ETag>\(Self.escaped(etag))</ETag></Part>"
        }
        document += "</CompleteMultipartUpload>"
        var request = HTTPRequest(
            method: "POST", url: url(bucket, name, [("uploadId", uploadID)]), body: .data(Data(document.utf8)),
            isIdempotent: false)
        request.headers.add("Content-Type", "application/xml")
        addBilling(to: &request)
        return request
    }

    /// `DELETE ?uploadId=`: ends the upload and discards its parts.
    func abort(uploadID: String, bucket: String, name: String) -> HTTPRequest {
        var request = HTTPRequest(
            method: "DELETE", url: url(bucket, name, [("uploadId", uploadID)]), isIdempotent: true)
        addBilling(to: &request)
        return request
    }

    /// `GET ?uploadId=`: the parts stored so far, from after `marker` on.
    func listParts(uploadID: String, bucket: String, name: String, after marker: Int) -> HTTPRequest {
        var request = HTTPRequest(
            method: "GET",
            url: url(bucket, name, [("uploadId", uploadID), ("part-number-marker", String(marker))]),
            isIdempotent: true)
        addBilling(to: &request)
        return request
    }

    /// A page of ``listParts(uploadID:bucket:name:after:)``: each part's number, ETag and size,
    /// and the marker of the next page when there is one.
    func parts(
        from response: HTTPResponse
    ) throws(StorageError) -> (
        parts: [(number: Int, etag: String, size: Int64)], next: Int?
    ) {
        var parts: [(number: Int, etag: String, size: Int64)] = []
        var rest = response.body[...]
        while let range = Self.range(of: "<Part>", in: rest),
            let end = Self.range(of: "</Part>", in: rest[range.upperBound...])
        {
            let part = rest[range.upperBound..<end.lowerBound]
            guard let number = Self.element("PartNumber", in: part).flatMap({ Int($0) }),
                let etag = Self.element("ETag", in: part),
                let size = Self.element("Size", in: part).flatMap({ Int64($0) })
            else {
                throw .protocolViolation(
                    "The server listed a part of a multipart upload without its number, ETag or size.")
            }
            parts.append((number, Self.unescaped(etag), size))
            rest = rest[end.upperBound...]
        }
        let truncated = Self.element("IsTruncated", in: response.body) == "true"
        let next = truncated ? Self.element("NextPartNumberMarker", in: response.body).flatMap { Int($0) } : nil
        return (parts, next)
    }

    // MARK: - Helpers

    /// `<base>/<bucket>/<object>?query`: the object name keeps its slashes, as XML API paths do.
    private func url(_ bucket: String, _ name: String, _ query: [(String, String)]) -> URL {
        let path =
            "/" + WireURL.pathSegment(bucket) + "/"
            + name.split(separator: "/", omittingEmptySubsequences: false).map { WireURL.pathSegment(String($0)) }
            .joined(separator: "/")
        var text = WireURL.make(base: baseURL, path: path).absoluteString
        text += "?" + query.map { $1.isEmpty ? $0 : "\($0)=\(WireURL.queryValue($1))" }.joined(separator: "&")
        return URL(string: text) ?? baseURL
    }

    /// The XML API names the billed project in a header.
    private func addBilling(to request: inout HTTPRequest) {
        if let project = options.userProject { request.headers.add("x-goog-user-project", project) }
    }

    private static func crc32c(_ googHash: [String]) -> UInt32? {
        for value in googHash {
            for item in value.split(separator: ",") {
                let trimmed = item.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("crc32c=") { return CRC32CEncoding.parse(String(trimmed.dropFirst(7))) }
            }
        }
        return nil
    }

    private static func range(of text: String, in data: Data.SubSequence) -> Range<Data.Index>? {
        data.range(of: Data(text.utf8), in: data.startIndex..<data.endIndex)
    }

    /// The text of the first `<name>…</name>` in `data`, trimmed.
    static func element(_ name: String, in data: some DataProtocol) -> String? {
        let text = String(decoding: Data(data), as: UTF8.self)
        guard let open = text.range(of: "<\(name)>"),
            let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex)
        else { return nil }
        return text[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    private static func unescaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
