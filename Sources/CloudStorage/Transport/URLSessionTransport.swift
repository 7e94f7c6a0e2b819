// PLACEHOLDER
final class URLSessionTransport: HTTPTransport {
    static let shared = URLSessionTransport()
    func execute(_ request: HTTPRequest, progress: (@Sendable (Int64) -> Void)?) async throws -> HTTPResponse {
        throw HTTPTransportError(kind: .other, message: "unimplemented")
    }
}
