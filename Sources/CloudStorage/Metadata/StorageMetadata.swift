public import Foundation

/// The metadata of a stored object: the headers it is served with, custom
/// key-value pairs, and what the server reports about it.
///
/// Set the writable properties (``contentType``, ``cacheControl``,
/// ``contentDisposition``, ``contentEncoding``, ``contentLanguage`` and
/// ``customMetadata``) to send them with an upload; properties left nil are
/// not sent, and the server chooses; without a ``contentType``,
/// ``StorageReference/putFile(from:metadata:preconditions:)`` infers one from the file's
/// extension, and other uploads store `application/octet-stream`. The other
/// properties are filled in from the
/// server's answer after an upload and are read-only.
///
/// ```swift
/// var metadata = StorageMetadata()
/// metadata.contentType = "image/jpeg"
/// metadata.cacheControl = "public, max-age=3600"
/// metadata.customMetadata = ["location": "Yosemite, CA, USA"]
/// let stored = try await spaceRef.putDataAsync(imageData, metadata: metadata)
/// print(stored.path ?? "", stored.size, stored.md5Hash ?? "")
/// ```
public struct StorageMetadata: Sendable, Hashable {
    // MARK: Writable

    /// The media type the object is served with, such as `image/jpeg`.
    public var contentType: String?
    /// The `Cache-Control` header the object is served with, such as
    /// `public, max-age=3600`.
    public var cacheControl: String?
    /// The `Content-Disposition` header the object is served with, such as
    /// `attachment; filename="report.pdf"`.
    public var contentDisposition: String?
    /// The `Content-Encoding` of the stored bytes, such as `gzip`.
    public var contentEncoding: String?
    /// The `Content-Language` of the object, such as `en`.
    public var contentLanguage: String?
    /// Custom key-value pairs stored with the object; empty when there are none.
    public var customMetadata: [String: String] = [:]

    // MARK: Set by the server

    /// The bucket the object is stored in.
    public internal(set) var bucket: String?
    /// The object's full path in the bucket, such as `images/space.jpg`: its name exactly as the
    /// server sent it.
    public internal(set) var path: String?
    /// The last segment of ``path``, such as `space.jpg` (as in the Firebase SDKs,
    /// not the full object name): the text after its last slash, empty for a name
    /// that ends in one (`photos/`), never a renamed neighbour.
    public internal(set) var name: String?
    /// The object's size in bytes; 0 until the server has reported it.
    public internal(set) var size: Int64 = 0
    /// The MD5 digest of the object's bytes, base64-encoded as the server sent
    /// it; nil for composite objects and when not reported.
    public internal(set) var md5Hash: String?
    /// The CRC32C checksum of the object's bytes, as the server sent it: base64
    /// of four big-endian bytes from Cloud Storage, a decimal number from the
    /// Firebase emulator.
    public internal(set) var crc32c: String?
    /// The object's generation: it changes whenever the object's data is replaced.
    public internal(set) var generation: Int64?
    /// The metadata generation: it changes whenever the object's metadata changes.
    public internal(set) var metageneration: Int64?
    /// When the object was created.
    public internal(set) var timeCreated: Date?
    /// When the object's metadata was last changed.
    public internal(set) var updated: Date?

    /// The download tokens Firebase Storage reports (its `downloadTokens`
    /// field, comma-separated on the wire); empty from Cloud Storage.
    ///
    /// Internal, as in the Firebase SDKs, which expose tokens only inside
    /// download URLs; kept for building those.
    var downloadTokens: [String] = []

    /// Creates empty metadata: nothing set, nothing reported.
    ///
    /// ```swift
    /// var metadata = StorageMetadata()
    /// metadata.contentType = "application/pdf"
    /// ```
    public init() {}

    /// ``crc32c`` as a number, whichever of the two forms the server sent, or
    /// nil when absent or unreadable.
    var crc32cValue: UInt32? {
        crc32c.flatMap(CRC32CEncoding.parse)
    }
}

/// The text forms of a CRC32C checksum on the wire.
enum CRC32CEncoding {
    /// Base64 of the four big-endian bytes: the form of `x-goog-hash` and of
    /// the `crc32c` field in Cloud Storage.
    ///
    /// - Parameter value: The checksum.
    /// - Returns: Eight characters of base64, such as `4waSgw==`.
    static func base64(_ value: UInt32) -> String {
        let bytes: [UInt8] = [
            UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
            UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value),
        ]
        return Data(bytes).base64EncodedString()
    }

    /// Reads a checksum from base64 of four big-endian bytes or, failing that,
    /// from a decimal number (the Firebase emulator's form).
    ///
    /// The two forms cannot be confused: four bytes of base64 are eight
    /// characters ending in `==`, which no decimal number is.
    ///
    /// - Parameter text: The text the server sent.
    /// - Returns: The checksum, or nil when the text is neither form.
    static func parse(_ text: String) -> UInt32? {
        if let data = Data(base64Encoded: text), data.count == 4 {
            return data.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return UInt32(text)
    }
}
