import SystemCalls

/// TLS as a byte transformer: ciphertext from the peer goes in and plaintext comes out,
/// plaintext goes in and ciphertext for the peer comes out. It never touches a socket.
///
/// OpenSSL works on one end of a pair of memory BIOs; the engine hands the other end's
/// buffers to its driver without copying: ``inboundSpace`` is where received ciphertext
/// goes (receive straight into it, then ``didReceive(_:)``), ``outbound`` is the
/// ciphertext waiting to be sent (send straight from it, then ``didSend(_:)``). Each call
/// says what it needs to go on (``Progress``); the driver moves bytes and calls again.
/// Reads, writes, waiting, time-outs and cancellation are all the driver's.
///
/// Not thread-safe: one thread at a time (handing it between threads is fine).
///
/// ```swift
/// let engine = try TLSEngine(client: context, host: "example.com", port: 443)
/// while true {
///     let progress = try engine.handshake()
///     // Every flight goes out whole, the last one too (`send` returns the bytes the socket took).
///     while engine.hasOutbound { engine.didSend(send(engine.outbound)) }
///     if progress == .done(0) { break }
///     if progress == .needsInput { engine.didReceive(receive(into: engine.inboundSpace)) }
/// }
/// ```
public final class TLSEngine {
    /// What a call achieved, or what it needs before it can go on.
    public enum Progress: Equatable, Sendable {
        /// The call is done: the handshake or shutdown finished, or this many bytes moved
        /// (read: plaintext produced; write: plaintext taken).
        case done(Int)
        /// It needs ciphertext from the peer: send ``TLSEngine/outbound`` first, then
        /// receive into ``TLSEngine/inboundSpace``.
        case needsInput
        /// It needs room for ciphertext: send ``TLSEngine/outbound`` first.
        case needsOutputSent
        /// The peer closed the stream with a TLS close_notify (reads only).
        case closed
    }

    private enum State {
        case handshaking, established, closedByPeer, failed
    }

    private let context: TLSContext
    private let ssl: OpaquePointer
    /// The driver's end of the BIO pair.
    private let network: OpaquePointer
    /// OpenSSL's end of the BIO pair (owned by `ssl`).
    private let sslEnd: OpaquePointer
    /// Whether this is the server side.
    public let isServer: Bool
    /// `host:port` for messages and the session cache (clients), or `client` (servers).
    public let peer: String
    private var state = State.handshaking
    private var offeredSession = false
    /// The first bytes the peer sent, to recognise a plain HTTP server's answer.
    private var firstBytes: [UInt8] = []
    /// Whether the peer's end of the byte stream was reached (``receivedEnd()``).
    private var inputEnded = false

    /// Ciphertext buffered on its way out: a quarter megabyte, so that one `sendmsg` of a bulk
    /// upload moves many records while the buffer stays in the CPU's cache between encrypting
    /// and sending. A megabyte cost a parallel upload of 16 connections 15 MB more peak RSS
    /// (61 against 46 MB, 2026-12-07) for no CPU saved with OpenSSL's own ciphers. Its pages are
    /// touched only as far as a connection fills it: one that sends requests and reads answers
    /// keeps a few.
    static let outboundSize = 256 * 1024
    /// Ciphertext buffered on its way in: many full records, so that one `recv` takes many.
    static let inboundSize = 256 * 1024

    /// Creates the client side of a connection; nothing is produced until ``handshake()``.
    ///
    /// - Parameters:
    ///   - context: A client ``TLSContext``.
    ///   - host: The server's DNS name or IP address (IPv6 with or without brackets); it is
    ///     verified against the certificate and, for names, sent as SNI.
    ///   - port: The server's port, which keys the session cache.
    /// - Throws: ``TLSError`` when the context is not a client one or OpenSSL fails.
    public convenience init(client context: TLSContext, host: String, port: Int) throws(TLSError) {
        guard context.role == .client else {
            throw TLSError(.invalidConfiguration, "a client stream needs a client context")
        }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        try self.init(context: context, peer: bare.contains(":") ? "[\(bare)]:\(port)" : "\(bare):\(port)")
        let api = OpenSSL.api
        let named: Bool
        if bare.isEmpty || bare.utf8.contains(0) {
            named = false
        } else if Self.isIPAddress(bare) {
            // RFC 6066 forbids IP literals in SNI; the check is against the certificate's IP SANs.
            named = api.X509_VERIFY_PARAM_set1_ip_asc!(api.SSL_get0_param!(ssl), bare) == 1
        } else {
            // "*.example.com" is fine; "w*.example.com" is not (RFC 6125 discourages it).
            api.SSL_set_hostflags!(ssl, OpenSSL.checkFlagNoPartialWildcards)
            named =
                api.SSL_set1_host!(ssl, bare) == 1
                && bare.withCString {
                    api.SSL_ctrl!(ssl, OpenSSL.ctrlSetTLSExtHostName, 0, UnsafeMutableRawPointer(mutating: $0))
                } == 1
        }
        api.ERR_clear_error!()
        guard named else {
            throw TLSError(.invalidConfiguration, "cannot verify against the host name \"\(host)\"")
        }
        if let session = context.cachedSession(for: peer) {
            offeredSession = api.SSL_set_session!(ssl, session.pointer) == 1
        }
        api.SSL_set_connect_state!(ssl)
    }

    /// Creates the server side of a connection; nothing is produced until ``handshake()``.
    ///
    /// - Parameter context: A server ``TLSContext``.
    /// - Throws: ``TLSError`` when the context is not a server one or OpenSSL fails.
    public convenience init(server context: TLSContext) throws(TLSError) {
        guard context.role == .server else {
            throw TLSError(.invalidConfiguration, "a server stream needs a server context")
        }
        try self.init(context: context, peer: "client")
        OpenSSL.api.SSL_set_accept_state!(ssl)
    }

    private init(context: TLSContext, peer: String) throws(TLSError) {
        let api = OpenSSL.api
        api.ERR_clear_error!()
        guard let ssl = api.SSL_new!(context.pointer) else {
            throw TLSError(.other, "cannot create a TLS connection: \(OpenSSL.takeError().message)")
        }
        var inner: OpaquePointer?
        var outer: OpaquePointer?
        guard api.BIO_new_bio_pair!(&inner, Self.outboundSize, &outer, Self.inboundSize) == 1, let inner, let outer
        else {
            api.SSL_free!(ssl)
            throw TLSError(.other, "cannot create a TLS connection: \(OpenSSL.takeError().message)")
        }
        // One BIO for both directions: SSL_set_bio takes over its one reference.
        api.SSL_set_bio!(ssl, inner, inner)
        self.context = context
        self.ssl = ssl
        self.network = outer
        self.sslEnd = inner
        self.isServer = context.role == .server
        self.peer = peer
    }

    deinit {
        let api = OpenSSL.api
        api.SSL_free!(ssl)
        _ = api.BIO_free!(network)
    }

    // MARK: - Ciphertext

    /// Where ciphertext received from the peer goes: receive into it, then call
    /// ``didReceive(_:)`` with the count. Empty while the inbound buffer is full (the engine
    /// needs no input then) or after ``receivedEnd()``.
    public var inboundSpace: UnsafeMutableRawBufferPointer {
        var pointer: UnsafeMutablePointer<CChar>?
        let count = OpenSSL.api.BIO_nwrite0!(network, &pointer)
        guard count > 0, let pointer else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        return UnsafeMutableRawBufferPointer(start: pointer, count: Int(count))
    }

    /// Commits `count` bytes received into ``inboundSpace``.
    public func didReceive(_ count: Int) {
        guard count > 0 else { return }
        if firstBytes.count < 5 {
            let space = inboundSpace
            firstBytes += space.prefix(min(count, 5 - firstBytes.count))
        }
        var pointer: UnsafeMutablePointer<CChar>?
        _ = OpenSSL.api.BIO_nwrite!(network, &pointer, Int32(count))
    }

    /// Copies received ciphertext in (for drivers that cannot receive in place, and tests).
    ///
    /// - Returns: The bytes taken: fewer than offered when the inbound buffer is full.
    public func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        var taken = 0
        while taken < bytes.count {
            let space = inboundSpace
            guard !space.isEmpty, let base = bytes.baseAddress else { break }
            let count = min(space.count, bytes.count - taken)
            space.baseAddress!.copyMemory(from: base + taken, byteCount: count)
            didReceive(count)
            taken += count
        }
        return taken
    }

    /// Tells the engine the peer's byte stream ended (a receive returned 0): what it still
    /// expects then fails as ``TLSError/Kind-swift.struct/peerClosed``.
    public func receivedEnd() {
        inputEnded = true
        _ = OpenSSL.api.BIO_ctrl!(network, OpenSSL.bioShutdownWrite, 0, nil)
    }

    /// Ciphertext waiting to be sent to the peer (one contiguous part of it; after
    /// ``didSend(_:)`` the rest follows). Empty when nothing waits.
    public var outbound: UnsafeRawBufferPointer {
        var pointer: UnsafeMutablePointer<CChar>?
        let count = OpenSSL.api.BIO_nread0!(network, &pointer)
        guard count > 0, let pointer else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: pointer, count: Int(count))
    }

    /// Whether ciphertext waits to be sent.
    public var hasOutbound: Bool {
        OpenSSL.api.BIO_ctrl_pending!(network) > 0
    }

    /// Commits `count` bytes of ``outbound`` as sent.
    public func didSend(_ count: Int) {
        guard count > 0 else { return }
        var pointer: UnsafeMutablePointer<CChar>?
        _ = OpenSSL.api.BIO_nread!(network, &pointer, Int32(count))
    }

    /// Whether the peer's bytes are already received but not yet returned by ``read(into:)``
    /// (whole or partial records): a `poll` of the socket cannot see them.
    public var hasBufferedInput: Bool {
        let api = OpenSSL.api
        return api.SSL_has_pending!(ssl) == 1 || inboundPending > 0
    }

    /// Received ciphertext OpenSSL has not read yet.
    private var inboundPending: Int {
        OpenSSL.api.BIO_ctrl_pending!(sslEnd)
    }

    // MARK: - Plaintext

    /// Whether the handshake has completed.
    public var isEstablished: Bool { state == .established || state == .closedByPeer }

    /// Whether the handshake resumed an earlier session (saving a full handshake).
    public private(set) var sessionWasReused = false

    /// The ALPN protocol both sides agreed on (`http/1.1`), or `nil`.
    public private(set) var negotiatedApplicationProtocol: String?

    /// The negotiated protocol version, such as `"TLS 1.3"`, or `nil` before the handshake.
    public private(set) var negotiatedProtocolVersion: String?

    /// The negotiated cipher suite by OpenSSL's name, such as `"TLS_AES_256_GCM_SHA384"`, or
    /// `nil` before the handshake.
    public private(set) var negotiatedCipherSuite: String?

    /// Advances the handshake.
    ///
    /// - Returns: `.done(0)` once it is over, or what it needs.
    /// - Throws: ``TLSError``: a certificate kind, ``TLSError/Kind-swift.struct/protocolVersion``,
    ///   ``TLSError/Kind-swift.struct/plainHTTPServer``, ``TLSError/Kind-swift.struct/peerClosed``
    ///   or ``TLSError/Kind-swift.struct/handshakeFailed``.
    public func handshake() throws(TLSError) -> Progress {
        if isEstablished { return .done(0) }
        try usable(.handshaking)
        let api = OpenSSL.api
        api.ERR_clear_error!()
        let result = api.SSL_do_handshake!(ssl)
        if result == 1 {
            state = .established
            recordNegotiation()
            rememberSession()
            return .done(0)
        }
        let code = api.SSL_get_error!(ssl, result)
        if let wait = Self.wait(for: code) { return wait }
        state = .failed
        if offeredSession { context.forgetSession(for: peer) }
        throw handshakeError(code)
    }

    /// Decrypts into `buffer` every whole record already received, as far as it fits.
    ///
    /// - Returns: `.done(count)` with `count > 0`; `.needsInput` when no whole record is
    ///   there; `.closed` once the peer sent close_notify (and on every read after).
    /// - Throws: ``TLSError/Kind-swift.struct/peerClosed`` when the input ended without
    ///   close_notify; ``TLSError/Kind-swift.struct/corruptStream`` when what arrived is no
    ///   valid TLS record of this connection.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> Progress {
        precondition(!buffer.isEmpty, "TLSEngine.read needs room for at least one byte")
        if state == .closedByPeer { return .closed }
        try usable(.established)
        let api = OpenSSL.api
        var total = 0
        while total < buffer.count {
            var count = 0
            let result = api.SSL_read_ex!(ssl, buffer.baseAddress! + total, buffer.count - total, &count)
            if result == 1 {
                total += count
                continue
            }
            let code = api.SSL_get_error!(ssl, result)
            // Bytes already decrypted are the caller's; a failure after them shows on the next call.
            if total > 0 {
                api.ERR_clear_error!()
                break
            }
            if code == OpenSSL.errorZeroReturn {
                state = .closedByPeer
                rememberSession()
                return .closed
            }
            if let wait = Self.wait(for: code) { return wait }
            state = .failed
            throw streamError(code, during: "reading")
        }
        return .done(total)
    }

    /// Encrypts plaintext from `bytes` into ``outbound``, as many records as fit.
    ///
    /// - Returns: `.done(count)` with the bytes taken (`count > 0` unless `bytes` is empty),
    ///   or `.needsOutputSent` when no record fits until ``outbound`` is sent.
    /// - Throws: ``TLSError`` before the handshake or after a failure.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(TLSError) -> Progress {
        try usable(.established, .closedByPeer)
        guard let base = bytes.baseAddress else { return .done(0) }
        let api = OpenSSL.api
        var total = 0
        while total < bytes.count {
            var count = 0
            let result = api.SSL_write_ex!(ssl, base + total, bytes.count - total, &count)
            if result == 1 {
                total += count
                continue
            }
            let code = api.SSL_get_error!(ssl, result)
            if total > 0 {
                api.ERR_clear_error!()
                break
            }
            if let wait = Self.wait(for: code) { return wait }
            state = .failed
            throw streamError(code, during: "writing")
        }
        return .done(total)
    }

    /// Puts a TLS close_notify into ``outbound`` (one-way: the peer's is not awaited).
    ///
    /// Clients also keep the session for resumption here, since TLS 1.3 servers send
    /// session tickets after the handshake.
    ///
    /// - Returns: `.done(0)`, or `.needsOutputSent` when the alert does not fit yet.
    public func shutdown() throws(TLSError) -> Progress {
        try usable(.established, .closedByPeer)
        rememberSession()
        let api = OpenSSL.api
        let result = api.SSL_shutdown!(ssl)
        // 0: close_notify is out and the peer's is still to come: done, for a one-way close.
        if result >= 0 { return .done(0) }
        let code = api.SSL_get_error!(ssl, result)
        if let wait = Self.wait(for: code) { return wait }
        state = .failed
        throw streamError(code, during: "closing")
    }

    // MARK: - Private

    private static func wait(for code: Int32) -> Progress? {
        switch code {
        case OpenSSL.errorWantRead: .needsInput
        case OpenSSL.errorWantWrite: .needsOutputSent
        default: nil
        }
    }

    private func usable(_ states: State...) throws(TLSError) {
        guard !states.contains(state) else { return }
        let why =
            switch state {
            case .handshaking: "the handshake has not completed"
            case .failed: "an earlier TLS operation failed"
            case .established, .closedByPeer: "the handshake already ran"
            }
        throw TLSError(.other, "TLS stream to \(peer) unusable: \(why)")
    }

    private func recordNegotiation() {
        let api = OpenSSL.api
        sessionWasReused = api.SSL_session_reused!(ssl) == 1
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        api.SSL_get0_alpn_selected!(ssl, &data, &length)
        if let data, length > 0 {
            negotiatedApplicationProtocol = String(
                decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
        }
        negotiatedCipherSuite = api.SSL_get_current_cipher!(ssl).flatMap { api.SSL_CIPHER_get_name!($0) }.map {
            String(cString: $0)
        }
        negotiatedProtocolVersion =
            switch api.SSL_version!(ssl) {
            case OpenSSL.tls13: "TLS 1.3"
            case OpenSSL.tls12: "TLS 1.2"
            case OpenSSL.tls11: "TLS 1.1"
            default: nil
            }
    }

    private func rememberSession() {
        guard !isServer else { return }
        let api = OpenSSL.api
        guard let session = api.SSL_get1_session!(ssl) else { return }
        guard api.SSL_SESSION_is_resumable!(session) == 1 else {
            api.SSL_SESSION_free!(session)
            return
        }
        context.cacheSession(TLSSession(session), for: peer)
    }

    private func handshakeError(_ code: Int32) -> TLSError {
        let error = OpenSSL.takeError()
        if !isServer, firstBytes.starts(with: Array("HTTP/".utf8)) {
            return TLSError(
                .plainHTTPServer,
                "\(peer) answered the TLS handshake with plain HTTP: the address should be http://, not https://")
        }
        let verification = OpenSSL.api.SSL_get_verify_result!(ssl)
        if !isServer, verification != 0 {
            let reason =
                OpenSSL.api.X509_verify_cert_error_string!(verification).map { String(cString: $0) } ?? "unknown"
            return TLSError(
                Self.kind(ofVerificationResult: verification),
                "certificate of \(peer) rejected: \(reason) (X509 error \(verification))")
        }
        if !isServer, code == OpenSSL.errorSSL,
            Self.notTLSReasons.contains(where: { OpenSSL.hasReason(error.code, $0) })
        {
            return TLSError(
                .plainHTTPServer,
                "\(peer) did not answer the TLS handshake in TLS (\(error.message)): most likely a plain server,"
                    + " and the address should be http://, not https://")
        }
        if code == OpenSSL.errorSSL, Self.protocolReasons.contains(where: { OpenSSL.hasReason(error.code, $0) }) {
            return TLSError(
                .protocolVersion,
                "no common TLS version or cipher with \(peer) (this side offers TLS 1.2 or newer, within what"
                    + " the host's OpenSSL configuration allows): \(error.message)")
        }
        if let closed = closedError(code, error, during: "the handshake") { return closed }
        return TLSError(.handshakeFailed, "TLS handshake with \(peer) failed: \(Self.detail(error, code))")
    }

    /// After the handshake, a failure of TLS itself (not the peer's silent close) is
    /// ``TLSError/Kind-swift.struct/corruptStream``.
    private func streamError(_ code: Int32, during operation: String) -> TLSError {
        let error = OpenSSL.takeError()
        if let closed = closedError(code, error, during: operation) { return closed }
        if code == OpenSSL.errorSSL {
            return TLSError(
                .corruptStream, "\(peer) broke the TLS stream during \(operation): \(Self.detail(error, code))")
        }
        return TLSError(.other, "\(operation) with \(peer) failed: \(Self.detail(error, code))")
    }

    /// The peer's end of the stream without close_notify, if that is what `code` means.
    private func closedError(
        _ code: Int32, _ error: (code: UInt, message: String), during operation: String
    ) -> TLSError? {
        let endOfInput =
            (code == OpenSSL.errorSyscall && error.code == 0)
            || (code == OpenSSL.errorSSL && OpenSSL.hasReason(error.code, Self.unexpectedEOFReason))
        guard endOfInput || (inputEnded && code == OpenSSL.errorSyscall) else { return nil }
        return TLSError(.peerClosed, "\(peer) closed the connection without TLS close_notify during \(operation)")
    }

    private static func detail(_ error: (code: UInt, message: String), _ code: Int32) -> String {
        error.message.isEmpty ? "OpenSSL error \(code)" : error.message
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
        case 2, 18, 19, 20, 21, 24, 27: .untrustedIssuer
        case 10, 12: .expired
        case 9, 11: .notYetValid
        // Host name, e-mail, IP address mismatch.
        case 62, 63, 64: .nameMismatch
        default: .certificateRejected
        }
    }

    private static func isIPAddress(_ host: String) -> Bool {
        POSIXSocket.addressBytes(host) != nil
    }
}
