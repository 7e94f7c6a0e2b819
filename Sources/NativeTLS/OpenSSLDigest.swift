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
        guard TLSLibrary.isAvailable else {
            throw TLSError(.libraryUnavailable, TLSLibrary.unavailableReason ?? "OpenSSL is unavailable")
        }
        let api = OpenSSL.api
        var digest = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        let ok = message.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                api.EVP_Digest!(input.baseAddress, input.count, output.baseAddress, &size, api.EVP_sha256!(), nil) == 1
            }
        }
        api.ERR_clear_error!()
        guard ok, size == 32 else {
            throw TLSError(.other, "SHA-256 failed")
        }
        return digest
    }
}
