internal import CCloudStorage
import Synchronization

/// Shared TLS configuration for many connections: an OpenSSL `SSL_CTX` plus, for
/// clients, a cache of resumable sessions per `host:port`.
///
/// A client context always verifies the server: chain to a trusted root, host name or IP
/// address, validity dates; TLS 1.2 or newer; ALPN `http/1.1`. Create one per set of trust
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
/// changed afterwards (OpenSSL allows concurrent `SSL_new` on such a context), and the
/// session cache is behind a `Mutex`.
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
    private static let maximumCachedSessions = 64

    /// Creates a client context. Blocking: reads trust files and the system store.
    ///
    /// - Parameter configuration: Trust roots.
    /// - Throws: ``TLSError`` of kind ``TLSError/Kind-swift.struct/libraryUnavailable``
    ///   without OpenSSL, or ``TLSError/Kind-swift.struct/invalidConfiguration`` for an
    ///   unreadable or malformed trust root, or when no root at all would be trusted.
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
    ///   without OpenSSL, or ``TLSError/Kind-swift.struct/invalidConfiguration`` when the
    ///   certificate or key cannot be read or do not match.
    public init(server configuration: TLSServerConfiguration) throws(TLSError) {
        role = .server
        pointer = try Self.makeContext(server: true)
        // On failure deinit still runs (every stored property is set) and frees the context.
        try configureServer(configuration)
    }

    deinit {
        cs_tls_ctx_free(pointer)
    }

    private static func makeContext(server: Bool) throws(TLSError) -> OpaquePointer {
        guard TLSLibrary.isAvailable else {
            throw TLSError(.libraryUnavailable, TLSLibrary.unavailableReason ?? "OpenSSL is unavailable")
        }
        var result = cs_tls_io_result()
        guard let context = cs_tls_ctx_new(server ? 1 : 0, &result) else {
            throw TLSError(.other, "cannot create an OpenSSL context: \(result.message)")
        }
        return context
    }

    private func configureClient(_ configuration: TLSClientConfiguration) throws(TLSError) {
        var result = cs_tls_io_result()
        var trusted = 0
        if configuration.trustsSystemRoots {
            guard cs_tls_ctx_use_default_trust(pointer, &result) == 1 else {
                throw TLSError(.invalidConfiguration, "cannot use the system trust store: \(result.message)")
            }
            trusted += 1
        }
        for source in configuration.additionalTrustRoots {
            let pem = try source.load("trust roots")
            let added = pem.withUnsafeBytes { cs_tls_ctx_add_trust_pem(pointer, $0.baseAddress, $0.count, &result) }
            if added < 0 {
                throw TLSError(.invalidConfiguration, "malformed trust root certificate: \(result.message)")
            }
            if added == 0 {
                throw TLSError(.invalidConfiguration, "a trust root source holds no PEM certificate")
            }
            trusted += Int(added)
        }
        if trusted == 0 {
            throw TLSError(.invalidConfiguration, "no trust roots: the system store is off and none were given")
        }
        guard cs_tls_ctx_use_alpn_http11(pointer, 0) == 1 else {
            throw TLSError(.other, "cannot configure ALPN")
        }
    }

    private func configureServer(_ configuration: TLSServerConfiguration) throws(TLSError) {
        var result = cs_tls_io_result()
        let chain = try configuration.certificateChain.load("certificate chain")
        let chainOK = chain.withUnsafeBytes {
            cs_tls_ctx_use_certificate_chain_pem(pointer, $0.baseAddress, $0.count, &result)
        }
        guard chainOK == 1 else {
            throw TLSError(.invalidConfiguration, "cannot use the certificate chain: \(result.message)")
        }
        let key = try configuration.privateKey.load("private key")
        let keyOK = key.withUnsafeBytes {
            cs_tls_ctx_use_private_key_pem(pointer, $0.baseAddress, $0.count, &result)
        }
        guard keyOK == 1 else {
            throw TLSError(
                .invalidConfiguration,
                "cannot use the private key (or it does not match the certificate): \(result.message)"
            )
        }
        guard cs_tls_ctx_use_alpn_http11(pointer, 1) == 1 else {
            throw TLSError(.other, "cannot configure ALPN")
        }
        if configuration.legacyTLS11OnlyForTesting {
            // TLS 1.1 signs with SHA-1, which OpenSSL 3 allows only at security level 0.
            guard cs_tls_ctx_set_protocol_range(pointer, CS_TLS_VERSION_1_1, CS_TLS_VERSION_1_1) == 1,
                cs_tls_ctx_set_legacy_security(pointer, 0, "DEFAULT:@SECLEVEL=0") == 1
            else {
                throw TLSError(.invalidConfiguration, "this OpenSSL cannot serve TLS 1.1")
            }
        }
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

extension cs_tls_io_result {
    /// OpenSSL's error text captured with this result ("" when none).
    var message: String {
        var copy = error_message
        return withUnsafeBytes(of: &copy) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}
