internal import CCloudStorage

/// Message digests computed by the system's OpenSSL 3, loaded at run time (Linux only).
///
/// ```swift
/// let digest = try OpenSSLDigest.sha256(Array(canonicalRequest.utf8))
/// ```
public enum OpenSSLDigest {
    /// The SHA-256 digest of `message` (32 bytes).
    ///
    /// - Parameter message: The bytes to hash.
    /// - Returns: The digest.
    /// - Throws: ``TLSError/Kind-swift.struct/libraryUnavailable`` without OpenSSL.
    public static func sha256(_ message: [UInt8]) throws(TLSError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let ok = message.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                cs_crypto_sha256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        guard ok == 1 else {
            throw TLSError(.libraryUnavailable, TLSLibrary.unavailableReason ?? "SHA-256 failed")
        }
        return digest
    }
}
