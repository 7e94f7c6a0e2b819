internal import CCloudStorage

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

        var pemKind: Int32 {
            switch self {
            case .privateKey: CS_CRYPTO_PRIVATE_KEY
            case .publicKey: CS_CRYPTO_PUBLIC_KEY
            case .certificate: CS_CRYPTO_CERTIFICATE
            }
        }
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
        var result = cs_tls_io_result()
        var bits: Int32 = 0
        let made = pem.withUnsafeBytes { bytes in
            cs_crypto_rsa_key_from_pem(bytes.baseAddress, bytes.count, half.pemKind, &bits, &result)
        }
        guard let made else {
            let what = half == .privateKey ? "RSA private key" : "RSA public key"
            throw TLSError(.invalidConfiguration, "cannot read the \(what): \(Self.message(of: &result))")
        }
        guard bits >= Self.minimumBitCount else {
            cs_crypto_key_free(made)
            throw TLSError(
                .invalidConfiguration, "the RSA key has \(bits) bits; at least \(Self.minimumBitCount) are required")
        }
        key = made
        isPrivate = half == .privateKey
        bitCount = Int(bits)
    }

    deinit {
        cs_crypto_key_free(key)
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
        var length = 0
        var result = cs_tls_io_result()
        let ok = message.withUnsafeBytes { input in
            signature.withUnsafeMutableBytes { output in
                cs_crypto_rsa_sha256_sign(
                    key, input.baseAddress, input.count, output.baseAddress, output.count, &length, &result)
            }
        }
        guard ok == 1 else {
            throw TLSError(.other, "RSA signing failed: \(Self.message(of: &result))")
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
        message.withUnsafeBytes { input in
            signature.withUnsafeBytes { signed in
                cs_crypto_rsa_sha256_verify(key, input.baseAddress, input.count, signed.baseAddress, signed.count)
            }
        } == 1
    }

    private static func message(of result: inout cs_tls_io_result) -> String {
        withUnsafeBytes(of: &result.error_message) { bytes in
            String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}
