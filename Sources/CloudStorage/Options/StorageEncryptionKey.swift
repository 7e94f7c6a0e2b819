import Foundation

/// A customer-supplied AES-256 encryption key (CSEK): Cloud Storage encrypts an object with it,
/// keeps only its SHA-256 digest, and refuses to serve the object's bytes to a request that does
/// not carry it.
///
/// The key travels in `x-goog-encryption-*` headers (and `x-goog-copy-source-encryption-*` for
/// the source of a copy), so only ever over TLS to Cloud Storage. The key's bytes never appear
/// in a description, a debug description, a `dump` or an error: all of them show only the
/// key's SHA-256 digest, which identifies the key without revealing it (it is what Cloud Storage
/// reports in ``StorageMetadata/customerEncryption``).
///
/// ```swift
/// let key = try StorageEncryptionKey(base64: ProcessInfo.processInfo.environment["CSEK"] ?? "")
/// let secret = storage.reference(withPath: "vault/report.pdf").with(.init(encryptionKey: key))
/// _ = try await secret.putDataAsync(reportData)
/// let again = try await secret.data(maxSize: 1 << 20)
/// ```
public struct StorageEncryptionKey: Sendable, Equatable {
    /// The 32 bytes of the key.
    let bytes: [UInt8]
    /// The base64 SHA-256 digest of the key: what identifies it on the wire and in metadata.
    public let sha256: String

    /// A key from its 32 bytes.
    ///
    /// - Parameter bytes: The AES-256 key, exactly 32 bytes.
    /// - Throws: ``StorageErrorCode/invalidArgument`` when `bytes` is not 32 bytes long;
    ///   ``StorageErrorCode/internalError`` on Linux when OpenSSL (for SHA-256) cannot be loaded.
    public init(bytes: some Sequence<UInt8>) throws(StorageError) {
        let bytes = Array(bytes)
        guard bytes.count == 32 else {
            throw .invalidArgument(
                "A customer-supplied encryption key is an AES-256 key of 32 bytes; this one has \(bytes.count).")
        }
        self.bytes = bytes
        self.sha256 = Data(try SHA256Digest.of(bytes)).base64EncodedString()
    }

    /// A key from its standard base64 form (as `gcloud` and the other clients take it).
    ///
    /// - Parameter base64: 44 characters of standard base64 encoding 32 bytes.
    /// - Throws: ``StorageErrorCode/invalidArgument`` when `base64` is not base64 or does not
    ///   decode to 32 bytes (the message never repeats the text).
    public init(base64: String) throws(StorageError) {
        guard let data = Data(base64Encoded: base64) else {
            throw .invalidArgument("A customer-supplied encryption key must be standard base64 of 32 bytes.")
        }
        try self.init(bytes: data)
    }

    /// The key in base64, for the `x-goog-encryption-key` headers only.
    var base64: String { Data(bytes).base64EncodedString() }

    /// Equal when the keys are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.sha256 == rhs.sha256 }
}

extension StorageEncryptionKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `StorageEncryptionKey(sha256: …)`: the digest, never the key.
    public var description: String { "StorageEncryptionKey(sha256: \(sha256))" }
    /// The same as ``description``.
    public var debugDescription: String { description }
    /// A mirror with only the digest, so that `dump` and debuggers do not show the key.
    public var customMirror: Mirror { Mirror(self, children: ["sha256": sha256], displayStyle: .struct) }
}
