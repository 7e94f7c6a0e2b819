import Foundation

/// A failure answered with an error status and the protocol's error JSON.
struct HTTPError: Error, CustomStringConvertible {
    let status: Int
    let message: String
    let reason: String
    var headers: HTTPHeadersList = []

    init(_ status: Int, _ message: String, reason: String? = nil) {
        self.status = status
        self.message = message
        self.reason = reason ?? HTTPError.defaultReason(status)
    }

    var description: String { "\(status) \(message)" }

    static func defaultReason(_ status: Int) -> String {
        switch status {
        case 400: "invalid"
        case 401: "required"
        case 403: "forbidden"
        case 404: "notFound"
        case 409: "conflict"
        case 412: "conditionNotMet"
        case 413: "uploadTooLarge"
        case 416: "requestedRangeNotSatisfiable"
        case 429: "rateLimitExceeded"
        case 499: "clientClosedRequest"
        case 500...599: "backendError"
        default: "error"
        }
    }

    static func badRequest(_ message: String) -> HTTPError { HTTPError(400, message) }
}

/// Extra response header fields as name/value pairs.
typealias HTTPHeadersList = [(String, String)]
