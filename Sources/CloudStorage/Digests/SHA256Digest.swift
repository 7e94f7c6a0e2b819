#if canImport(CryptoKit)
import CryptoKit
#else
internal import NativeTLS
#endif

/// SHA-256, for V4 signatures' canonical requests: CryptoKit on Apple platforms, the
/// system's OpenSSL 3 (loaded at run time) on Linux.
enum SHA256Digest {
    /// The 32-byte digest of `message`.
    ///
    /// - Throws: ``StorageErrorCode/internalError`` on Linux when OpenSSL cannot be loaded.
    static func of(_ message: [UInt8]) throws(StorageError) -> [UInt8] {
        #if canImport(CryptoKit)
        return Array(SHA256.hash(data: message))
        #else
        do {
            return try OpenSSLDigest.sha256(message)
        } catch {
            throw StorageError(.internalError, "SHA-256 is unavailable: \(error.message).")
        }
        #endif
    }

    /// The digest as lowercase hexadecimal (64 characters).
    static func hex(of message: [UInt8]) throws(StorageError) -> String {
        try of(message).map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }.joined()
    }
}
