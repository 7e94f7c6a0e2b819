/// An RSA key read from PEM by the system's OpenSSL 3 (loaded at run time): a private
/// key signs, a public key (or a certificate's) verifies, both with RSASSA-PKCS1-v1_5
/// and SHA-256 — JWT `RS256` and Cloud Storage's `GOOG4-RSA-SHA256`.
///
/// ```swift
/// let key = try RSAKey(privateKeyPEM: Array(serviceAccount.privateKey.utf8))
/// let signature = try key.signSHA256(Array(signingInput.utf8))
/// ```
///
/// Immutable once made: any number of threads may sign or verify with one key at once.
/// Linux only, like the rest of this target; elsewhere every initializer throws
/// ``TLSError/Kind-swift.struct/libraryUnavailable``.
///
/// SAFETY (`@unchecked Sendable`): the `EVP_PKEY` is never changed after init, and OpenSSL
/// allows concurrent signing and verifying with one key (each call has its own context).
public final class RSAKey: @unchecked Sendable {  // SAFETY: see the note above
    /// Which half of a key pair a PEM block holds.
    private enum Half {
        case privateKey, publicKey, certificate

    }

    private let key: OpaquePointer
    /// Whether this key can sign (it was read from a private key).
    public let isPrivate: Bool
    /// The modulus size in bits, such as 2048.
    public let bitCount: Int

    /// Smallest modulus accepted: smaller RSA keys are breakable, and Google issues 2048-bit keys.
    public static let minimumBitCount = 2048

    /// Reads an unencrypted RSA private key: PKCS #8 (`-----BEGIN PRIVATE KEY-----`, as in
    /// Google's service-account key files) or PKCS #1 (`-----BEGIN RSA PRIVATE KEY-----`).
    ///
    /// - Parameter privateKeyPEM: The PEM text.
    /// - Throws: ``TLSError/Kind-swift.struct/invalidConfiguration`` when there is no such
    ///   block, it is malformed or encrypted, the key is not RSA or is shorter than
    ///   ``minimumBitCount``; ``TLSError/Kind-swift.struct/libraryUnavailable`` without OpenSSL.
    public convenience init(privateKeyPEM: [UInt8]) throws(TLSError) {
        try self.init(pem: privateKeyPEM, half: .privateKey)
    }

    /// Reads an RSA public key from a `-----BEGIN PUBLIC KEY-----` block, or from the first
    /// certificate of a `-----BEGIN CERTIFICATE-----` block (Google publishes service
    /// accounts' keys as certificates).
    ///
    /// - Parameter publicKeyPEM: The PEM text.
    /// - Throws: As ``init(privateKeyPEM:)``.
    public convenience init(publicKeyPEM: [UInt8]) throws(TLSError) {
        let isCertificate = publicKeyPEM.firstRange(of: Array("-----BEGIN CERTIFICATE-----".utf8)) != nil
        try self.init(pem: publicKeyPEM, half: isCertificate ? .certificate : .publicKey)
    }

    private init(pem: [UInt8], half: Half) throws(TLSError) {
        if let reason = TLSLibrary.unavailableReason {
            throw TLSError(.libraryUnavailable, reason)
        }
        let made = try OpenSSL.withMemoryBIO(pem) { bio throws(TLSError) -> OpaquePointer? in Self.read(half, from: bio)
        }
        let what = half == .privateKey ? "RSA private key" : "RSA public key"
        guard let made else {
            let detail = OpenSSL.takeError().message
            throw TLSError(
                .invalidConfiguration,
                "cannot read the \(what): \(detail.isEmpty ? "no PEM block of the expected type" : detail)")
        }
        let api = OpenSSL.api
        guard api.EVP_PKEY_get_base_id!(made) == OpenSSL.nidRSAEncryption else {
            api.EVP_PKEY_free!(made)
            throw TLSError(.invalidConfiguration, "cannot read the \(what): the key is not an RSA key")
        }
        let bits = api.EVP_PKEY_get_bits!(made)
        guard bits >= Self.minimumBitCount else {
            api.EVP_PKEY_free!(made)
            throw TLSError(
                .invalidConfiguration, "the RSA key has \(bits) bits; at least \(Self.minimumBitCount) are required")
        }
        key = made
        isPrivate = half == .privateKey
        bitCount = Int(bits)
    }

    /// The first key of `half` in the PEM that `bio` reads, or nil.
    private static func read(_ half: Half, from bio: OpaquePointer) -> OpaquePointer? {
        let api = OpenSSL.api
        switch half {
        case .privateKey:
            return api.PEM_read_bio_PrivateKey!(bio, nil, OpenSSL.noPassphrase, nil)
        case .publicKey:
            return api.PEM_read_bio_PUBKEY!(bio, nil, OpenSSL.noPassphrase, nil)
        case .certificate:
            guard let certificate = api.PEM_read_bio_X509!(bio, nil, nil, nil) else { return nil }
            defer { api.X509_free!(certificate) }
            return api.X509_get_pubkey!(certificate)
        }
    }

    deinit {
        OpenSSL.api.EVP_PKEY_free!(key)
    }

    /// The RSASSA-PKCS1-v1_5 SHA-256 signature of `message` (`bitCount / 8` bytes).
    ///
    /// - Parameter message: The bytes to sign (hashed here; pass the message, not a digest).
    /// - Returns: The signature.
    /// - Throws: ``TLSError/Kind-swift.struct/invalidConfiguration`` for a public key, or
    ///   ``TLSError/Kind-swift.struct/other`` when OpenSSL fails.
    public func signSHA256(_ message: [UInt8]) throws(TLSError) -> [UInt8] {
        guard isPrivate else {
            throw TLSError(.invalidConfiguration, "a public RSA key cannot sign")
        }
        var signature = [UInt8](repeating: 0, count: (bitCount + 7) / 8)
        let api = OpenSSL.api
        api.ERR_clear_error!()
        guard let digest = api.EVP_MD_CTX_new!() else {
            throw TLSError(.other, "RSA signing failed: no memory")
        }
        defer { api.EVP_MD_CTX_free!(digest) }
        var length = signature.count
        // EVP_DigestSignInit defaults to PKCS #1 v1.5 padding for an RSA key: RS256 and GOOG4-RSA-SHA256.
        let ok = message.withUnsafeBufferPointer { input in
            signature.withUnsafeMutableBufferPointer { output in
                api.EVP_DigestSignInit!(digest, nil, api.EVP_sha256!(), nil, key) == 1
                    && api.EVP_DigestSign!(digest, output.baseAddress, &length, input.baseAddress, input.count) == 1
            }
        }
        guard ok else {
            throw TLSError(.other, "RSA signing failed: \(OpenSSL.takeError().message)")
        }
        return Array(signature.prefix(length))
    }

    /// Whether `signature` is a valid RSASSA-PKCS1-v1_5 SHA-256 signature of `message`
    /// under this key (or its public half).
    ///
    /// - Parameters:
    ///   - signature: The signature to check.
    ///   - message: The signed bytes.
    /// - Returns: `true` only for a valid signature.
    public func isValidSHA256Signature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        let api = OpenSSL.api
        guard let digest = api.EVP_MD_CTX_new!() else { return false }
        defer { api.EVP_MD_CTX_free!(digest) }
        let ok = message.withUnsafeBufferPointer { input in
            signature.withUnsafeBufferPointer { signed in
                api.EVP_DigestVerifyInit!(digest, nil, api.EVP_sha256!(), nil, key) == 1
                    && api.EVP_DigestVerify!(
                        digest, signed.baseAddress, signed.count, input.baseAddress, input.count) == 1
            }
        }
        // A bad signature leaves an entry in this thread's queue; it must not leak into a later call.
        api.ERR_clear_error!()
        return ok
    }
}
