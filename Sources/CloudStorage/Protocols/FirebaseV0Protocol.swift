import Foundation
import HTTPClient

/// The Firebase Storage v0 upload protocol, spoken by Cloud Storage for
/// Firebase and the Firebase emulator: `X-Goog-Upload-Protocol: multipart`
/// for small objects and `X-Goog-Upload-Protocol: resumable` sessions driven
/// by `X-Goog-Upload-Command` for the rest.
///
/// | Step | Request | Answer read |
/// | --- | --- | --- |
/// | single request | `POST /v0/b/{bucket}/o?name={name}`, multipart/related | metadata JSON |
/// | start | `POST /v0/b/{bucket}/o?name={name}`, command `start`, JSON metadata | `X-Goog-Upload-URL`, status `active` |
/// | send | `POST {session}`, command `upload` or `upload, finalize`, `X-Goog-Upload-Offset` | status `active` or `final` (+ metadata) |
/// | query | `POST {session}`, command `query` | `X-Goog-Upload-Size-Received`, status |
/// | cancel | `POST {session}`, command `cancel` | — |
///
/// Every session answer is HTTP 200 whatever the session's state: the
/// `X-Goog-Upload-Status` header (`active`, `final`, `cancelled`) is what
/// counts. Unlike the GCS JSON API, v0 takes no checksum with the upload; the
/// engine compares the CRC32C the server reports for the stored object instead.
///
/// Which requests may reach the server twice (``HTTPRequest/isIdempotent``,
/// so a transport may resend one whose kept-alive connection proved dead):
/// - The single-request upload (creates an object, no precondition) and the
///   session start (opens a new session each time): not idempotent.
/// - `upload` commands: not idempotent. The protocol's offset would make a
///   resend harmless, but the Firebase emulator ignores
///   `X-Goog-Upload-Offset` and appends whatever arrives, so a resend there
///   would store bytes twice; the engine's own query-and-resume recovers.
/// - `query` and `cancel` commands, the metadata read and the delete leave
///   the same state however often they arrive: idempotent.
struct FirebaseV0Protocol: UploadWireProtocol {
    let baseURL: URL

    /// Firebase ID tokens go as `Authorization: Firebase <token>`, as the
    /// Firebase SDKs send them (the emulator accepts `Firebase owner` as its
    /// administrator).
    /// v0 has no checksum header; the engine compares the stored object's `crc32c`.
    let checksFinalChecksum = false

    /// 200 for every live session answer (its state is in a header); 404 and
    /// 410 when the server no longer knows the session.
    let sessionAnswerStatuses: Set<Int> = [200, 201, 404, 410]

    func singleRequestUpload(_ upload: UploadDescription, body: HTTPRequestBody) -> HTTPRequest {
        // Matches the Firebase JS SDK: lowercase charset, nothing after the closing delimiter.
        let multipart = MultipartRelatedBody(
            metadataJSON: metadataJSON(upload),
            jsonContentType: "application/json; charset=utf-8",
            mediaContentType: upload.contentType,
            media: body,
            closingLineBreak: false
        )
        var request = HTTPRequest(method: "POST", url: bucketURL(upload), body: multipart.body, isIdempotent: false)
        request.headers.add("X-Goog-Upload-Protocol", "multipart")
        request.headers.add("Content-Type", multipart.contentType)
        return request
    }

    func startSession(_ upload: UploadDescription) -> HTTPRequest {
        var request = HTTPRequest(
            method: "POST", url: bucketURL(upload), body: .data(metadataJSON(upload)), isIdempotent: false)
        request.headers.add("X-Goog-Upload-Protocol", "resumable")
        request.headers.add("X-Goog-Upload-Command", "start")
        // Optional in the protocol: without it, "upload, finalize" ends the object at the bytes sent.
        if upload.declaresSize {
            request.headers.add("X-Goog-Upload-Header-Content-Length", String(upload.size))
        }
        request.headers.add("X-Goog-Upload-Header-Content-Type", upload.contentType)
        request.headers.add("Content-Type", "application/json; charset=utf-8")
        return request
    }

    func sessionURL(from response: HTTPResponse) throws(StorageError) -> URL {
        guard Self.uploadStatus(response) == "active" else {
            throw .protocolViolation(
                "The server answered the start of an upload session without X-Goog-Upload-Status: active."
            )
        }
        guard let text = response.headers["X-Goog-Upload-URL"], let url = URL(string: text),
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil
        else {
            throw .protocolViolation("The server opened an upload session but sent no usable X-Goog-Upload-URL for it.")
        }
        return try sessionURLKeepingTLS(url, base: baseURL)
    }

    func send(
        session: URL,
        offset: Int64,
        body: HTTPRequestBody,
        isFinal: Bool,
        totalSize: Int64,
        crc32c: UInt32?
    ) -> HTTPRequest {
        var request = HTTPRequest(method: "POST", url: session, body: body, isIdempotent: false)
        request.headers.add("X-Goog-Upload-Command", isFinal ? "upload, finalize" : "upload")
        request.headers.add("X-Goog-Upload-Offset", String(offset))
        return request
    }

    func query(session: URL) -> HTTPRequest {
        command("query", session)
    }

    func cancel(session: URL) -> HTTPRequest {
        command("cancel", session)
    }

    func objectMetadata(bucket: String, name: String) -> HTTPRequest {
        HTTPRequest(method: "GET", url: objectURL(bucket: bucket, name: name), isIdempotent: true)
    }

    /// v0 has no way to name a generation, so this deletes the object as it
    /// is now. The engine deletes only right after the server reported the
    /// wrong object as stored, so the live object is that one unless another
    /// writer replaced it in between; a wrong object left in place would be
    /// worse than that narrow race.
    func deleteObject(bucket: String, name: String, generation: Int64) -> HTTPRequest {
        HTTPRequest(method: "DELETE", url: objectURL(bucket: bucket, name: name), isIdempotent: true)
    }

    func sessionState(
        from response: HTTPResponse, after step: UploadSessionStep
    ) throws(StorageError)
        -> UploadSessionState
    {
        if response.status == 404 || response.status == 410 { return .gone }
        switch Self.uploadStatus(response) {
        case "active":
            if let received = response.headers["X-Goog-Upload-Size-Received"] {
                guard let committed = Int64(received.trimmingCharacters(in: .whitespaces)), committed >= 0 else {
                    throw .protocolViolation("The server reported an unreadable committed size (\(received)).")
                }
                return .active(committedBytes: committed)
            }
            guard case .send(let offset, let length) = step else {
                throw .protocolViolation("The server answered a status query without X-Goog-Upload-Size-Received.")
            }
            // An accepted upload command commits everything it carried.
            return .active(committedBytes: offset + length)
        case "final":
            // As in the Firebase SDKs, a query's answer is not read for metadata
            // (servers need not send any); an upload's answer carries it, except
            // when the session had already been finalized.
            if step == .query || response.body.isEmpty { return .completeWithoutMetadata }
            do throws(StorageError) {
                return .complete(try StorageMetadata(objectResource: response.body))
            } catch {
                return .completeUnreadable(error)
            }
        case "cancelled":
            return .gone
        case let status?:
            throw .protocolViolation("The server reported an unknown upload status (\(status)).")
        case nil:
            throw .protocolViolation("The server's answer to an upload command has no X-Goog-Upload-Status.")
        }
    }

    // MARK: Helpers

    /// A bodiless session command: `query` or `cancel`, both idempotent.
    private func command(_ name: String, _ session: URL) -> HTTPRequest {
        var request = HTTPRequest(method: "POST", url: session, isIdempotent: true)
        request.headers.add("X-Goog-Upload-Command", name)
        return request
    }

    /// `X-Goog-Upload-Status`, trimmed and lowercased.
    private static func uploadStatus(_ response: HTTPResponse) -> String? {
        response.headers["X-Goog-Upload-Status"]?.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// The metadata sent with an upload: as the Firebase SDKs do, it always
    /// names the content type, and it carries no checksum (v0 takes none).
    private func metadataJSON(_ upload: UploadDescription) -> Data {
        var metadata = upload.metadata
        metadata.contentType = upload.contentType
        return metadata.resourceJSON(name: upload.objectName, crc32c: nil)
    }

    private func bucketURL(_ upload: UploadDescription) -> URL {
        WireURL.make(
            base: baseURL,
            path: "/v0/b/\(WireURL.pathSegment(upload.bucket))/o",
            query: [("name", upload.objectName)]
        )
    }

    func objectURL(bucket: String, name: String) -> URL {
        WireURL.make(base: baseURL, path: "/v0/b/\(WireURL.pathSegment(bucket))/o/\(WireURL.pathSegment(name))")
    }
}
