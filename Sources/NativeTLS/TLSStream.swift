import SystemCalls

/// A ``TLSEngine`` driven over a connected socket: a blocking byte stream for servers and
/// tools that give each connection its own thread (the emulator, test servers).
///
/// Every method that touches the socket may **block** and must run on a dedicated thread,
/// never on Swift's cooperative pool. A stream is not thread-safe: use it from one thread at
/// a time. It does not own the file descriptor: ``close()`` releases the TLS state and the
/// caller closes the socket.
///
/// How long a call may take depends on the socket:
/// - **Non-blocking**: whenever the socket is not ready, the call waits in `poll(2)` until
///   the `deadline` it was given (none: as long as it takes). The deadline bounds the whole
///   call, however the peer paces its bytes: a handshake or a record dripped one byte at a
///   time ends there with ``TLSError/Kind-swift.struct/timedOut``.
/// - **Blocking**: the socket's `SO_RCVTIMEO`/`SO_SNDTIMEO`, if set, bound each system call
///   (an expiry throws ``TLSError/Kind-swift.struct/timedOut``); a `deadline` is not enforced.
///
/// Either way a `shutdown(2)` of the socket from another thread ends a blocked call. Writing
/// to a peer that has gone raises no `SIGPIPE` (`MSG_NOSIGNAL`): the failure is an
/// ``TLSError/Kind-swift.struct/io`` error with `EPIPE`.
///
/// ```swift
/// let stream = try TLSStream(client: context, socket: fd, host: "example.com", port: 443)
/// try stream.handshake(deadline: .now + .seconds(30))
/// try request.withUnsafeBytes { try stream.write($0) }
/// let count = try stream.read(into: buffer)  // 0: the server closed cleanly
/// try stream.shutdown()
/// stream.close()
/// ```
public final class TLSStream {
    private var engine: TLSEngine?
    /// The socket (the caller owns it).
    private let socket: Int32
    private let peer: String
    /// Whether an operation failed or the stream was closed: every later call throws.
    private var unusable: String?

    /// Creates the client side of a connection; nothing is sent until ``handshake(deadline:)``.
    ///
    /// - Parameters:
    ///   - context: A client ``TLSContext``.
    ///   - socket: A connected socket; the caller keeps ownership.
    ///   - host: The server's DNS name or IP address; verified against the certificate.
    ///   - port: The server's port, which keys the session cache.
    /// - Throws: ``TLSError`` when the context is not a client one or OpenSSL fails.
    public init(client context: TLSContext, socket: Int32, host: String, port: Int) throws(TLSError) {
        let engine = try TLSEngine(client: context, host: host, port: port)
        self.engine = engine
        self.socket = socket
        self.peer = engine.peer
    }

    /// Creates the server side of an accepted connection; nothing is read until ``handshake(deadline:)``.
    ///
    /// - Parameters:
    ///   - context: A server ``TLSContext``.
    ///   - socket: An accepted socket; the caller keeps ownership.
    /// - Throws: ``TLSError`` when the context is not a server one or OpenSSL fails.
    public init(server context: TLSContext, socket: Int32) throws(TLSError) {
        let engine = try TLSEngine(server: context)
        self.engine = engine
        self.socket = socket
        self.peer = engine.peer
    }

    /// Whether the handshake resumed an earlier session; `false` before a successful handshake.
    public var sessionWasReused: Bool { negotiated.reused }

    /// The ALPN protocol both sides agreed on (`http/1.1`), or `nil`.
    public var negotiatedApplicationProtocol: String? { negotiated.alpn }

    /// The negotiated protocol version, such as `"TLS 1.3"`, or `nil` before a successful handshake.
    public var negotiatedProtocolVersion: String? { negotiated.version }

    /// The negotiated cipher suite by OpenSSL's name, such as `"TLS_AES_256_GCM_SHA384"`, or
    /// `nil` before a successful handshake.
    public var negotiatedCipherSuite: String? { negotiated.cipher }

    /// What the handshake negotiated, kept readable after ``close()``.
    private var negotiated: (reused: Bool, alpn: String?, version: String?, cipher: String?) = (false, nil, nil, nil)

    /// Runs the TLS handshake. Blocking.
    ///
    /// - Parameter deadline: On a non-blocking socket, when the whole handshake must be done.
    /// - Throws: ``TLSError`` as ``TLSEngine/handshake()``, or ``TLSError/Kind-swift.struct/timedOut``
    ///   and ``TLSError/Kind-swift.struct/io`` from the socket.
    public func handshake(deadline: ContinuousClock.Instant? = nil) throws(TLSError) {
        let engine = try usable()
        _ = try drive(deadline) { () throws(TLSError) in try engine.handshake() }
        negotiated = (
            engine.sessionWasReused, engine.negotiatedApplicationProtocol, engine.negotiatedProtocolVersion,
            engine.negotiatedCipherSuite
        )
    }

    /// Reads decrypted bytes into `buffer`, returning as soon as some arrive. Blocking.
    ///
    /// - Returns: The number of bytes read, or 0 once the peer closed the stream with
    ///   close_notify (and on every read after that).
    /// - Throws: ``TLSError/Kind-swift.struct/peerClosed`` when the connection ended without
    ///   close_notify; ``TLSError/Kind-swift.struct/corruptStream`` for invalid records;
    ///   ``TLSError/Kind-swift.struct/timedOut`` or ``TLSError/Kind-swift.struct/io``.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant? = nil
    ) throws(TLSError) -> Int {
        let engine = try usable()
        return try drive(deadline) { () throws(TLSError) in try engine.read(into: buffer) }
    }

    /// Whether bytes the peer sent are already received but not yet returned by ``read(into:deadline:)``.
    public var hasBufferedInput: Bool { engine?.hasBufferedInput ?? false }

    /// Writes all of `bytes`, encrypted. Blocking until every byte is handed to the socket.
    ///
    /// - Throws: ``TLSError``: ``TLSError/Kind-swift.struct/io`` (with `EPIPE` or `ECONNRESET`
    ///   when the peer went away), ``TLSError/Kind-swift.struct/timedOut``, or
    ///   ``TLSError/Kind-swift.struct/other`` before a successful handshake.
    public func write(_ bytes: UnsafeRawBufferPointer, deadline: ContinuousClock.Instant? = nil) throws(TLSError) {
        let engine = try usable()
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            offset += try drive(deadline) { () throws(TLSError) in try engine.write(rest) }
        }
        try flush(engine, deadline)
    }

    /// Sends a TLS close_notify (one-way: it does not wait for the peer's). Blocking.
    ///
    /// - Parameter deadline: On a non-blocking socket, when to give up waiting for room.
    /// - Throws: ``TLSError`` when the alert cannot be sent.
    public func shutdown(deadline: ContinuousClock.Instant? = nil) throws(TLSError) {
        let engine = try usable()
        _ = try drive(deadline) { () throws(TLSError) in try engine.shutdown() }
        try flush(engine, deadline)
    }

    /// Releases the TLS state without sending anything; the caller then closes the socket.
    /// Idempotent; any later call throws.
    public func close() {
        unusable = "the stream is closed"
        engine = nil
    }

    // MARK: - Driving the engine over the socket

    private func usable() throws(TLSError) -> TLSEngine {
        guard let engine, unusable == nil else {
            throw TLSError(.other, "TLS stream to \(peer) unusable: \(unusable ?? "the stream is closed")")
        }
        return engine
    }

    /// Runs `step` until it is done, sending the engine's output and receiving its input
    /// meanwhile; any failure makes the stream unusable.
    private func drive(
        _ deadline: ContinuousClock.Instant?, _ step: () throws(TLSError) -> TLSEngine.Progress
    ) throws(TLSError) -> Int {
        let engine = try usable()
        do {
            while true {
                let progress = try step()
                switch progress {
                case .done(let count):
                    // What the step produced (a handshake's last flight) goes out now.
                    try flush(engine, deadline)
                    return count
                case .closed:
                    return 0
                case .needsOutputSent:
                    try flush(engine, deadline)
                case .needsInput:
                    try flush(engine, deadline)
                    try receive(engine, deadline)
                }
            }
        } catch {
            unusable = "an earlier TLS operation failed"
            // The alert that tells the peer why, if the engine made one and the socket takes it at once.
            if error.kind != .io && error.kind != .timedOut { try? flush(engine, .now) }
            throw error
        }
    }

    /// Sends everything in the engine's output.
    private func flush(_ engine: TLSEngine, _ deadline: ContinuousClock.Instant?) throws(TLSError) {
        while engine.hasOutbound {
            let sent: Int?
            do {
                sent = try POSIXSocket.sendAvailable(socket, engine.outbound)
            } catch {
                throw socketError(error, during: "writing")
            }
            if let sent {
                engine.didSend(sent)
            } else {
                try wait(readable: false, until: deadline)
            }
        }
    }

    /// Receives what the socket has (at least one byte, or its end) into the engine.
    private func receive(_ engine: TLSEngine, _ deadline: ContinuousClock.Instant?) throws(TLSError) {
        while true {
            let space = engine.inboundSpace
            guard !space.isEmpty else { return }
            let count: Int?
            do {
                count = try POSIXSocket.receiveAvailable(socket, into: space)
            } catch {
                throw socketError(error, during: "reading")
            }
            switch count {
            case .some(0):
                engine.receivedEnd()
                return
            case .some(let count):
                engine.didReceive(count)
                return
            case .none:
                try wait(readable: true, until: deadline)
            }
        }
    }

    /// Waits after `EAGAIN`: on a blocking socket its own time-out expired; on a non-blocking
    /// one it is not ready yet, and the wait lasts until `deadline` whatever arrives meanwhile.
    private func wait(readable: Bool, until deadline: ContinuousClock.Instant?) throws(TLSError) {
        guard POSIXSocket.isNonBlocking(socket) else {
            throw TLSError(.timedOut, "the socket time-out expired talking to \(peer)", systemError: Errno.wouldBlock)
        }
        while true {
            // Slices only so that "no deadline" fits poll's time-out; a shutdown ends any wait.
            var slice = Duration.seconds(3600)
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else {
                    throw TLSError(.timedOut, "the deadline passed waiting for \(peer)", systemError: Errno.timedOut)
                }
                slice = min(slice, left)
            }
            do {
                // Ready, hung up or failed: the next call finds out which.
                if try POSIXSocket.poll(socket, readable: readable, writable: !readable, timeout: slice) != nil {
                    return
                }
            } catch {
                throw socketError(error, during: "waiting")
            }
        }
    }

    private func socketError(_ error: SocketError, during operation: String) -> TLSError {
        let code: Int32 = if case .system(let code) = error { code } else { Errno.invalidArgument }
        return TLSError(.io, "\(operation) with \(peer) failed: \(Errno.describe(code))", systemError: code)
    }
}
