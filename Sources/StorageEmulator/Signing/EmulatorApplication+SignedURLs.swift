import Foundation
import HTTP1
import NativeTLS
import V4Signing

/// V4-signed requests (`X-Goog-Signature` in the query) on Cloud Storage's XML-API paths,
/// `/<bucket>/<object>`: what a signed URL made by the SDK (or any of Google's libraries)
/// points at. The signature is the request's authority: no `Authorization` header is needed.
///
/// Served: `GET`/`HEAD` (the object's bytes, ranges too), `PUT` (the body becomes the
/// object), `DELETE`, and `POST` with `x-goog-resumable: start` (201, `Location` the session).
/// The session's URL is the signed URL plus `upload_id`, like GCS's; requests to it are
/// authorized by the session id alone (see ``UploadSession/Access/signedURL``), and follow the
/// JSON API's `Content-Range` protocol. A signature in the query authorizes nothing else: a
/// session started with credentials still needs them on every URL. Errors are GCS's XML errors.
extension EmulatorApplication {
    /// The verifier with the configured service accounts' keys (none without
    /// ``StorageEmulator/Configuration/authentication``: every signature is then refused).
    var signedURLVerifier: V4SignatureVerifier {
        let accounts = settings.authentication?.accounts
        return V4SignatureVerifier { email in accounts?.publicKey(for: email) }
    }

    /// The object a signed request names: path style, `/<bucket>/<object>`; or virtual-hosted,
    /// `<bucket>.localhost` and `/<object>` (`.localhost` names this machine, RFC 6761, so no
    /// other host is taken for a bucket). The object name keeps its slashes.
    private func signedObject(_ request: any ServerRequest) throws -> (bucket: String, name: String) {
        guard let decoded = V4PercentEncoding.decode(request.path) else {
            throw HTTPError(400, "The path's percent-encoding is malformed.", reason: "InvalidURI")
        }
        var parts = decoded.dropFirst().split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        if let bucket = Self.virtualHostedBucket(request.headers["Host"]) {
            parts = [Substring(bucket), decoded.dropFirst()]
        }
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw HTTPError(
                400, "The emulator serves signed requests for objects (/<bucket>/<object>) only.",
                reason: "InvalidRequest")
        }
        return (String(parts[0]), String(parts[1]))
    }

    /// `GET`/`HEAD`: the object's bytes, ranges too.
    func signedGet(_ request: any ServerRequest) throws -> Reply {
        let (bucket, name) = try signedObject(request)
        // A signed `generation=` serves that generation or nothing, never the live object instead.
        return try mediaReply(request, try gcsRecord(request, bucket: bucket, name: name))
    }

    /// `PUT`: the body becomes the object.
    ///
    /// - Parameter payloadHash: The body's SHA-256 the signature covers, if it covers one.
    func signedPut(_ request: any ServerRequest, _ body: BodyReader, payloadHash: String?) throws -> Reply {
        let (bucket, name) = try signedObject(request)
        var attributes = ObjectAttributes()
        attributes.contentType = request.headers["Content-Type"] ?? "application/octet-stream"
        var expected = ExpectedHashes()
        try expected.merge(googHash: request.headers.values("x-goog-hash"))
        let record = try storeObject(bucket: bucket, name: name, attributes: attributes, expected: expected) { sink in
            guard let payloadHash else {
                _ = try body.stream(into: sink)
                return
            }
            // The signature covers the body: a different body is refused, and nothing is stored.
            var digest = SHA256Stream()
            _ = try body.stream { bytes in
                digest.update(bytes)
                try sink(bytes)
            }
            guard digest.hexDigest() == payloadHash.lowercased() else {
                throw HTTPError(
                    400, "The body's SHA-256 does not match the signed x-goog-content-sha256.", reason: "BadDigest")
            }
        }
        var reply = Reply(status: 200)
        reply.headers.set("ETag", "\"\(ObjectJSON.etag(record))\"")
        reply.headers.set("x-goog-generation", String(record.generation))
        reply.headers.set("x-goog-hash", "crc32c=\(ChecksumEncoding.base64(crc32c: record.crc32c))")
        return reply
    }

    /// `DELETE`: the live version, or `generation`.
    func signedDelete(_ request: any ServerRequest) throws -> Reply {
        let (bucket, name) = try signedObject(request)
        let generation = try generationParameter(request)
        let deleted: Bool
        do {
            deleted = try store.delete(bucket: bucket, name: name, generation: generation)
        } catch {
            throw httpError(error)
        }
        guard deleted else { throw HTTPError(404, "No such object: \(bucket)/\(name)", reason: "NoSuchKey") }
        return Reply(status: 204)
    }

    /// `POST` with `x-goog-resumable: start`: a resumable upload session (201, `Location` its URL).
    func signedStartSession(_ request: any ServerRequest) throws -> Reply {
        let (bucket, name) = try signedObject(request)
        guard request.headers["x-goog-resumable"]?.lowercased() == "start" else {
            throw HTTPError(
                400, "A signed POST starts a resumable upload: it needs x-goog-resumable: start.",
                reason: "InvalidArgument")
        }
        var attributes = ObjectAttributes()
        attributes.contentType = request.headers["Content-Type"] ?? "application/octet-stream"
        let session = try startSession(
            bucket: bucket, name: name, attributes: attributes, expected: ExpectedHashes(), declaredSize: nil,
            access: .signedURL)
        var reply = Reply(status: 201)
        // The signed URL itself plus the session id, as GCS answers (origin-form target or not).
        let target = request.target.hasPrefix("/") ? base(request) + request.target : request.target
        reply.headers.set("Location", "\(target)&upload_id=\(session.id)")
        reply.headers.set("X-GUploader-UploadID", session.id)
        return reply
    }

    /// The bucket of a virtual-hosted request's `Host`, `<bucket>.localhost[:port]`; nil otherwise.
    static func virtualHostedBucket(_ host: String?) -> String? {
        guard let host else { return nil }
        let name = V4CanonicalRequest.canonicalHost(authority: host)
        guard name.hasSuffix(".localhost") else { return nil }
        let bucket = name.dropLast(".localhost".count)
        return bucket.isEmpty ? nil : String(bucket)
    }

    /// GCS's XML error document; the code is the error's reason.
    static func xmlError(_ error: HTTPError) -> Reply {
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;")
        }
        let code = error.reason.first?.isUppercase == true ? error.reason : xmlCode(error.status)
        let document =
            "<?xml version='1.0' encoding='UTF-8'?><Error><Code>\(escaped(code))</Code>"
            + "<Message>\(escaped(error.message))</Message></Error>"
        var reply = Reply(status: error.status, body: Data(document.utf8))
        reply.headers.set("Content-Type", "application/xml; charset=UTF-8")
        for (name, value) in error.headers { reply.headers.add(name, value) }
        return reply
    }

    /// The XML API's code for a status whose error carries the JSON API's reason.
    private static func xmlCode(_ status: Int) -> String {
        switch status {
        case 400: "InvalidArgument"
        case 401: "AuthenticationRequired"
        case 403: "AccessDenied"
        case 404: "NoSuchKey"
        case 405: "MethodNotAllowed"
        case 412: "PreconditionFailed"
        case 416: "InvalidRange"
        case 500...599: "InternalError"
        default: "Error"
        }
    }
}
