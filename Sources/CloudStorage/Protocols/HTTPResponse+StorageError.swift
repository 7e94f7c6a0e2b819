import Foundation
import HTTPClient

extension HTTPResponse {
    /// What the request was about, so a 404 can say what was not found.
    enum Subject {
        case bucket(String)
        case object(String)
    }

    /// Whether the same request may succeed later: time-outs, throttling and
    /// server errors.
    var isRetryable: Bool {
        status == 408 || status == 429 || (500...599).contains(status)
    }

    /// The error this response reports.
    func storageError(about subject: Subject, sentChecksum: Bool = false) -> StorageError {
        let message = serverMessage
        let code: StorageErrorCode
        let text: String
        switch status {
        case _ where [400, 403, 404].contains(status) && message.map(Self.saysProjectIsMissing) == true:
            code = .projectNotFound
            text = "The project behind the bucket does not exist or is not set up for Cloud Storage."
        case 400 where sentChecksum && message.map(Self.mentionsChecksum) == true:
            code = .nonMatchingChecksum
            text = "The server refused the bytes: their checksum does not match the one sent."
        case 304, 412:
            // 304 answers a read whose "not match" precondition failed: a conditional
            // request is the only kind that earns it, and the SDK sends no other.
            code = .preconditionFailed
            text = "A precondition of the request did not hold: the object is not in the state it required."
        case 400, 411, 413, 416:
            code = .invalidArgument
            text = "The server rejected the request as invalid."
        case 401:
            code = .unauthenticated
            text = "The server did not accept the credentials (or none were sent)."
        case 403:
            code = .unauthorized
            text = "The credentials do not allow this operation."
        case 404:
            switch subject {
            case .bucket(let bucket):
                code = .bucketNotFound
                text = "The bucket \(bucket) does not exist."
            case .object(let name):
                code = .objectNotFound
                text = "No object named \(name) exists."
            }
        case 429:
            code = .quotaExceeded
            text = "The server is throttling requests."
        case 100...399:
            // Not an error status, but not one the protocol answers this request with either
            // (a redirect, a 204 where a body is due, a 308 outside an upload session).
            code = .protocolViolation
            text = "The server answered with a status the protocol does not use for this request."
        default:
            code = .unknown
            text = "The server answered with an unexpected status."
        }
        return StorageError(code, text, httpStatus: status, serverMessage: message)
    }

    /// The `error.message` of a JSON error body, or the start of a text body.
    var serverMessage: String? {
        guard !body.isEmpty else { return nil }
        if let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] {
            if let error = object["error"] as? [String: Any], let message = error["message"] as? String {
                return message
            }
            if let message = object["message"] as? String { return message }
        }
        let text = String(decoding: body.prefix(300), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// Cloud Storage reports a missing or unusable project (for billing or
    /// `userProject`) in the message, with 400, 403 or 404.
    private static func saysProjectIsMissing(_ message: String) -> Bool {
        let lowered = message.lowercased()
        guard lowered.contains("project") else { return false }
        return ["not found", "does not exist", "unknown project", "is invalid", "has been deleted"]
            .contains { lowered.contains($0) }
    }

    private static func mentionsChecksum(_ message: String) -> Bool {
        let lowered = message.lowercased()
        return lowered.contains("crc32c") || lowered.contains("checksum") || lowered.contains("hash")
    }
}
