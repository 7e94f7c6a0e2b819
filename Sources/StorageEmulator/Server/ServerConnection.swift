import Foundation
import HTTP1
import NativeTLS
import SystemCalls

/// One accepted connection: its read buffer and its request loop, over the plain
/// socket or, when the server has a TLS context, over TLS after a server handshake.
///
/// Confined to the connection's own thread (it is not `Sendable`); the only
/// cross-thread access to its socket is ``SocketDescriptor/shutdown()``.
final class ServerConnection {
    /// The server's name for this connection.
    let id: Int
    private let socket: SocketDescriptor
    /// What the exchange reads and writes: the socket, or TLS over it once ``run()`` shook hands.
    private var stream: ConnectionStream
    /// The server's TLS identity, or nil for plain HTTP.
    private let tls: TLSContext?
    let server: EmulatorHTTPServer
    /// Holds a head (up to the limit, plus one byte to notice excess) and read-ahead bytes.
    private let buffer: UnsafeMutableRawBufferPointer
    /// The unconsumed bytes are `buffer[start..<end]`.
    private var start = 0
    private var end = 0
    /// Reset or closed: the descriptor must not be used again.
    private(set) var ended = false
    /// The server evicted the connection to make room for a new one (see
    /// ``EmulatorHTTPServer/Limits/maxConnections``): it serves nothing more, and only the
    /// connection itself answers (see ``endEvicted(requestUnderWay:)``).
    private(set) var evicted = false
    /// Whether a request was answered: until then a client expects an answer on the connection.
    private var answeredOne = false
    /// The network model's state for this connection; nil when the server has no shape.
    private var shaper: ConnectionShaper?

    init(id: Int, socket: SocketDescriptor, server: EmulatorHTTPServer, tls: TLSContext?) {
        self.id = id
        self.socket = socket
        self.stream = .plain(socket.fd)
        self.tls = tls
        self.server = server
        buffer = .allocate(byteCount: max(server.limits.head.maxHeadBytes + 1, 16 * 1024) + 16 * 1024, alignment: 16)
        if let shape = server.shape {
            // TCP's handshake costs a round trip before the first request, TLS 1.3's one more.
            shaper = ConnectionShaper(shape, handshakes: tls == nil ? 1 : 2)
            server.shapingCounters.addConnection()
        }
    }

    deinit {
        stream.release()
        buffer.deallocate()
    }

    var limits: EmulatorHTTPServer.Limits { server.limits }

    /// Serves requests until the connection ends.
    func run() {
        if let tls {
            // Evictable during the handshake, which waits for the peer; the place in line is kept
            // for the head that follows.
            guard server.connection(id, waitsForPeer: true) else { return endEvicted(requestUnderWay: false) }
            guard startTLS(tls) else { return }
        }
        while !ended {
            guard let head = readHead() else { return }
            guard serve(head) else { return }
        }
    }

    // MARK: - TLS

    /// Runs the TLS server handshake on this (the connection's own) thread.
    ///
    /// A client that fails it, stalls in it or speaks plain HTTP is closed without an answer:
    /// nothing reaches the application, so no fault-plan step is used. The connection stays
    /// evictable meanwhile (it waits for its peer), and each read is bounded by the head time-out.
    ///
    /// - Returns: Whether the connection now speaks TLS.
    private func startTLS(_ context: TLSContext) -> Bool {
        do {
            let connection = ConnectionStream.TLSConnection(
                stream: try TLSStream(server: context, socket: socket.fd), socket: socket.fd)
            connection.setReceiveTimeout(limits.headTimeout)
            // Stored before the handshake so that every way out releases it.
            stream = .tls(connection)
            try connection.stream.handshake()
            return true
        } catch {
            closeNow()
            return false
        }
    }

    // MARK: - Requests

    private func readHead() -> HTTPRequestHead? {
        // Until the head is whole the server may evict this connection to make room (see Limits).
        guard server.connection(id, waitsForPeer: true) else {
            endEvicted(requestUnderWay: buffered > 0)
            return nil
        }
        var parser = HTTPHeadParser(limits: limits.head)
        // The whole head must arrive within headTimeout of its first byte, not merely each read:
        // otherwise a byte every few seconds would hold the connection forever.
        var deadline: ContinuousClock.Instant? = buffered > 0 ? .now + limits.headTimeout : nil
        while true {
            if buffered > 0 {
                do {
                    let parsed = try withBufferedBytes { bytes throws(HTTP1Error) in try parser.parseRequest(bytes) }
                    if let (head, used) = parsed {
                        consume(used)
                        guard server.connection(id, waitsForPeer: false) else {
                            endEvicted(requestUnderWay: true)
                            return nil
                        }
                        return head
                    }
                } catch {
                    refuse(error)
                    return nil
                }
            }
            var timeout = limits.idleTimeout
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else {
                    answerAndClose(status: 408)
                    return nil
                }
                timeout = min(left, limits.readTimeout)
            }
            do {
                // Idle between requests; once a byte of the next one arrived, it must keep coming.
                guard try fill(timeout: timeout) > 0 else { return nil }
                if deadline == nil { deadline = .now + limits.headTimeout }
            } catch .timedOut where deadline != nil {
                answerAndClose(status: 408)
                return nil
            } catch .evicted {
                // Bytes of a head that began to arrive are still in the buffer.
                endEvicted(requestUnderWay: buffered > 0)
                return nil
            } catch {
                return nil
            }
        }
    }

    /// Handles one request; returns whether the connection can carry another.
    private func serve(_ head: HTTPRequestHead) -> Bool {
        shaper?.heardRequest()
        if head.version.minor >= 1 && head.headers.values("Host").count != 1 {
            answerAndClose(status: 400)
            return false
        }
        let framing: HTTPBodyFraming
        do {
            framing = try HTTPBodyFraming.request(head)
        } catch {
            refuse(error)
            return false
        }
        let expectations = head.headers.tokens("Expect")
        guard expectations.isEmpty || expectations == ["100-continue"] else {
            answerAndClose(status: 417)
            return false
        }
        guard let target = RequestTarget(head.target) else {
            answerAndClose(status: 400)
            return false
        }
        let exchange = ServerExchange(
            connection: self, head: head, target: target, framing: framing,
            expectsContinue: !expectations.isEmpty && head.version.minor >= 1)
        server.application.handle(exchange, exchange)
        let outcome = exchange.finish()
        if evicted {
            // Evicted while it waited for body bytes: the request was not served.
            endEvicted(requestUnderWay: true)
            return false
        }
        switch outcome {
        case .noResponse:
            // A body whose framing was broken is the client's fault; anything else unanswered is ours.
            if !ended { answerAndClose(status: exchange.bodyMalformed ? 400 : 500) }
            return false
        case .ended:
            return false
        case .failed:
            closeNow()
            return false
        case .sent(let closeAfter, let bodyComplete):
            answeredOne = true
            if closeAfter || !bodyComplete {
                finishClosing(mayHaveUnreadBytes: !bodyComplete)
                return false
            }
            return true
        }
    }

    /// Answers a head that cannot be served, or just closes when the bytes are not HTTP/1.
    private func refuse(_ error: HTTP1Error) {
        switch error {
        case .notHTTP where startsWithTLSHandshake:
            // A client with an https:// address for this plain server: a 400 in clear text, as
            // real servers answer, tells it so at once; a silent close would look like a
            // broken connection, retried until its budget runs out.
            answerAndClose(status: 400)
        case .notHTTP, .unsupportedVersion:
            closeNow()
        case .headTooLarge, .tooManyFields:
            answerAndClose(status: 431)
        case .unsupportedTransferCoding:
            answerAndClose(status: 501)
        default:
            answerAndClose(status: 400)
        }
    }

    /// Whether the read-ahead bytes open a TLS handshake record (content type 22, version 3.x).
    private var startsWithTLSHandshake: Bool {
        withBufferedBytes { bytes in bytes.count >= 2 && bytes[0] == 0x16 && bytes[1] == 0x03 }
    }

    /// Sends a short plain-text answer with `Connection: close`, then closes.
    func answerAndClose(status: Int) {
        guard !ended else { return }
        let reason = HTTPStatus.reasonPhrase(status)
        let text =
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + "Content-Length: \(reason.utf8.count + 1)\r\nConnection: close\r\n\r\n\(reason)\n"
        try? send(Array(text.utf8))
        finishClosing(mayHaveUnreadBytes: true)
    }

    /// Ends a connection the server evicted.
    ///
    /// A client that sent a request, or began to, or has not sent its first yet (it connected
    /// to send one) gets `503` with `Retry-After: 1`: the request was not served, try again.
    /// One idle between requests is closed without an answer, as any idle keep-alive connection
    /// may be. Over TLS the eviction ended the stream, so there is no answer either.
    ///
    /// - Parameter requestUnderWay: Whether bytes of a request arrived that were not answered.
    private func endEvicted(requestUnderWay: Bool) {
        evicted = true
        guard requestUnderWay || !answeredOne, tls == nil else { return closeNow() }
        try? send(EmulatorHTTPServer.busyResponse)
        finishClosing(mayHaveUnreadBytes: true)
    }

    // MARK: - Reading

    /// Bytes read ahead and not consumed yet.
    var buffered: Int { end - start }

    func withBufferedBytes<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        try body(UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
    }

    func consume(_ count: Int) {
        start += count
        if start == end {
            start = 0
            end = 0
        }
    }

    /// Copies up to `destination.count` read-ahead bytes into `destination`.
    func takeBuffered(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(buffered, destination.count)
        guard count > 0, let target = destination.baseAddress, let source = buffer.baseAddress else { return 0 }
        target.copyMemory(from: source + start, byteCount: count)
        consume(count)
        return count
    }

    /// Reads more bytes into the read-ahead buffer.
    ///
    /// - Parameter waitsForPeer: Whether the connection counts as waiting for its peer during
    ///   this read (a request body's; a head's counts so for all of ``readHead()``).
    /// - Returns: The bytes added; 0 when the peer closed.
    /// - Throws: ``ServerIOError/evicted`` when the server evicted the connection.
    func fill(timeout: Duration, waitsForPeer: Bool = false) throws(ServerIOError) -> Int {
        guard !ended else { throw .connectionEnded }
        if start > 0 && (start == end || end == buffer.count) {
            if let base = buffer.baseAddress, start < end {
                base.copyMemory(from: base + start, byteCount: end - start)
            }
            end -= start
            start = 0
        }
        let count = try receive(
            into: UnsafeMutableRawBufferPointer(rebasing: buffer[end...]), timeout: timeout, waitsForPeer: waitsForPeer)
        end += count
        return count
    }

    /// Reads body bytes straight into `destination` (only when nothing is read ahead).
    ///
    /// - Parameter waitsForPeer: Whether the connection counts as waiting for its peer meanwhile.
    /// - Returns: The bytes read; 0 when the peer closed.
    /// - Throws: ``ServerIOError/evicted`` when the server evicted the connection.
    func receiveDirect(
        into destination: UnsafeMutableRawBufferPointer, waitsForPeer: Bool
    ) throws(ServerIOError) -> Int {
        guard !ended else { throw .connectionEnded }
        return try receive(into: destination, timeout: limits.readTimeout, waitsForPeer: waitsForPeer)
    }

    /// One read from the stream, during which the server may evict the connection if it
    /// `waitsForPeer` (see ``EmulatorHTTPServer/Limits/maxConnections``).
    ///
    /// The server wakes an evicted connection by shutting its receiving side down, which reads as
    /// the end of the stream; so after an end or a failure, or a wait that the server ended,
    /// the connection asks it, and throws ``ServerIOError/evicted`` if so.
    private func receive(
        into destination: UnsafeMutableRawBufferPointer, timeout: Duration, waitsForPeer: Bool
    ) throws(ServerIOError) -> Int {
        if waitsForPeer, !server.connection(id, waitsForPeer: true) { throw markEvicted() }
        let result = Result { () throws(ServerIOError) in try stream.receive(into: destination, timeout: timeout) }
        if waitsForPeer, !server.connection(id, waitsForPeer: false) { throw markEvicted() }
        if case .success(let count) = result, count > 0 {
            if let wait = shaper?.received(count) {
                server.shapingCounters.addReceived(wait)
                pause(wait)
            }
            return count
        }
        if server.connectionWasEvicted(id) { throw markEvicted() }
        return try result.get()
    }

    private func markEvicted() -> ServerIOError {
        evicted = true
        return .evicted
    }

    // MARK: - Writing

    func send(_ bytes: UnsafeRawBufferPointer) throws(ServerIOError) {
        guard !ended else { throw .connectionEnded }
        if let waits = shaper?.sending(bytes.count) {
            server.shapingCounters.addSent(waits)
            pause(waits.total)
        }
        try stream.send(bytes)
    }

    // MARK: - Shaping

    /// Waits for the network model, on this connection's own thread: one `poll` for no event,
    /// which the server's shutdown of the socket (``EmulatorHTTPServer/stop()``) or the peer's
    /// reset ends early; the read or write that follows then fails.
    private func pause(_ wait: Duration) {
        guard wait > .zero else { return }
        _ = try? POSIXSocket.poll(socket.fd, readable: false, writable: false, timeout: wait)
    }

    func send(_ bytes: [UInt8]) throws(ServerIOError) {
        // Array.withUnsafeBytes rethrows untyped errors; carry the typed one out in a Result.
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(ServerIOError) in try send(buffer) } }
        try result.get()
    }

    // MARK: - Ending

    /// Ends the connection with RST (over TLS too: no close_notify, the socket just resets).
    func reset() {
        guard !ended else { return }
        ended = true
        stream.release()
        POSIXSocket.setResetOnClose(socket.fd)
        socket.close()
    }

    /// Ends the connection at once with FIN, answering nothing more.
    func closeNow() {
        guard !ended else { return }
        ended = true
        // A clean end over TLS says so with close_notify (once; nothing after a failure).
        stream.finishWriting()
        stream.release()
        POSIXSocket.shutdownBoth(socket.fd)
        socket.close()
    }

    /// Waits, reading nothing, until the peer closes or resets the connection, the server
    /// shuts the socket down, or `limit` passes; then ends the connection at once.
    func holdUntilPeerCloses(limit: Duration) {
        guard !ended else { return }
        POSIXSocket.waitForPeerClose(socket.fd, timeout: limit)
        closeNow()
    }

    /// Ends the connection after a final answer.
    ///
    /// When the peer may still be sending (an unread body, pipelined bytes), closing at once
    /// would make the kernel answer with RST and the peer could lose the response; so the
    /// server half-closes and discards input, bounded in time and bytes, until the peer closes.
    func finishClosing(mayHaveUnreadBytes: Bool) {
        guard !ended else { return }
        guard mayHaveUnreadBytes || buffered > 0 else {
            closeNow()
            return
        }
        // Over TLS the peer learns the end from close_notify; what it still sends is discarded
        // from the socket below, undecrypted.
        stream.finishWriting()
        POSIXSocket.shutdownWrite(socket.fd)
        let deadline = ContinuousClock.now + limits.lingerTimeout
        var discarded = 0
        start = 0
        end = 0
        while discarded < limits.lingerMaxBytes {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { break }
            guard let count = try? POSIXSocket.receive(socket.fd, into: buffer, timeout: left), count > 0 else { break }
            discarded += count
        }
        closeNow()
    }
}
