import Foundation

/// The Google Cloud Storage JSON API's upload protocol: `uploadType=multipart`
/// for small objects and `uploadType=resumable` sessions for the rest.
struct GCSJSONProtocol: UploadWireProtocol {
    let baseURL: URL

    let successStatuses: Set<Int> = [200, 201, 308]
    let sessionGoneStatuses: Set<Int> = [404, 410]

    func singleRequestUpload(_ upload: UploadDescription, body: HTTPRequestBody) -> HTTPRequest {
        let boundary = "cloudstorage-" + UUID().uuidString
        let json = upload.metadata.resourceJSON(name: upload.objectName, crc32c: upload.crc32c)
        var head = Data("--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".utf8)
        head.append(json)
        head.append(Data("\r\n--\(boundary)\r\nContent-Type: \(upload.contentType)\r\n\r\n".utf8))
        let tail = Data("\r\n--\(boundary)--\r\n".utf8)
        var request = HTTPRequest(
            method: "POST",
            url: uploadURL(bucket: upload.bucket, query: [("uploadType", "multipart")]),
            body: HTTPRequestBody(segments: [.data(head)] + body.segments + [.data(tail)])
        )
        request.headers.add("Content-Type", "multipart/related; boundary=\(boundary)")
        return request
    }

    func startSession(_ upload: UploadDescription) -> HTTPRequest {
        var request = HTTPRequest(
            method: "POST",
            url: uploadURL(
                bucket: upload.bucket,
                query: [("uploadType", "resumable"), ("name", upload.objectName)]
            ),
            body: .data(upload.metadata.resourceJSON(name: upload.objectName, crc32c: upload.crc32c))
        )
        request.headers.add("Content-Type", "application/json; charset=UTF-8")
        request.headers.add("X-Upload-Content-Type", upload.contentType)
        request.headers.add("X-Upload-Content-Length", String(upload.size))
        return request
    }

    func sessionURL(from response: HTTPResponse) throws(StorageError) -> URL {
        guard let location = response.headers["Location"], let url = URL(string: location),
            url.scheme == "http" || url.scheme == "https"
        else {
            throw .internalError("The server opened an upload session but sent no usable Location for it.")
        }
        return url
    }

    func send(
        session: URL,
        offset: Int64,
        body: HTTPRequestBody,
        isFinal: Bool,
        totalSize: Int64,
        crc32c: UInt32?
    ) -> HTTPRequest {
        let length = body.length
        let total = isFinal ? String(totalSize) : "*"
        let range = length == 0 ? "bytes */\(total)" : "bytes \(offset)-\(offset + length - 1)/\(total)"
        var request = HTTPRequest(method: "PUT", url: session, body: body)
        request.headers.add("Content-Range", range)
        if isFinal, let crc32c {
            request.headers.add("X-Goog-Hash", "crc32c=" + CRC32CEncoding.base64(crc32c))
        }
        return request
    }

    func query(session: URL) -> HTTPRequest {
        var request = HTTPRequest(method: "PUT", url: session)
        request.headers.add("Content-Range", "bytes */*")
        return request
    }

    func cancel(session: URL) -> HTTPRequest {
        HTTPRequest(method: "DELETE", url: session)
    }

    func deleteObject(bucket: String, name: String, generation: Int64) -> HTTPRequest {
        HTTPRequest(
            method: "DELETE",
            url: url(
                path: "/storage/v1/b/\(Self.pathSegment(bucket))/o/\(Self.pathSegment(name))",
                query: [("generation", String(generation))]
            )
        )
    }

    func sessionState(from response: HTTPResponse) throws(StorageError) -> UploadSessionState {
        if response.status == 308 {
            // "Range: bytes=0-K" means K+1 bytes are stored; no Range means none.
            guard let range = response.headers["Range"] else { return .active(committedBytes: 0) }
            guard range.hasPrefix("bytes=0-"), let last = Int64(range.dropFirst("bytes=0-".count)), last >= 0 else {
                throw .internalError("The server reported an unreadable committed range (\(range)).")
            }
            return .active(committedBytes: last + 1)
        }
        return .complete(try StorageMetadata(objectResource: response.body))
    }

    // MARK: URLs

    private func uploadURL(bucket: String, query: [(String, String)]) -> URL {
        url(path: "/upload/storage/v1/b/\(Self.pathSegment(bucket))/o", query: query)
    }

    func url(path: String, query: [(String, String)]) -> URL {
        var text = baseURL.absoluteString
        if text.hasSuffix("/") { text.removeLast() }
        text += path
        if !query.isEmpty {
            text += "?" + query.map { "\($0)=\(Self.queryValue($1))" }.joined(separator: "&")
        }
        // Every piece was percent-encoded above, so the URL always parses.
        return URL(string: text) ?? baseURL
    }

    /// Percent-encodes a path segment: everything but RFC 3986 unreserved characters.
    static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// Percent-encodes a query value the same way (so `/`, `+`, `&` and `=` are escaped).
    static func queryValue(_ text: String) -> String {
        pathSegment(text)
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
}
