import Foundation
import HTTP1

/// One request and its response: what ``ServerApplication/handle(_:_:)`` receives
/// as both ``ServerRequest`` and ``ServerResponder``.
///
/// Lives on the connection's thread; once `handle` returns it is finished and
/// every call on it fails with ``ServerIOError/connectionEnded``.
final class ServerExchange: ServerRequest, ServerResponder {
    /// What the server does with the connection after `handle` returns.
    enum Outcome {
        case noResponse
        case sent(closeAfter: Bool, bodyComplete: Bool)
        case failed
        case ended
    }

    private enum ResponseState {
        case none
        case sent(closeAfter: Bool)
        case failed
        case ended
    }

    private let connection: ServerConnection
    private let head: HTTPRequestHead
    private let requestTarget: RequestTarget
    private let expectsContinue: Bool
    private var continueSent = false
    /// Body bytes still to come with Content-Length framing.
    private var lengthRemaining: Int64
    private var decoder: ChunkedBodyDecoder?
    private var bodyComplete: Bool
    /// A body read failed; the rest of the stream cannot be trusted.
    private var bodyBroken = false
    /// The body's chunked framing was invalid: the client, not the server, is at fault.
    private(set) var bodyMalformed = false
    private var response = ResponseState.none
    private var active = true

    private(set) var bodyBytesRead: Int64 = 0

    init(
        connection: ServerConnection,
        head: HTTPRequestHead,
        target: RequestTarget,
        framing: HTTPBodyFraming,
        expectsContinue: Bool
    ) {
        self.connection = connection
        self.head = head
        self.requestTarget = target
        self.expectsContinue = expectsContinue
        switch framing {
        case .length(let length):
            lengthRemaining = length
            bodyComplete = length == 0
        case .chunked, .untilClose:
            lengthRemaining = 0
            decoder = ChunkedBodyDecoder(limits: connection.limits.chunked)
            bodyComplete = false
        }
    }

    /// Ends the exchange and reports how the connection should continue.
    func finish() -> Outcome {
        active = false
        switch response {
        case .none: return .noResponse
        case .failed: return .failed
        case .ended: return .ended
        case .sent(let closeAfter): return .sent(closeAfter: closeAfter || bodyBroken, bodyComplete: bodyComplete)
        }
    }

    // MARK: - ServerRequest

    var method: String { head.method }
    var target: String { head.target }
    var path: String { requestTarget.path }
    var queryItems: [(name: String, value: String)] { requestTarget.queryItems }
    var headers: HTTPHeaders { head.headers }
    var contentLength: Int64? { decoder == nil ? lengthRemaining + bodyBytesRead : nil }

    func readBody(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try readBodyTyped(into: buffer)
    }

    private func readBodyTyped(into buffer: UnsafeMutableRawBufferPointer) throws(ServerIOError) -> Int {
        guard active, !connection.ended else { throw .connectionEnded }
        if case .ended = response { throw .connectionEnded }
        if bodyBroken { throw .connectionEnded }
        if bodyComplete || buffer.isEmpty { return 0 }
        if expectsContinue && !continueSent, case .none = response {
            // The client holds the body back until it hears this, and it is only sent once the
            // application wants the body: an early final answer spares the client the upload.
            continueSent = true
            try guarded { () throws(ServerIOError) in try connection.send(Self.continueLine) }
        }
        return try guarded { () throws(ServerIOError) in
            if decoder == nil {
                return try readLengthDelimited(into: buffer)
            }
            return try readChunked(into: buffer)
        }
    }

    /// Whether a body read waits for the peer, so that the server may evict the connection
    /// meanwhile to make room (and answer `503` itself): only while nothing has been answered.
    private var waitsForPeer: Bool {
        if case .none = response { return true }
        return false
    }

    private func readLengthDelimited(into buffer: UnsafeMutableRawBufferPointer) throws(ServerIOError) -> Int {
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(Int64(buffer.count), lengthRemaining))])
        let count = try readData(into: wanted)
        lengthRemaining -= Int64(count)
        bodyBytesRead += Int64(count)
        if lengthRemaining == 0 { bodyComplete = true }
        return count
    }

    private func readChunked(into buffer: UnsafeMutableRawBufferPointer) throws(ServerIOError) -> Int {
        guard var decoder else { return 0 }
        defer { self.decoder = decoder }
        while true {
            if decoder.isComplete {
                bodyComplete = true
                return 0
            }
            let inChunk = decoder.dataRemainingInChunk
            if inChunk > 0 {
                let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(Int64(buffer.count), inChunk))])
                let count = try readData(into: wanted)
                decoder.consumeData(count)
                bodyBytesRead += Int64(count)
                return count
            }
            if connection.buffered > 0 {
                do {
                    let used = try connection.withBufferedBytes { bytes throws(HTTP1Error) in
                        try decoder.decode(bytes, maxDataBytes: 0).consumed
                    }
                    connection.consume(used)
                } catch {
                    bodyMalformed = true
                    throw .malformedBody(error)
                }
                continue
            }
            guard try connection.fill(timeout: connection.limits.readTimeout, waitsForPeer: waitsForPeer) > 0 else {
                throw .endOfStream
            }
        }
    }

    /// Body bytes from the read-ahead buffer first, else straight from the socket into `buffer`.
    private func readData(into buffer: UnsafeMutableRawBufferPointer) throws(ServerIOError) -> Int {
        if connection.buffered > 0 { return connection.takeBuffered(into: buffer) }
        let count = try connection.receiveDirect(into: buffer, waitsForPeer: waitsForPeer)
        guard count > 0 else { throw .endOfStream }
        return count
    }

    /// Runs a body read and remembers that the body is broken if it fails.
    private func guarded<T>(_ body: () throws(ServerIOError) -> T) throws(ServerIOError) -> T {
        do {
            return try body()
        } catch {
            bodyBroken = true
            throw error
        }
    }

    private static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    // MARK: - ServerResponder

    func respond(status: Int, headers: HTTPHeaders, body: Data) throws {
        try checkCanRespond()
        guard (200...999).contains(status), !(status == 204 && !body.isEmpty) else {
            throw ServerIOError.invalidResponse
        }
        var wire = try responseHead(status: status, headers: headers, contentLength: Int64(body.count))
        let sendsBody = head.method != "HEAD" && !body.isEmpty
        do {
            if sendsBody && body.count <= 64 * 1024 {
                wire.append(contentsOf: body)
                try connection.send(wire)
            } else {
                try connection.send(wire)
                if sendsBody {
                    try body.withUnsafeBytes { bytes in try connection.send(bytes) }
                }
            }
        } catch {
            response = .failed
            throw error
        }
    }

    func respondStreaming(
        status: Int,
        headers: HTTPHeaders,
        contentLength: Int64?,
        writeBody: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        try checkCanRespond()
        guard (200...999).contains(status), (contentLength ?? 0) >= 0, !(status == 204 && contentLength != 0)
        else {
            throw ServerIOError.invalidResponse
        }
        guard let contentLength else {
            try respondUnframed(status: status, headers: headers, writeBody: writeBody)
            return
        }
        let wire = try responseHead(status: status, headers: headers, contentLength: contentLength)
        var written: Int64 = 0
        do {
            try connection.send(wire)
            // A HEAD answer announces the length without the bytes.
            guard head.method != "HEAD" else { return }
            try writeBody { bytes in
                guard case .sent = response, active else { throw ServerIOError.connectionEnded }
                guard written + Int64(bytes.count) <= contentLength else {
                    throw ServerIOError.bodyLengthMismatch(
                        expected: contentLength, written: written + Int64(bytes.count))
                }
                try connection.send(bytes)
                written += Int64(bytes.count)
            }
            guard written == contentLength else {
                throw ServerIOError.bodyLengthMismatch(expected: contentLength, written: written)
            }
        } catch {
            // The peer cannot tell where this response ends: the connection must go.
            response = .failed
            throw error
        }
    }

    /// ``respondStreaming(status:headers:contentLength:writeBody:)`` of a body whose length is
    /// not known: chunked to an HTTP/1.1 peer, delimited by the connection's close to HTTP/1.0.
    private func respondUnframed(
        status: Int, headers: HTTPHeaders,
        writeBody: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        let chunked = head.version.minor >= 1
        var fields = headers
        if chunked {
            fields.set("Transfer-Encoding", "chunked")
        } else {
            fields.set("Connection", "close")
        }
        let wire = try responseHead(status: status, headers: fields, contentLength: nil)
        do {
            try connection.send(wire)
            guard head.method != "HEAD" else { return }
            try writeBody { bytes in
                guard case .sent = response, active else { throw ServerIOError.connectionEnded }
                guard !bytes.isEmpty else { return }
                if chunked {
                    var chunk: [UInt8] = []
                    ChunkedBodyEncoder.appendChunk(bytes, to: &chunk)
                    try connection.send(chunk)
                } else {
                    try connection.send(bytes)
                }
            }
            // Without chunks, the close that `Connection: close` brings ends the body.
            if chunked { try connection.send(ChunkedBodyEncoder.lastChunk) }
        } catch {
            response = .failed
            throw error
        }
    }

    func resetConnection() {
        // An evicted connection is the server's to end (with its own answer).
        guard active, !connection.evicted else { return }
        response = .ended
        connection.reset()
    }

    func closeConnection() {
        guard active, !connection.evicted else { return }
        response = .ended
        connection.closeNow()
    }

    func holdConnection(limit: Duration) {
        guard active, !connection.evicted else { return }
        response = .ended
        connection.holdUntilPeerCloses(limit: limit)
    }

    private func checkCanRespond() throws(ServerIOError) {
        guard active, !connection.ended, !connection.evicted else { throw .connectionEnded }
        switch response {
        case .none: return
        case .ended: throw .connectionEnded
        case .sent, .failed: throw .alreadyResponded
        }
    }

    /// Serializes the head with the server's framing fields and records the response as sent.
    ///
    /// A nil `contentLength` keeps the `Transfer-Encoding` the caller set (the body frames itself).
    private func responseHead(status: Int, headers: HTTPHeaders, contentLength: Int64?) throws(ServerIOError) -> [UInt8]
    {
        var fields = headers
        let applicationCloses = fields.tokens("Connection").contains("close")
        let transferEncoding = contentLength == nil ? fields["Transfer-Encoding"] : nil
        for name in ["Content-Length", "Transfer-Encoding", "Connection"] { fields.remove(name) }
        if let transferEncoding { fields.add("Transfer-Encoding", transferEncoding) }
        // Unread request bytes cannot be skipped safely, so a response before the whole body closes.
        let closeAfter = applicationCloses || !head.wantsKeepAlive || !bodyComplete || bodyBroken
        if closeAfter {
            fields.add("Connection", "close")
        } else if head.version.minor == 0 {
            fields.add("Connection", "keep-alive")
        }
        if let contentLength, status != 204 && !(status == 304 && contentLength == 0) {
            fields.add("Content-Length", String(contentLength))
        }
        var wire: [UInt8] = []
        do {
            try HTTPHeadSerializer.append(HTTPResponseHead(status: status, headers: fields), to: &wire)
        } catch {
            throw .invalidResponse
        }
        response = .sent(closeAfter: closeAfter)
        return wire
    }
}
