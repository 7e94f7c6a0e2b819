import NativeTLS
import SystemCalls

/// A connected, non-blocking TCP connection of the native transport, plain or with a TLS layer.
///
/// One request's I/O thread uses it at a time (or it sits idle in the
/// connection pool); any thread may shut it down to abort that request, and
/// the owner finally closes it (``SocketDescriptor`` keeps the two from
/// racing). The system calls themselves are the shared ``POSIXSocket`` ones;
/// this type gives their failures the transport's meaning
/// (``HTTPTransportError``), naming the server but never the URL.
///
/// This is the one place where the native client's bytes meet the socket: ``send(_:)``,
/// ``receive(into:)``, ``flush()`` and ``wait(readable:writable:limit:isCancelled:)`` mean
/// the same with or without TLS, which is a layer (a ``TLSEngine``) that the connection may
/// have, encrypting what is sent and decrypting what is received, so an exchange never
/// asks which it has.
///
/// All I/O methods may block up to their time-out: call them only on the
/// transport's own threads, never on Swift's cooperative pool.
final class NativeSocket: Sendable {
    private let descriptor: SocketDescriptor
    /// The pool key of the server this socket is connected to: `host:port`, or
    /// `https://host:port` once it carries TLS.
    let key: String
    /// The TLS layer of this connection (after ``startTLS(context:host:port:deadline:)``), and its buffer.
    private let layer = NativeTLSLayer()

    var fd: Int32 { descriptor.fd }

    private init(fd: Int32, key: String) {
        self.descriptor = SocketDescriptor(fd: fd)
        self.key = key
    }

    /// Shuts both directions down unless the socket is closed; callable from any thread, idempotent.
    ///
    /// A thread blocked in `poll`, `recv`, `sendmsg` or `sendfile` on this socket returns at once.
    func shutdown() {
        descriptor.shutdown()
    }

    /// Closes the descriptor now, or when a shutdown in progress ends. Idempotent.
    ///
    /// Only the owner calls it (never concurrently with its own I/O), so the TLS state goes too.
    func close() {
        layer.close()
        descriptor.close()
    }

    /// Closes a connection that is done but healthy (its response was read completely): a
    /// TLS one sends its close_notify first, without which OpenSSL marks the session as not
    /// resumable, and the next connection to the server would need a full handshake.
    /// Never waits: the alert goes only if the socket takes it at once (it nearly always
    /// does, as both sides are done).
    func closeGracefully() {
        if let engine = layer.engine, (try? engine.shutdown()) != nil {
            _ = try? flush()
        }
        close()
    }

    // MARK: - Connecting

    /// Resolves `host`, then connects to each address in turn until one answers by `deadline`.
    ///
    /// - Parameters:
    ///   - host: A host name or IP address (without brackets).
    ///   - port: The TCP port.
    ///   - key: The pool key the connection will have (`https://host:port` for one that will carry TLS).
    ///   - deadline: When every attempt together must be over.
    ///   - sendBufferSize: `SO_SNDBUF` to ask for (best effort), or nil to keep the system's auto-tuning.
    ///   - register: Called with each socket before it blocks; returning false (the request was
    ///     cancelled) abandons the attempt.
    /// - Returns: The connected socket.
    /// - Throws: ``HTTPTransportError/Kind/connectFailed``, or ``HTTPTransportError/Kind/other`` when cancelled.
    static func connect(
        host: String,
        port: Int,
        key: String,
        deadline: ContinuousClock.Instant,
        sendBufferSize: Int?,
        register: (NativeSocket) -> Bool
    ) throws(HTTPTransportError) -> NativeSocket {
        let addresses: [POSIXSocket.Address]
        do {
            addresses = try POSIXSocket.resolve(host: host, port: port)
        } catch {
            throw HTTPTransportError(kind: .connectFailed, message: "Cannot resolve \(host) (\(error.reason)).")
        }
        var lastError = Errno.connectionRefused
        for address in addresses {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else {
                lastError = Errno.timedOut
                break
            }
            let fd: Int32
            do {
                fd = try POSIXSocket.makeSocket(for: address)
            } catch {
                if case .system(let code) = error { lastError = code }
                continue
            }
            let socket = NativeSocket(fd: fd, key: key)
            // Non-blocking, close-on-exec, no Nagle delay, no SIGPIPE (Darwin), a large send buffer.
            POSIXSocket.setCloseOnExec(fd)
            POSIXSocket.setNonBlocking(fd, true)
            POSIXSocket.setNoDelay(fd)
            POSIXSocket.setBufferSizes(fd, receive: nil, send: sendBufferSize)
            POSIXSocket.setNoSigPipe(fd)
            guard register(socket) else {
                socket.close()
                throw Self.cancelledError
            }
            let code = POSIXSocket.connect(fd, to: address, timeout: left)
            if code == 0 { return socket }
            socket.close()
            lastError = code
        }
        throw HTTPTransportError(
            kind: .connectFailed, message: "Cannot connect to \(key) (\(SocketError.describe(lastError))).")
    }

    // MARK: - Waiting

    /// Waits until the socket is ready for the events asked, within `limit`.
    ///
    /// The wait is cut into slices of at most half a second so a cancellation
    /// is noticed even if the shutdown that normally wakes it raced with it.
    ///
    /// - Throws: ``HTTPTransportError/Kind/timedOut`` when nothing happened
    ///   within the idle time-out or the deadline passed; the cancellation
    ///   marker when `isCancelled` says so.
    func wait(
        readable: Bool,
        writable: Bool,
        limit: NativeWaitLimit,
        isCancelled: () -> Bool
    ) throws(HTTPTransportError) -> POSIXSocket.Readiness {
        let (end, isDeadline) = limit.end()
        while true {
            if isCancelled() { throw Self.cancelledError }
            let left = ContinuousClock.now.duration(to: end)
            guard left > .zero else { throw limit.expired(key, isDeadline: isDeadline) }
            do {
                let slice = min(.milliseconds(500), left)
                if let ready = try POSIXSocket.poll(fd, readable: readable, writable: writable, timeout: slice) {
                    return ready
                }
            } catch {
                throw lost(error)
            }
        }
    }

    /// Whether an idle pooled connection is still usable: nothing to read (no
    /// EOF, no stray bytes) and no error pending. Never blocks.
    var isIdleAndOpen: Bool { POSIXSocket.isIdleAndOpen(fd) }

    // MARK: - I/O

    /// Whether a file region can go to the socket with `sendfile(2)`: not through TLS, which
    /// the kernel does not encrypt here.
    var canSendFile: Bool { layer.engine == nil }

    /// Whether bytes the server sent are received but not yet returned by ``receive(into:)``
    /// (over TLS: records received into the TLS layer but not yet decrypted), which a `poll`
    /// of the socket cannot see.
    var hasBufferedInput: Bool { layer.engine?.hasBufferedInput ?? false }

    /// The connection's buffer for copies of file regions and for large reads, allocated on first use.
    var copyBuffer: UnsafeMutableRawBufferPointer { layer.copyBuffer() }

    /// Sends from `bytes` (gathered) what fits without blocking; over TLS, encrypts as many
    /// records as fit in the layer's output, and sends the output once it is full, as far as the
    /// socket takes it, so that each `sendmsg` moves up to all of it (a megabyte costs the kernel
    /// far less in one call than in four); ``flush()`` sends what is left. The caller then
    /// advances `bytes` by what was taken.
    ///
    /// - Returns: The bytes taken, or nil when the socket cannot take more yet.
    func send(_ bytes: POSIXSocket.GatheredBytes) throws(HTTPTransportError) -> Int? {
        guard let engine = layer.engine else {
            do {
                return try POSIXSocket.sendAvailable(fd, bytes)
            } catch {
                throw lost(error)
            }
        }
        var taken = 0
        gathering: for range in bytes.nextRanges {
            var offset = 0
            while offset < range.count, let base = range.baseAddress {
                let bytes = UnsafeRawBufferPointer(start: base + offset, count: range.count - offset)
                guard case .done(let count) = try encrypt(bytes, engine), count > 0 else {
                    // The output is full: it goes first. (An empty output with no room for a
                    // record cannot happen; if it did, this stops instead of spinning.)
                    guard engine.hasOutbound, try flush() else { break gathering }
                    continue
                }
                offset += count
                taken += count
            }
        }
        // Nothing taken: the socket took too little of the output for a record to fit; wait for room.
        return taken > 0 ? taken : nil
    }

    /// Sends what waits in the TLS layer's output, as far as the socket takes it without blocking.
    ///
    /// - Returns: Whether nothing waits any more (always, for a plain connection).
    func flush() throws(HTTPTransportError) -> Bool {
        guard let engine = layer.engine else { return true }
        while engine.hasOutbound {
            let sent: Int?
            do {
                sent = try POSIXSocket.sendAvailable(fd, engine.outbound)
            } catch {
                throw lost(error)
            }
            guard let sent else { return false }
            engine.didSend(sent)
        }
        return true
    }

    /// Receives what is there without blocking; over TLS, decrypts every whole record received.
    ///
    /// - Returns: The bytes read (0 when the server closed its side), or nil when nothing is there yet.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPTransportError) -> Int? {
        guard let engine = layer.engine else {
            do {
                return try POSIXSocket.receiveAvailable(fd, into: buffer)
            } catch {
                throw lost(error)
            }
        }
        while true {
            let progress: TLSEngine.Progress
            do {
                progress = try engine.read(into: buffer)
            } catch  where error.kind == .peerClosed {
                // Without close_notify: the HTTP framing, not TLS, tells whether the answer was whole.
                return 0
            } catch {
                _ = try? flush()  // the alert, if the socket takes it at once
                throw streamFailure(error)
            }
            switch progress {
            case .done(let count): return count
            case .closed: return 0
            case .needsOutputSent:
                guard try flush() else { return nil }
            case .needsInput:
                // Records the engine owes the server (a key update's answer) go first, as far as they fit.
                _ = try flush()
                guard try receiveCiphertext(engine) else { return nil }
            }
        }
    }

    /// Receives ciphertext into the TLS layer without blocking.
    ///
    /// - Returns: False when nothing is there yet.
    private func receiveCiphertext(_ engine: TLSEngine) throws(HTTPTransportError) -> Bool {
        let count: Int?
        do {
            count = try POSIXSocket.receiveAvailable(fd, into: engine.inboundSpace)
        } catch {
            throw lost(error)
        }
        guard let count else { return false }
        if count == 0 { engine.receivedEnd() } else { engine.didReceive(count) }
        return true
    }

    /// Encrypts `bytes` into the TLS layer's output.
    private func encrypt(
        _ bytes: UnsafeRawBufferPointer, _ engine: TLSEngine
    ) throws(HTTPTransportError)
        -> TLSEngine.Progress
    {
        do {
            return try engine.write(bytes)
        } catch {
            throw streamFailure(error)
        }
    }

    #if os(Linux)
    /// Sends up to `count` bytes of `file` from `offset` with `sendfile(2)`, without blocking
    /// (only when ``canSendFile``).
    ///
    /// SIGPIPE cannot be suppressed per call here; the transport's threads block it instead.
    func sendFile(
        _ file: Int32, offset: Int64, count: Int
    ) throws(HTTPTransportError) -> POSIXSocket.SendFileResult {
        do {
            return try POSIXSocket.sendFile(fd, from: file, offset: offset, count: count)
        } catch {
            throw lost(error)
        }
    }
    #endif

    // MARK: - TLS

    /// Runs the TLS handshake as a client of `host` (SNI and verification) before any request
    /// byte is sent: the handshake must be over by `deadline`, however the server paces its
    /// bytes, and a shutdown wakes it.
    ///
    /// - Throws: ``HTTPTransportError/Kind/tlsFailure`` (permanent) when the server cannot be
    ///   verified or speaks no usable TLS; ``HTTPTransportError/Kind/timedOut`` or
    ///   ``HTTPTransportError/Kind/connectionLost`` for a stalled or broken connection.
    func startTLS(
        context: TLSContext, host: String, port: Int, deadline: ContinuousClock.Instant
    ) throws(HTTPTransportError) {
        let engine: TLSEngine
        do {
            engine = try TLSEngine(client: context, host: host, port: port)
        } catch {
            throw handshakeFailure(error)
        }
        layer.engine = engine
        // One fixed end: no idle time-out that a dripping server could restart.
        let limit = NativeWaitLimit(idle: ContinuousClock.now.duration(to: deadline), deadline: deadline)
        do throws(HTTPTransportError) {
            while true {
                let progress: TLSEngine.Progress
                do {
                    progress = try engine.handshake()
                } catch {
                    // The alert that tells the server why, if the socket takes it at once.
                    _ = try? flush()
                    throw handshakeFailure(error)
                }
                // Each flight goes out whole before anything else, the last one included.
                while try !flush() {
                    _ = try wait(readable: false, writable: true, limit: limit, isCancelled: { false })
                }
                if progress == .done(0) { return }
                if progress == .needsInput, try !receiveCiphertext(engine) {
                    _ = try wait(readable: true, writable: false, limit: limit, isCancelled: { false })
                }
            }
        } catch {
            layer.close()
            if error.kind == .timedOut {
                throw HTTPTransportError(
                    kind: .timedOut,
                    message:
                        "The TLS handshake with \(key) was not over by its deadline (however steadily bytes moved).")
            }
            throw error
        }
    }

    /// The transport's failure for a TLS failure after the handshake: a stream that broke TLS
    /// (``HTTPTransportError/Kind/corruptStream``), or else a lost connection.
    private func streamFailure(_ error: TLSError) -> HTTPTransportError {
        switch error.kind {
        case .corruptStream:
            return HTTPTransportError(
                kind: .corruptStream, message: "The TLS stream from \(key) is corrupt (\(error.message)).",
                underlying: error)
        default:
            return HTTPTransportError(
                kind: .connectionLost, message: "The TLS connection to \(key) broke (\(error.message)).")
        }
    }

    private func handshakeFailure(_ error: TLSError) -> HTTPTransportError {
        switch error.kind {
        case .peerClosed, .io:
            return HTTPTransportError(
                kind: .connectionLost,
                message: "The connection to \(key) broke during the TLS handshake (\(error.message)).")
        default:
            let cause =
                if error.kind.isCertificateFailure {
                    switch error.kind {
                    case .untrustedIssuer: "its certificate's issuer is not trusted"
                    case .nameMismatch: "its certificate is for another name"
                    case .expired: "its certificate has expired"
                    case .notYetValid: "its certificate is not valid yet"
                    default: "its certificate was rejected"
                    }
                } else if error.kind == .plainHTTPServer {
                    "it is a plain HTTP server behind an https:// address"
                } else if error.kind == .protocolVersion {
                    "it shares no TLS version of 1.2 or newer, or no cipher suite, within what the host's OpenSSL configuration allows"
                } else {
                    "the TLS handshake failed"
                }
            return HTTPTransportError(
                kind: .tlsFailure,
                message: "Cannot talk to \(key) over TLS: \(cause) (\(error.message)).",
                underlying: error,
                permanent: true)
        }
    }

    // MARK: - Errors

    /// Marks a request abandoned because it was cancelled; the transport reports `CancellationError` instead.
    static let cancelledError = HTTPTransportError(kind: .other, message: "The request was cancelled.")

    /// A broken connection, naming the system error.
    private func lost(_ error: SocketError) -> HTTPTransportError {
        let reason =
            switch error {
            case .system(let code): SocketError.describe(code)
            case .timedOut: "timed out"
            case .invalidAddress: "invalid address"
            }
        return HTTPTransportError(kind: .connectionLost, message: "The connection to \(key) broke (\(reason)).")
    }
}
