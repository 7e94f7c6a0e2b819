package import Foundation
package import HTTP1

/// The seam between the emulator's HTTP/1.1 server (sockets, connections,
/// framing) and what it serves (routing, storage, faults).
///
/// The server calls ``handle(_:_:)`` on the connection's own thread, once per
/// request, so an application may block: read the body, sleep to simulate a
/// stall, write to disk. It must answer through the responder exactly once
/// (``ServerResponder/respond(status:headers:body:)`` or a streaming response),
/// or end the connection with ``ServerResponder/resetConnection()`` or
/// ``ServerResponder/closeConnection()``. If it answers without reading the
/// whole body, the server closes the connection after the answer rather than
/// reading what is left.
package protocol ServerApplication: Sendable {
    func handle(_ request: any ServerRequest, _ responder: any ServerResponder)
}

/// A request whose head has been read and whose body is read on demand.
package protocol ServerRequest: AnyObject {
    /// `GET`, `PUT`, …
    var method: String { get }
    /// The request target as sent, percent-encoded, e.g. `/upload/storage/v1/b/b/o?uploadType=resumable&name=a%2Fb`.
    var target: String { get }
    /// The target's path, still percent-encoded (so `%2F` inside a segment is distinguishable from `/`).
    var path: String { get }
    /// The query items, percent-decoded, in order (`+` is not a space here: both GCS and Firebase encode spaces as `%20`).
    var queryItems: [(name: String, value: String)] { get }
    var headers: HTTPHeaders { get }
    /// The declared body length, or nil for a chunked body.
    var contentLength: Int64? { get }
    /// Body bytes read so far.
    var bodyBytesRead: Int64 { get }

    /// Reads body bytes into `buffer`, blocking; returns 0 at the end of the body.
    /// Sends `100 Continue` first if the client asked for it.
    ///
    /// - Throws: When the connection breaks or the body is malformed.
    func readBody(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

/// How an application answers, or refuses to.
package protocol ServerResponder: AnyObject {
    /// Sends a complete response. `Content-Length` is set from `body`.
    func respond(status: Int, headers: HTTPHeaders, body: Data) throws

    /// Sends a response head with `Content-Length: contentLength`, then lets
    /// `writeBody` push exactly that many bytes through the function it gets.
    ///
    /// With a nil `contentLength` the length is not known beforehand: the body is sent in the
    /// chunked transfer coding (to an HTTP/1.0 peer, delimited by closing the connection).
    func respondStreaming(
        status: Int,
        headers: HTTPHeaders,
        contentLength: Int64?,
        writeBody: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws

    /// Ends the connection with a TCP reset (SO_LINGER 0), sending no response.
    func resetConnection()

    /// Ends the connection with an orderly close, sending no response.
    func closeConnection()

    /// Sends nothing more and blocks until the peer closes the connection, the
    /// server stops, or `limit` passes; then ends the connection like
    /// ``closeConnection()``. Unread request bytes are left unread, so the peer
    /// sees a stall that only its own time-out ends. May follow a streaming
    /// response whose body was cut short.
    func holdConnection(limit: Duration)
}

extension ServerRequest {
    /// Reads the rest of the body into memory, failing if it exceeds `limit` bytes.
    package func readWholeBody(limit: Int) throws -> Data {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try readBody(into: $0) }
            if count == 0 { return data }
            data.append(contentsOf: chunk[0..<count])
            if data.count > limit { throw BodyTooLarge(limit: limit) }
        }
    }

    /// The first query value with this name.
    package func query(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }
}

/// A body larger than the application accepts.
package struct BodyTooLarge: Error, Sendable {
    package let limit: Int
}
