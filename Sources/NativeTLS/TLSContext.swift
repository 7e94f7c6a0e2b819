internal import COpenSSLLoader
import Synchronization

/// Shared TLS configuration for many connections: an OpenSSL `SSL_CTX` plus, for
/// clients, a cache of resumable sessions per `host:port`.
///
/// A client context always verifies the server: chain to a trusted root, host name or IP
/// address, validity dates; TLS 1.2 or newer; ALPN `http/1.1`. Every context is made under the
/// host's OpenSSL configuration (`openssl.cnf`, or the file `OPENSSL_CONF` names), as curl's
/// are: its protocol versions, cipher lists and default properties (FIPS) hold, and this side
/// only tightens them. Create one per set of trust
/// roots and share it across connections and threads; new connections to a server the
/// context has talked to before resume the earlier session, saving a full handshake.
///
/// ```swift
/// let context = try TLSContext(client: TLSClientConfiguration())
/// let stream = try TLSStream(client: context, socket: fd, host: "storage.googleapis.com", port: 443)
/// try stream.handshake()
/// ```
///
/// SAFETY (`@unchecked Sendable`): the `SSL_CTX` is fully configured in `init` and never
/// changed afterwards (OpenSSL allows concurrent `SSL_new` on such a context), `systemTrust`
/// is set in `init` only (and guards its own state), and the session cache is behind a `Mutex`.
public final class TLSContext: @unchecked Sendable {  // SAFETY: see the note above
    /// Which side of a connection this context configures.
    public enum Role: Sendable, Hashable {
        /// Connects to servers and verifies them.
        case client
        /// Accepts connections and presents a certificate.
        case server
    }

    /// Which side of a connection this context configures.
    public let role: Role
    /// The OpenSSL `SSL_CTX`, owned by this object and freed in `deinit`.
    let pointer: OpaquePointer
    /// Resumable sessions by `host:port`; bounded, since a process talks to few servers.
    private let sessions = Mutex<[String: TLSSession]>([:])
    /// The system trust store's lazily read file, if trusted; kept as long as the `SSL_CTX`.
    /// Set in `init` only.
    private var systemTrust: TLSSystemTrust?
    private static let maximumCachedSessions = 64

    /// Creates a client context. Blocking: reads trust files and the system store.
    ///
    /// - Parameter configuration: Trust roots.
    /// - Throws: ``TLSError`` of kind ``TLSError/Kind-swift.struct/libraryUnavailable``
    ///   without OpenSSL, ``TLSError/Kind-swift.struct/hostConfiguration`` when the host's
    ///   OpenSSL configuration leaves no usable TLS, or
    ///   ``TLSError/Kind-swift.struct/invalidConfiguration`` for an unreadable or malformed
    ///   trust root, or when no root at all would be trusted.
    public init(client configuration: TLSClientConfiguration) throws(TLSError) {
        role = .client
        pointer = try Self.makeContext(server: false)
        // On failure deinit still runs (every stored property is set) and frees the context.
        try configureClient(configuration)
    }

    /// Creates a server context. Blocking: reads the certificate and key files.
    ///
    /// - Parameter configuration: The certificate chain and private key.
    /// - Throws: ``TLSError`` of kind ``TLSError/Kind-swift.struct/libraryUnavailable``
    ///   without OpenSSL, ``TLSError/Kind-swift.struct/hostConfiguration`` when the host's
    ///   OpenSSL configuration leaves no usable TLS, or
    ///   ``TLSError/Kind-swift.struct/invalidConfiguration`` when the certificate or key cannot
    ///   be read or do not match.
    public init(server configuration: TLSServerConfiguration) throws(TLSError) {
        role = .server
        pointer = try Self.makeContext(server: true)
        // On failure deinit still runs (every stored property is set) and frees the context.
        try configureServer(configuration)
    }

    deinit {
        OpenSSL.api.SSL_CTX_free!(pointer)
    }

    /// Bytes OpenSSL keeps for one incoming record: the largest a TLS record can be.
    private static let readBufferLength = 17 * 1024

    /// A new context under the host's OpenSSL configuration, as every OpenSSL program on the
    /// machine gets it (curl included): the default library context, with `openssl.cnf` (or the
    /// file `OPENSSL_CONF` names) loaded, so its default properties (FIPS), `MinProtocol`,
    /// `CipherString` and `Ciphersuites` hold. This side only tightens them: TLS 1.2 or newer
    /// (the host's minimum where it is higher), renegotiation off and, for clients, peer
    /// verification; partial writes (each write call returns once a record is out).
    ///
    /// - Throws: ``TLSError/Kind-swift.struct/hostConfiguration`` when the configuration leaves
    ///   no TLS this side can speak (no cipher at all, or none for TLS 1.2 or newer).
    private static func makeContext(server: Bool) throws(TLSError) -> OpaquePointer {
        guard TLSLibrary.isAvailable else {
            throw TLSError(.libraryUnavailable, TLSLibrary.unavailableReason ?? "OpenSSL is unavailable")
        }
        let api = OpenSSL.api
        api.ERR_clear_error!()
        // Loads the configuration once per process, as SSL_CTX_new would on its own; said here so
        // that no build of OpenSSL without automatic loading can leave the host's policy out.
        _ = api.OPENSSL_init_ssl!(OpenSSL.initLoadConfig, nil)
        let method = server ? api.TLS_server_method!() : api.TLS_client_method!()
        guard let context = api.SSL_CTX_new!(method) else {
            throw hostConfigurationError("OpenSSL makes no TLS context under it: \(OpenSSL.takeError().message)")
        }
        let hostMinimum = api.SSL_CTX_ctrl!(context, OpenSSL.ctrlGetMinProtoVersion, 0, nil)
        if hostMinimum < Int(OpenSSL.tls12) {
            _ = api.SSL_CTX_ctrl!(context, OpenSSL.ctrlSetMinProtoVersion, Int(OpenSSL.tls12), nil)
        }
        _ = api.SSL_CTX_set_options!(context, OpenSSL.optionNoRenegotiation)
        _ = api.SSL_CTX_ctrl!(
            context, OpenSSL.ctrlMode, OpenSSL.modeEnablePartialWrite | OpenSSL.modeAcceptMovingWriteBuffer, nil)
        api.SSL_CTX_set_default_read_buffer_len!(context, readBufferLength)
        if !server {
            api.SSL_CTX_set_verify!(context, OpenSSL.verifyPeer, nil)
        }
        guard usableCipherCount(context) > 0 else {
            api.SSL_CTX_free!(context)
            throw hostConfigurationError("it leaves no cipher suite for TLS 1.2 or newer")
        }
        return context
    }

    /// How many cipher suites a connection of `context` could offer, within its protocol versions.
    private static func usableCipherCount(_ context: OpaquePointer) -> Int {
        let api = OpenSSL.api
        guard let ssl = api.SSL_new!(context) else { return 0 }
        defer { api.SSL_free!(ssl) }
        guard let ciphers = api.SSL_get1_supported_ciphers!(ssl) else { return 0 }
        defer { api.OPENSSL_sk_free!(ciphers) }
        return Int(api.OPENSSL_sk_num!(ciphers))
    }

    /// The error for a host configuration that leaves no usable TLS, naming where it comes from.
    private static func hostConfigurationError(_ why: String) -> TLSError {
        TLSError(
            .hostConfiguration,
            "the host's OpenSSL configuration (the file OPENSSL_CONF names, else openssl.cnf in "
                + "\(OpenSSL.configurationDirectory)) leaves no usable TLS: \(why)")
    }

    private func configureClient(_ configuration: TLSClientConfiguration) throws(TLSError) {
        let api = OpenSSL.api
        var trusted = 0
        if configuration.trustsSystemRoots {
            guard let store = api.SSL_CTX_get_cert_store!(pointer) else {
                throw TLSError(.other, "cannot use the system trust store: the context has no certificate store")
            }
            systemTrust = TLSSystemTrust(store: store, file: configuration.systemTrustFile)
            trusted += 1
        }
        for source in configuration.additionalTrustRoots {
            let added = try addTrustRoots(try source.load("trust roots"))
            if added == 0 {
                throw TLSError(.invalidConfiguration, "a trust root source holds no PEM certificate")
            }
            trusted += added
        }
        if trusted == 0 {
            throw TLSError(.invalidConfiguration, "no trust roots: the system store is off and none were given")
        }
        // The length-prefixed protocol list; unlike most of OpenSSL, this returns 0 on success.
        let protocols = Self.http11
        guard
            protocols.withUnsafeBufferPointer({
                api.SSL_CTX_set_alpn_protos!(pointer, $0.baseAddress, UInt32($0.count))
            }) == 0
        else {
            throw TLSError(.other, "cannot configure ALPN")
        }
    }

    /// `http/1.1` as an ALPN protocol list.
    private static let http11: [UInt8] = [8] + Array("http/1.1".utf8)

    /// Adds every certificate of a PEM buffer as a trust root; returns how many.
    private func addTrustRoots(_ pem: [UInt8]) throws(TLSError) -> Int {
        let api = OpenSSL.api
        let store = api.SSL_CTX_get_cert_store!(pointer)
        return try OpenSSL.withMemoryBIO(pem) { bio throws(TLSError) -> Int in
            var added = 0
            while let certificate = api.PEM_read_bio_X509!(bio, nil, nil, nil) {
                let ok = api.X509_STORE_add_cert!(store, certificate)
                api.X509_free!(certificate)
                guard ok == 1 else {
                    throw TLSError(
                        .invalidConfiguration, "cannot trust a root certificate: \(OpenSSL.takeError().message)")
                }
                added += 1
            }
            // The loop ends on "no start line" at the end of the buffer; anything else is a malformed certificate.
            let last = api.ERR_peek_error!()
            if last != 0 && !OpenSSL.hasReason(last, OpenSSL.reasonNoStartLine) {
                throw TLSError(
                    .invalidConfiguration, "malformed trust root certificate: \(OpenSSL.takeError().message)")
            }
            api.ERR_clear_error!()
            return added
        }
    }

    private func configureServer(_ configuration: TLSServerConfiguration) throws(TLSError) {
        let api = OpenSSL.api
        let chain = try configuration.certificateChain.load("certificate chain")
        try OpenSSL.withMemoryBIO(chain) { bio throws(TLSError) in
            let leaf = api.PEM_read_bio_X509!(bio, nil, nil, nil)
            var ok = leaf != nil && api.SSL_CTX_use_certificate!(pointer, leaf) == 1
            if let leaf { api.X509_free!(leaf) }
            while ok, let extra = api.PEM_read_bio_X509!(bio, nil, nil, nil) {
                // SSL_CTX_add0_chain_cert: the context takes ownership on success.
                if api.SSL_CTX_ctrl!(pointer, OpenSSL.ctrlChainCert, 0, UnsafeMutableRawPointer(extra)) != 1 {
                    api.X509_free!(extra)
                    ok = false
                }
            }
            guard ok else {
                throw TLSError(
                    .invalidConfiguration, "cannot use the certificate chain: \(OpenSSL.takeError().message)")
            }
            api.ERR_clear_error!()  // the end of the buffer
        }
        let key = try configuration.privateKey.load("private key")
        try OpenSSL.withMemoryBIO(key) { bio throws(TLSError) in
            let made = api.PEM_read_bio_PrivateKey!(bio, nil, OpenSSL.noPassphrase, nil)
            let ok =
                made != nil && api.SSL_CTX_use_PrivateKey!(pointer, made) == 1
                && api.SSL_CTX_check_private_key!(pointer) == 1
            if let made { api.EVP_PKEY_free!(made) }
            guard ok else {
                throw TLSError(
                    .invalidConfiguration,
                    "cannot use the private key (or it does not match the certificate): "
                        + OpenSSL.takeError().message)
            }
        }
        api.SSL_CTX_set_alpn_select_cb!(pointer, Self.selectHTTP11, nil)
        if let only = configuration.onlyVersionForTesting {
            try serveOnly(only)
        }
    }

    /// Limits a test server to one protocol version.
    private func serveOnly(_ only: TLSServerConfiguration.OnlyVersion) throws(TLSError) {
        let api = OpenSSL.api
        let version = only == .tls11 ? OpenSSL.tls11 : OpenSSL.tls12
        if only == .tls11 {
            // TLS 1.1 signs with SHA-1, which OpenSSL 3 allows only at security level 0.
            api.SSL_CTX_set_security_level!(pointer, 0)
            guard api.SSL_CTX_set_cipher_list!(pointer, "DEFAULT:@SECLEVEL=0") == 1 else {
                api.ERR_clear_error!()
                throw TLSError(.invalidConfiguration, "this OpenSSL cannot serve TLS 1.1")
            }
        }
        guard api.SSL_CTX_ctrl!(pointer, OpenSSL.ctrlSetMinProtoVersion, Int(version), nil) == 1,
            api.SSL_CTX_ctrl!(pointer, OpenSSL.ctrlSetMaxProtoVersion, Int(version), nil) == 1
        else {
            api.ERR_clear_error!()
            throw TLSError(.invalidConfiguration, "this OpenSSL cannot serve only \(only)")
        }
    }

    /// The server's ALPN choice: `http/1.1` when the client offers it; otherwise none
    /// (`SSL_TLSEXT_ERR_NOACK`: HTTP/1.1 is the default anyway).
    private static let selectHTTP11: cs_alpn_select_cb = { _, out, outLength, offered, offeredLength, _ in
        guard let offered else { return 3 }
        var index = 0
        let total = Int(offeredLength)
        while index < total {
            let length = Int(offered[index])
            guard length > 0, length <= total - index - 1 else { break }
            if length == 8, (0..<8).allSatisfy({ offered[index + 1 + $0] == http11[1 + $0] }) {
                out?.pointee = UnsafePointer(offered + index + 1)
                outLength?.pointee = UInt8(length)
                return 0  // SSL_TLSEXT_ERR_OK
            }
            index += 1 + length
        }
        return 3
    }

    /// The session to offer when connecting to `key` (`host:port`), if one is cached.
    func cachedSession(for key: String) -> TLSSession? {
        sessions.withLock { $0[key] }
    }

    /// Remembers a resumable session for `key`, replacing any earlier one.
    func cacheSession(_ session: TLSSession, for key: String) {
        // Sessions dropped here are released after the lock is let go (their deinit calls into OpenSSL).
        let released = sessions.withLock { cache -> [TLSSession] in
            var evicted: [TLSSession] = []
            if cache[key] == nil, cache.count >= Self.maximumCachedSessions {
                evicted = Array(cache.values)
                cache.removeAll(keepingCapacity: true)
            }
            if let replaced = cache.updateValue(session, forKey: key) {
                evicted.append(replaced)
            }
            return evicted
        }
        _ = released
    }

    /// Forgets the session for `key`, after a handshake that offered it failed.
    func forgetSession(for key: String) {
        let removed = sessions.withLock { $0.removeValue(forKey: key) }
        _ = removed
    }
}
