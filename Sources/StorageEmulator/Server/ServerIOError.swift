package import HTTP1
import NativeTLS
import SystemCalls

/// Why the server could not read a request body or send a response.
///
/// Thrown to the application from ``ServerRequest/readBody(into:)`` and the
/// ``ServerResponder`` methods; after any of these but
/// ``alreadyResponded`` and ``invalidResponse`` the connection is closed
/// once the application returns.
package enum ServerIOError: Error, Hashable, Sendable {
    /// The peer sent nothing (or read nothing) within the configured timeout.
    case timedOut
    /// The peer closed the connection before the body ended.
    case endOfStream
    /// The request body's chunked framing is malformed.
    case malformedBody(HTTP1Error)
    /// The connection was already reset or closed, or the request is over.
    case connectionEnded
    /// The server evicted the connection, which waited for its peer, to make room for a new one;
    /// the server answers the client itself (see ``EmulatorHTTPServer/Limits/maxConnections``).
    case evicted
    /// The application answered twice.
    case alreadyResponded
    /// A status, header or length that cannot be sent (the response was not started).
    case invalidResponse
    /// A streamed body was longer or shorter than its Content-Length.
    case bodyLengthMismatch(expected: Int64, written: Int64)
    /// The host is not an IPv4 address (or `localhost`), or the port is out of range.
    case invalidAddress
    /// ``EmulatorHTTPServer/start()`` was called on a server already started or stopped.
    case alreadyStarted
    /// A system call failed with this `errno`.
    case system(Int32)
    /// TLS failed on the connection (the message names why).
    case tls(String)
}

extension ServerIOError {
    /// The server's reading of a failed socket call.
    init(_ error: SocketError) {
        switch error {
        case .timedOut: self = .timedOut
        case .invalidAddress: self = .invalidAddress
        case .system(let code): self = .system(code)
        }
    }
}

extension ServerIOError {
    /// The server's reading of a failed TLS read or write.
    init(_ error: TLSError) {
        switch error.kind {
        case .timedOut: self = .timedOut
        case .peerClosed: self = .endOfStream
        case .io where error.systemError != nil: self = .system(error.systemError ?? 0)
        default: self = .tls(error.message)
        }
    }
}
