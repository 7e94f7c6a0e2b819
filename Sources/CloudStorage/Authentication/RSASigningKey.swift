import Foundation

#if canImport(Security)
import Security
#else
internal import NativeTLS
#endif

/// An RSA private key that signs with RSASSA-PKCS1-v1_5 and SHA-256: the `RS256` of the
/// JWTs a service account exchanges for access tokens, and the `GOOG4-RSA-SHA256` of V4
/// signed URLs.
///
/// Read from PEM as Google issues it (PKCS #8, `-----BEGIN PRIVATE KEY-----`; PKCS #1 is
/// accepted too). On Linux the system's OpenSSL 3, loaded at run time, does the work; on
/// Apple platforms the Security framework does. A key that cannot be used fails at
/// construction, not at the first request.
struct RSASigningKey: Sendable {
    #if canImport(Security)
    private let key: SecKey
    #else
    private let key: RSAKey
    #endif

    /// Reads the key.
    ///
    /// - Parameter pem: The PEM text.
    /// - Throws: ``StorageErrorCode/invalidArgument`` naming what is wrong with it.
    init(pem: String) throws(StorageError) {
        #if canImport(Security)
        key = try Self.secKey(pem: pem)
        #else
        do {
            key = try RSAKey(privateKeyPEM: Array(pem.utf8))
        } catch {
            throw StorageError(.invalidArgument, "The private key cannot be used: \(error.message).")
        }
        #endif
    }

    /// The signature of `message` (256 bytes for a 2048-bit key).
    ///
    /// - Parameter message: The bytes to sign (hashed here).
    /// - Returns: The signature.
    /// - Throws: ``StorageErrorCode/internalError`` when the platform's crypto fails.
    func sign(_ message: [UInt8]) throws(StorageError) -> [UInt8] {
        #if canImport(Security)
        var failure: Unmanaged<CFError>?
        guard
            let signature = SecKeyCreateSignature(
                key, .rsaSignatureMessagePKCS1v15SHA256, Data(message) as CFData, &failure)
        else {
            let cause = failure?.takeRetainedValue().map { String(describing: $0) } ?? "no reason given"
            throw StorageError(.internalError, "RSA signing failed: \(cause).")
        }
        return Array(signature as Data)
        #else
        do {
            return try key.signSHA256(message)
        } catch {
            throw StorageError(.internalError, "RSA signing failed: \(error.message).")
        }
        #endif
    }

    #if canImport(Security)
    /// The Security framework takes PKCS #1 DER only: PKCS #8 is unwrapped first.
    private static func secKey(pem: String) throws(StorageError) -> SecKey {
        guard let der = PEMBlock.derBytes(in: pem, labels: ["PRIVATE KEY", "RSA PRIVATE KEY"]) else {
            throw StorageError(.invalidArgument, "The private key cannot be used: no PEM private key block.")
        }
        let pkcs1 = der.label == "PRIVATE KEY" ? PKCS8.rsaPrivateKey(in: der.bytes) : der.bytes
        guard let pkcs1 else {
            throw StorageError(.invalidArgument, "The private key cannot be used: it is not an RSA PKCS #8 key.")
        }
        let attributes: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPrivate,
        ]
        var failure: Unmanaged<CFError>?
        guard let key = SecKeyCreateWithData(Data(pkcs1) as CFData, attributes as CFDictionary, &failure) else {
            _ = failure?.takeRetainedValue()
            throw StorageError(.invalidArgument, "The private key cannot be used: the Security framework refused it.")
        }
        let bits = (SecKeyCopyAttributes(key) as? [CFString: Any])?[kSecAttrKeySizeInBits] as? Int ?? 0
        guard bits >= 2048 else {
            throw StorageError(
                .invalidArgument, "The private key cannot be used: it has \(bits) bits; at least 2048 are required.")
        }
        return key
    }
    #endif
}
