public import Foundation

/// The metadata of a stored object: the headers it is served with, custom
/// key-value pairs, and what the server reports about it.
///
/// Set the writable properties (``contentType``, ``cacheControl``,
/// ``contentDisposition``, ``contentEncoding``, ``contentLanguage``,
/// ``customMetadata``, and on Google Cloud Storage endpoints ``storageClass``,
/// ``customTime``, ``temporaryHold``, ``eventBasedHold`` and ``retention``) to
/// send them with an upload; properties left nil are not sent, and the server
/// chooses; without a ``contentType``,
/// ``StorageReference/putFile(from:metadata:preconditions:)`` infers one from the file's
/// extension, and other uploads store `application/octet-stream`. The other
/// properties are filled in from the server's answer (the object resource of
/// the Google Cloud Storage JSON API, or Firebase Storage's metadata, which
/// has fewer fields) and are read-only.
///
/// Firebase Storage has no storage classes, custom times, holds or retention:
/// an upload to a Firebase endpoint that sets one of them fails with
/// ``StorageErrorCode/invalidArgument`` before it sends anything.
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
    /// The storage class, such as `STANDARD`, `NEARLINE`, `COLDLINE` or `ARCHIVE`; nil on upload
    /// stores the bucket's default class (Google Cloud Storage only).
    ///
    /// An existing object changes class by being rewritten: copy it onto itself with
    /// ``StorageReference/copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)``
    /// and metadata naming the new class. A metadata update cannot change it.
    public var storageClass: String?
    /// A date of the user's choosing that lifecycle rules can act on (Google Cloud Storage
    /// only). Once set it can only move later, never back or away.
    public var customTime: Date?
    /// Whether a temporary hold keeps the object from being deleted or replaced until it is
    /// released (Google Cloud Storage only).
    public var temporaryHold: Bool?
    /// Whether an event-based hold keeps the object from being deleted or replaced, and
    /// defers its retention period until the hold is released (Google Cloud Storage only).
    public var eventBasedHold: Bool?
    /// The object's own retention: the time before which it cannot be deleted or replaced
    /// (Google Cloud Storage, in buckets that allow object retention).
    public var retention: Retention?

    // MARK: Set by the server

    /// The bucket the object is stored in.
    public package(set) var bucket: String?
    /// The object's full path in the bucket, such as `images/space.jpg`: its name exactly as the
    /// server sent it.
    public package(set) var path: String?
    /// The last segment of ``path``, such as `space.jpg` (as in the Firebase SDKs,
    /// not the full object name): the text after its last slash, empty for a name
    /// that ends in one (`photos/`), never a renamed neighbour.
    public package(set) var name: String?
    /// The object's size in bytes; 0 until the server has reported it.
    public package(set) var size: Int64 = 0
    /// The MD5 digest of the object's bytes, base64-encoded as the server sent
    /// it; nil for composite objects and when not reported.
    public package(set) var md5Hash: String?
    /// The CRC32C checksum of the object's bytes, as the server sent it: base64
    /// of four big-endian bytes from Cloud Storage, a decimal number from the
    /// Firebase emulator.
    public package(set) var crc32c: String?
    /// The object's generation: it changes whenever the object's data is replaced.
    public package(set) var generation: Int64?
    /// The metadata generation: it changes whenever the object's metadata changes.
    public package(set) var metageneration: Int64?
    /// When the object was created.
    public package(set) var timeCreated: Date?
    /// When the object's metadata was last changed.
    public package(set) var updated: Date?
    /// The object's ID (`{bucket}/{name}/{generation}` on Google Cloud Storage).
    public package(set) var id: String?
    /// The HTTP entity tag of the object's metadata.
    public package(set) var etag: String?
    /// How many objects a composed object was made from, counting their own components;
    /// nil for an object that was not composed.
    public package(set) var componentCount: Int?
    /// The Cloud KMS key that encrypts the object, when one does.
    public package(set) var kmsKeyName: String?
    /// How the object is encrypted when its key was supplied by the customer.
    public package(set) var customerEncryption: CustomerEncryption?
    /// When this generation stopped being the live object (versioned buckets).
    public package(set) var timeDeleted: Date?
    /// When the object's storage class last changed.
    public package(set) var timeStorageClassUpdated: Date?
    /// When the object was finalized (its bytes were complete).
    public package(set) var timeFinalized: Date?
    /// When a soft-deleted object was deleted; nil for a live object.
    public package(set) var softDeleteTime: Date?
    /// When a soft-deleted object will be deleted for good; nil for a live object.
    public package(set) var hardDeleteTime: Date?

    /// The download tokens Firebase Storage reports (its `downloadTokens`
    /// field, comma-separated on the wire); empty from Cloud Storage.
    ///
    /// Internal, as in the Firebase SDKs, which expose tokens only inside
    /// download URLs; kept for building those.
    package var downloadTokens: [String] = []

    /// Creates empty metadata: nothing set, nothing reported.
    ///
    /// ```swift
    /// var metadata = StorageMetadata()
    /// metadata.contentType = "application/pdf"
    /// ```
    public init() {}

    /// ``crc32c`` as a number, whichever of the two forms the server sent, or
    /// nil when absent or unreadable.
    package var crc32cValue: UInt32? {
        crc32c.flatMap(CRC32CEncoding.parse)
    }

    /// The writable fields that only Google Cloud Storage has, by their wire names; empty when none is set.
    package var gcsOnlyFieldsSet: [String] {
        [
            ("storageClass", storageClass != nil), ("customTime", customTime != nil),
            ("temporaryHold", temporaryHold != nil), ("eventBasedHold", eventBasedHold != nil),
            ("retention", retention != nil),
        ].compactMap { $0.1 ? $0.0 : nil }
    }

    /// Refuses fields the endpoint's service cannot store, before any request goes out.
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` naming them, on a Firebase endpoint
    ///   given a field only Google Cloud Storage has.
    package func validate(for endpoint: StorageEndpoint) throws(StorageError) {
        try Self.refuse(gcsOnlyFieldsSet, on: endpoint)
    }

    /// Throws when `fields` is not empty and `endpoint` is not Google Cloud Storage.
    package static func refuse(_ fields: [String], on endpoint: StorageEndpoint) throws(StorageError) {
        guard !fields.isEmpty, endpoint.wireProtocol != .gcsJSON else { return }
        // Dropping them would store an object without the hold or retention that was asked for.
        throw .invalidArgument(
            "Firebase Storage has no \(fields.joined(separator: ", ")) (they are Google Cloud Storage object fields); "
                + "use a Google Cloud Storage endpoint.")
    }
}

extension StorageMetadata {
    /// An object's own retention: until ``retainUntilTime`` the object cannot be deleted or
    /// replaced.
    ///
    /// ```swift
    /// var metadata = StorageMetadata()
    /// metadata.retention = .init(mode: .unlocked, retainUntilTime: Date().addingTimeInterval(86_400))
    /// _ = try await ref.putDataAsync(contract, metadata: metadata)
    /// ```
    public struct Retention: Sendable, Hashable {
        /// Whether the retention can still be shortened or removed.
        public var mode: Mode
        /// The time before which the object cannot be deleted or replaced.
        public var retainUntilTime: Date

        /// Creates a retention.
        ///
        /// ```swift
        /// let retention = StorageMetadata.Retention(mode: .locked, retainUntilTime: expiry)
        /// ```
        ///
        /// - Parameters:
        ///   - mode: ``Mode/unlocked`` or ``Mode/locked``.
        ///   - retainUntilTime: The time before which the object is kept.
        public init(mode: Mode, retainUntilTime: Date) {
            self.mode = mode
            self.retainUntilTime = retainUntilTime
        }

        /// A retention mode, as the JSON API spells it (`Unlocked`, `Locked`).
        ///
        /// A struct rather than an enum so that a mode the service adds later is read, not refused.
        public struct Mode: RawRepresentable, Sendable, Hashable {
            /// The JSON API's name of the mode.
            public var rawValue: String

            /// A mode by its JSON API name.
            ///
            /// - Parameter rawValue: Such as `Unlocked`.
            public init(rawValue: String) { self.rawValue = rawValue }

            /// The retention time can be extended, and shortened or removed by an update that
            /// sets ``StorageMetadataUpdate/overrideUnlockedRetention``.
            public static let unlocked = Mode(rawValue: "Unlocked")
            /// The retention time can only be extended.
            public static let locked = Mode(rawValue: "Locked")
        }
    }

    /// How an object encrypted with a customer-supplied key is encrypted.
    public struct CustomerEncryption: Sendable, Hashable {
        /// The encryption algorithm, such as `AES256`.
        public let encryptionAlgorithm: String
        /// The base64 SHA-256 digest of the key, which identifies it without revealing it.
        public let keySHA256: String
    }
}

/// The text forms of a CRC32C checksum on the wire.
package enum CRC32CEncoding {
    /// Base64 of the four big-endian bytes: the form of `x-goog-hash` and of
    /// the `crc32c` field in Cloud Storage.
    ///
    /// - Parameter value: The checksum.
    /// - Returns: Eight characters of base64, such as `4waSgw==`.
    package static func base64(_ value: UInt32) -> String {
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
    package static func parse(_ text: String) -> UInt32? {
        if let data = Data(base64Encoded: text), data.count == 4 {
            return data.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return UInt32(text)
    }
}
