internal import CCloudStorage
internal import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// TLS over an already-connected socket: a byte stream layer under an HTTP/1.1 exchange.
///
/// Every method that touches the socket may **block** and must run on a dedicated I/O
/// thread, never on Swift's cooperative pool. A stream is not thread-safe: use it from one
/// thread at a time (handing it from thread to thread is fine). It does not own the file
/// descriptor: ``close()`` releases the TLS state and the caller closes the socket.
///
/// How long a call may take depends on the socket:
/// - **Non-blocking** (what a client that must bound its calls uses): whenever OpenSSL
///   cannot go on, the call waits in `poll(2)` for the socket, until the `deadline` it was
///   given (none: as long as it takes). The deadline bounds the whole call, however the
///   peer paces its bytes: a handshake or a record dripped one byte at a time ends there
///   with ``TLSError/Kind-swift.struct/timedOut``.
/// - **Blocking**: the socket's `SO_RCVTIMEO`/`SO_SNDTIMEO`, if set, bound each system call
///   (an expiry throws ``TLSError/Kind-swift.struct/timedOut``), and every byte that arrives
///   starts that time again; a `deadline` is not enforced.
///
/// Either way a `shutdown(2)` of the socket from another thread ends a blocked call.
/// Writing to a peer that has gone raises no `SIGPIPE`: the shim blocks it around each
/// OpenSSL call, and the failure is an ``TLSError/Kind-swift.struct/io`` error with `EPIPE`.
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
    private enum State {
        case ready, established, closedByPeer, failed, closed
    }

    private let context: TLSContext
    private var connection: OpaquePointer?
    /// The socket, for waiting on it (the caller owns it).
    private let socket: Int32
    private let isServer: Bool
    /// `host:port` for messages and the session cache (clients only).
    private let peer: String
    private var state = State.ready
    private var offeredSession = false

    /// Creates the client side of a connection; nothing is sent until ``handshake()``.
    ///
    /// - Parameters:
    ///   - context: A client ``TLSContext``.
    ///   - socket: A connected, blocking socket; the caller keeps ownership.
    ///   - host: The server's DNS name or IP address (IPv6 with or without brackets); it is
    ///     verified against the certificate and, for names, sent as SNI.
    ///   - port: The server's port, which keys the session cache.
    /// - Throws: ``TLSError`` when the context is not a client one or OpenSSL fails.
    public init(client context: TLSContext, socket: Int32, host: String, port: Int) throws(TLSError) {
        guard context.role == .client else {
            throw TLSError(.invalidConfiguration, "a client stream needs a client context")
        }
        self.context = context
        self.socket = socket
        self.isServer = false
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.peer = bare.contains(":") ? "[\(bare)]:\(port)" : "\(bare):\(port)"
        var result = cs_tls_io_result()
        guard let connection = cs_tls_conn_new(context.pointer, socket, &result) else {
            throw TLSError(.other, "cannot create a TLS connection: \(result.message)")
        }
        self.connection = connection
        guard !bare.isEmpty, !bare.utf8.contains(0),
            cs_tls_conn_set_peer_name(connection, bare, Self.isIPAddress(bare) ? 1 : 0) == 1
        else {
            throw TLSError(.invalidConfiguration, "cannot verify against the host name \"\(host)\"")
        }
        if let session = context.cachedSession(for: peer) {
            offeredSession = cs_tls_conn_set_session(connection, session.pointer) == 1
        }
    }

    /// Creates the server side of an accepted connection; nothing is read until ``handshake()``.
    ///
    /// - Parameters:
    ///   - context: A server ``TLSContext``.
    ///   - socket: An accepted, blocking socket; the caller keeps ownership.
    /// - Throws: ``TLSError`` when the context is not a server one or OpenSSL fails.
    public init(server context: TLSContext, socket: Int32) throws(TLSError) {
        guard context.role == .server else {
            throw TLSError(.invalidConfiguration, "a server stream needs a server context")
        }
        self.context = context
        self.socket = socket
        self.isServer = true
        self.peer = "client"
        var result = cs_tls_io_result()
        guard let connection = cs_tls_conn_new(context.pointer, socket, &result) else {
            throw TLSError(.other, "cannot create a TLS connection: \(result.message)")
        }
        self.connection = connection
    }

    deinit {
        cs_tls_conn_free(connection)
    }

    /// Whether the handshake resumed an earlier session (saving a full handshake); `false`
    /// before a successful handshake.
    public private(set) var sessionWasReused = false

    /// The ALPN protocol both sides agreed on (`http/1.1`), or `nil` when none was or
    /// before a successful handshake.
    public private(set) var negotiatedApplicationProtocol: String?

    /// The negotiated protocol version, such as `"TLS 1.3"`, or `nil` before a successful handshake.
    public private(set) var negotiatedProtocolVersion: String?

    /// Records what the handshake negotiated, so it stays readable after ``close()``.
    private func recordNegotiation(_ connection: OpaquePointer) {
        sessionWasReused = cs_tls_conn_session_reused(connection) == 1
        var buffer = [CChar](repeating: 0, count: 256)
        buffer.withUnsafeMutableBufferPointer { cs_tls_conn_alpn(connection, $0.baseAddress, $0.count) }
        let name = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        negotiatedApplicationProtocol = name.isEmpty ? nil : name
        negotiatedProtocolVersion =
            switch cs_tls_conn_version(connection) {
            case CS_TLS_VERSION_1_3: "TLS 1.3"
            case CS_TLS_VERSION_1_2: "TLS 1.2"
            case CS_TLS_VERSION_1_1: "TLS 1.1"
            default: nil
            }
    }

    /// Runs the TLS handshake. Blocking.
    ///
    /// A client verifies the server's certificate before sending anything else; on failure
    /// no application byte has been sent and the stream refuses any further I/O.
    ///
    /// - Parameter deadline: On a non-blocking socket, when the whole handshake must be done
    ///   (nil: no limit); see the type's discussion.
    /// - Throws: ``TLSError``: a certificate kind (``TLSError/Kind-swift.struct/untrustedIssuer``,
    ///   ``TLSError/Kind-swift.struct/nameMismatch``, ``TLSError/Kind-swift.struct/expired``, …),
    ///   ``TLSError/Kind-swift.struct/protocolVersion``,
    ///   ``TLSError/Kind-swift.struct/plainHTTPServer``, ``TLSError/Kind-swift.struct/peerClosed``,
    ///   ``TLSError/Kind-swift.struct/timedOut`` or ``TLSError/Kind-swift.struct/io``.
    public func handshake(deadline: ContinuousClock.Instant? = nil) throws(TLSError) {
        let connection = try usable(allowing: .ready)
        var result = cs_tls_io_result()
        while true {
            cs_tls_conn_handshake(connection, isServer ? 1 : 0, &result)
            if result.ok == 1 { break }
            if try shouldRetry(result, until: deadline) { continue }
            state = .failed
            if offeredSession { context.forgetSession(for: peer) }
            throw handshakeError(result, connection)
        }
        state = .established
        recordNegotiation(connection)
        rememberSession()
    }

    /// Reads decrypted bytes into `buffer`, returning as soon as some arrive. Blocking.
    ///
    /// - Parameters:
    ///   - buffer: Where to put the bytes; must not be empty.
    ///   - deadline: On a non-blocking socket, when the read gives up waiting for the rest
    ///     of a record (nil: no limit); see the type's discussion.
    /// - Returns: The number of bytes read, or 0 once the peer closed the stream cleanly
    ///   with a TLS close_notify (and on every read after that).
    /// - Throws: ``TLSError/Kind-swift.struct/peerClosed`` when the connection ended without
    ///   close_notify (the data may be truncated); ``TLSError/Kind-swift.struct/corruptStream``
    ///   when what arrived is no valid TLS record of this connection;
    ///   ``TLSError/Kind-swift.struct/timedOut``, ``TLSError/Kind-swift.struct/io`` or another
    ///   kind for other failures.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant? = nil
    ) throws(TLSError) -> Int {
        precondition(!buffer.isEmpty, "TLSStream.read needs room for at least one byte")
        if state == .closedByPeer { return 0 }
        let connection = try usable(allowing: .established)
        var result = cs_tls_io_result()
        while true {
            cs_tls_conn_read(connection, buffer.baseAddress, buffer.count, &result)
            if result.ok == 1 { return result.count }
            if result.ssl_error == CS_TLS_ERROR_ZERO_RETURN {
                state = .closedByPeer
                rememberSession()
                return 0
            }
            if try shouldRetry(result, until: deadline) { continue }
            state = .failed
            throw ioError(result, during: "reading")
        }
    }

    /// Whether bytes the peer sent are already read from the socket (OpenSSL reads ahead)
    /// but not yet returned by ``read(into:)``: a `poll` of the socket cannot see them.
    /// `false` once the stream is closed.
    public var hasBufferedInput: Bool {
        guard let connection else { return false }
        return cs_tls_conn_has_buffered_input(connection) == 1
    }

    /// Writes all of `bytes`, encrypted. Blocking until every byte is handed to the socket.
    ///
    /// Large buffers go to OpenSSL whole; it cuts them into records of up to 16 KiB.
    ///
    /// - Parameters:
    ///   - bytes: The bytes to send.
    ///   - deadline: On a non-blocking socket, when the write gives up waiting for room in
    ///     the socket (nil: no limit); see the type's discussion.
    /// - Throws: ``TLSError``: ``TLSError/Kind-swift.struct/io`` (with `EPIPE` or
    ///   `ECONNRESET` when the peer went away), ``TLSError/Kind-swift.struct/timedOut``, or
    ///   ``TLSError/Kind-swift.struct/other`` before a successful handshake.
    public func write(_ bytes: UnsafeRawBufferPointer, deadline: ContinuousClock.Instant? = nil) throws(TLSError) {
        let connection = try usable(allowing: .established, .closedByPeer)
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        var result = cs_tls_io_result()
        while offset < bytes.count {
            // A retry after WANT_READ/WANT_WRITE must repeat the same arguments, which this does.
            cs_tls_conn_write(connection, base + offset, bytes.count - offset, &result)
            if result.ok == 1 {
                offset += result.count
                continue
            }
            if try shouldRetry(result, until: deadline) { continue }
            state = .failed
            throw ioError(result, during: "writing")
        }
        try flush(connection, until: deadline, during: "writing")
    }

    /// Sends a TLS close_notify (one-way: it does not wait for the peer's). Blocking.
    ///
    /// Clients also keep the session for resumption here, since TLS 1.3 servers send
    /// session tickets after the handshake.
    ///
    /// - Parameter deadline: On a non-blocking socket, when to give up waiting for room in
    ///   the socket (nil: no limit; `.now`: send only if it fits at once).
    /// - Throws: ``TLSError`` when the alert cannot be sent.
    public func shutdown(deadline: ContinuousClock.Instant? = nil) throws(TLSError) {
        let connection = try usable(allowing: .established, .closedByPeer)
        rememberSession()
        var result = cs_tls_io_result()
        while true {
            cs_tls_conn_shutdown(connection, &result)
            if result.ok == 1 { break }
            if try shouldRetry(result, until: deadline) { continue }
            state = .failed
            throw ioError(result, during: "closing")
        }
        try flush(connection, until: deadline, during: "closing")
    }

    /// Releases the TLS state without sending anything; the caller then closes the socket.
    /// Idempotent; any later call throws.
    public func close() {
        if state == .established || state == .closedByPeer { rememberSession() }
        state = .closed
        cs_tls_conn_free(connection)
        connection = nil
    }

    // MARK: - Private

    private func usable(allowing states: State...) throws(TLSError) -> OpaquePointer {
        guard let connection, states.contains(state) else {
            let why =
                switch state {
                case .ready: "the handshake has not completed"
                case .failed: "an earlier TLS operation failed"
                case .closed: "the stream is closed"
                case .established, .closedByPeer: "the handshake already ran"
                }
            throw TLSError(.other, "TLS stream to \(peer) unusable: \(why)")
        }
        return connection
    }

    /// Writes out the records a write or shutdown left in the connection's write buffer.
    private func flush(
        _ connection: OpaquePointer, until deadline: ContinuousClock.Instant?, during operation: String
    ) throws(TLSError) {
        var result = cs_tls_io_result()
        while true {
            cs_tls_conn_flush(connection, &result)
            if result.ok == 1 { return }
            if try shouldRetry(result, until: deadline) { continue }
            state = .failed
            throw ioError(result, during: operation)
        }
    }

    /// Whether a call that OpenSSL could not finish should be repeated: true after waiting
    /// for the socket it wants (WANT_READ/WANT_WRITE), false for any other failure.
    ///
    /// `EAGAIN` on a blocking socket means its own time-out expired; on a non-blocking one,
    /// that the socket is not ready yet: the wait then lasts until `deadline`, whatever
    /// arrives meanwhile, so a peer cannot stretch the call by pacing its bytes.
    private func shouldRetry(
        _ result: cs_tls_io_result, until deadline: ContinuousClock.Instant?
    ) throws(TLSError) -> Bool {
        let reading = result.ssl_error == CS_TLS_ERROR_WANT_READ
        guard reading || result.ssl_error == CS_TLS_ERROR_WANT_WRITE else { return false }
        // Anything else (EINTR) is simply tried again.
        guard result.sys_errno == EAGAIN || result.sys_errno == EWOULDBLOCK else { return true }
        guard POSIXSocket.isNonBlocking(socket) else {
            state = .failed
            throw TLSError(.timedOut, "the socket time-out expired talking to \(peer)", systemError: result.sys_errno)
        }
        while true {
            // Slices only so that "no deadline" fits poll's time-out; a shutdown ends any wait.
            var slice = Duration.seconds(3600)
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else {
                    state = .failed
                    throw TLSError(.timedOut, "the deadline passed waiting for \(peer)", systemError: ETIMEDOUT)
                }
                slice = min(slice, left)
            }
            do {
                // Ready, hung up or failed: the repeated call finds out which.
                if try POSIXSocket.poll(socket, readable: reading, writable: !reading, timeout: slice) != nil {
                    return true
                }
            } catch {
                state = .failed
                let code: Int32 = if case .system(let code) = error { code } else { EINVAL }
                throw TLSError(.io, "waiting for \(peer) failed: \(String(cString: strerror(code)))", systemError: code)
            }
        }
    }

    private func rememberSession() {
        guard !isServer, let connection, let session = cs_tls_conn_copy_resumable_session(connection) else { return }
        context.cacheSession(TLSSession(session), for: peer)
    }

    private func handshakeError(_ result: cs_tls_io_result, _ connection: OpaquePointer) -> TLSError {
        if !isServer, cs_tls_conn_peer_spoke_plain_http(connection) == 1 {
            return TLSError(
                .plainHTTPServer,
                "\(peer) answered the TLS handshake with plain HTTP: the address should be http://, not https://")
        }
        let verification = cs_tls_conn_verify_result(connection)
        if !isServer, verification != 0 {
            let reason = String(cString: cs_tls_verify_error_string(verification))
            let kind = Self.kind(ofVerificationResult: verification)
            return TLSError(kind, "certificate of \(peer) rejected: \(reason) (X509 error \(verification))")
        }
        let code = result.error_code
        if !isServer, result.ssl_error == CS_TLS_ERROR_SSL,
            Self.notTLSReasons.contains(where: { cs_tls_error_has_reason(code, $0) == 1 })
        {
            return TLSError(
                .plainHTTPServer,
                "\(peer) did not answer the TLS handshake in TLS (\(result.message)): most likely a plain server,"
                    + " and the address should be http://, not https://")
        }
        if result.ssl_error == CS_TLS_ERROR_SSL,
            Self.protocolReasons.contains(where: { cs_tls_error_has_reason(code, $0) == 1 })
        {
            return TLSError(
                .protocolVersion,
                "no common TLS version or cipher with \(peer) (TLS 1.2 or newer is required): "
                    + result.message)
        }
        let error = ioError(result, during: "the handshake", afterHandshake: false)
        if error.kind == .other {
            return TLSError(.handshakeFailed, "TLS handshake with \(peer) failed: \(result.message)")
        }
        return error
    }

    /// The error of a failed call. After the handshake, a failure of TLS itself (not of the
    /// socket, not the peer's silent close) is ``TLSError/Kind-swift.struct/corruptStream``.
    private func ioError(_ result: cs_tls_io_result, during operation: String, afterHandshake: Bool = true) -> TLSError
    {
        let code = result.error_code
        switch result.ssl_error {
        case CS_TLS_ERROR_SYSCALL where result.sys_errno == 0 && code == 0,
            CS_TLS_ERROR_ZERO_RETURN:
            return TLSError(.peerClosed, "\(peer) closed the connection during \(operation)")
        case CS_TLS_ERROR_SSL where cs_tls_error_has_reason(code, Self.unexpectedEOFReason) == 1:
            return TLSError(.peerClosed, "\(peer) closed the connection without TLS close_notify during \(operation)")
        case CS_TLS_ERROR_SYSCALL where result.sys_errno != 0:
            let text = String(cString: strerror(result.sys_errno))
            return TLSError(.io, "\(operation) with \(peer) failed: \(text)", systemError: result.sys_errno)
        case CS_TLS_ERROR_SSL where afterHandshake:
            let detail = result.message.isEmpty ? "OpenSSL error \(code)" : result.message
            return TLSError(.corruptStream, "\(peer) broke the TLS stream during \(operation): \(detail)")
        default:
            let detail = result.message.isEmpty ? "OpenSSL error \(result.ssl_error)" : result.message
            return TLSError(.other, "\(operation) with \(peer) failed: \(detail)")
        }
    }

    /// `SSL_R_UNEXPECTED_EOF_WHILE_READING`: the peer closed without close_notify.
    private static let unexpectedEOFReason: Int32 = 294
    /// OpenSSL reasons that mean the peers share no protocol version or cipher:
    /// no protocols available, unsupported protocol, unsupported SSL version,
    /// version too low, alert "protocol version", no shared cipher, alert "handshake failure".
    private static let protocolReasons: [Int32] = [191, 258, 259, 396, 1070, 193, 1040]
    /// OpenSSL reasons for a first answer that is no TLS record at all (clear text that does
    /// not start with `HTTP/`): wrong version number, packet length too long.
    private static let notTLSReasons: [Int32] = [267, 198]

    private static func kind(ofVerificationResult result: Int) -> TLSError.Kind {
        switch result {
        // Issuer not found or not trusted: no chain to a trusted root.
        case 2, 18, 19, 20, 21, 24, 27:
            return .untrustedIssuer
        case 10, 12:
            return .expired
        case 9, 11:
            return .notYetValid
        // Host name, e-mail, IP address mismatch.
        case 62, 63, 64:
            return .nameMismatch
        default:
            return .certificateRejected
        }
    }

    private static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
