package import Foundation

/// Everything the emulator knows about one stored object, as persisted.
package struct ObjectRecord: Sendable, Codable, Equatable {
    package var bucket: String
    package var name: String
    package var generation: Int64 = 0
    package var metageneration: Int64 = 1
    package var size: Int64 = 0
    package var crc32c: UInt32 = 0
    /// The MD5 digest; nil when the store computes none (``ObjectStore/computesMD5``).
    package var md5: Data? = Data()
    package var timeCreated = Date(timeIntervalSince1970: 0)
    package var updated = Date(timeIntervalSince1970: 0)
    /// When this version stopped being the live one (versioned buckets keep it, noncurrent); nil while live.
    package var timeDeleted: Date?
    /// How many uploaded objects a composite object was composed of; nil for an uploaded (or copied) one.
    package var componentCount: Int?
    package var attributes = ObjectAttributes()

    package init(bucket: String, name: String) {
        self.bucket = bucket
        self.name = name
    }
}

/// The writable metadata of an object: what uploads and `PATCH` set.
package struct ObjectAttributes: Sendable, Codable, Equatable {
    package var contentType: String?
    package var cacheControl: String?
    package var contentDisposition: String?
    package var contentEncoding: String?
    package var contentLanguage: String?
    package var metadata: [String: String] = [:]
    package var downloadTokens: [String] = []
    /// The base64 SHA-256 of the customer-supplied key the object is encrypted with; the key
    /// itself is never kept (as in Cloud Storage, the digest is what later requests are checked against).
    package var customerKeySHA256: String?
    /// The Cloud KMS key the object is encrypted with (`kmsKeyName`).
    package var kmsKeyName: String?
    /// The storage class the object was written with; nil for the bucket's default, `STANDARD`.
    package var storageClass: String?

    package init() {}
}

/// A bucket as stored.
package struct BucketRecord: Sendable, Codable, Equatable {
    package var name: String
    package var timeCreated: Date
    /// When the bucket's settings last changed.
    package var updated: Date
    /// Bumped by every change of the bucket's settings.
    package var metageneration: Int64 = 1
    /// Whether replaced and deleted objects are kept as noncurrent versions (`versioning.enabled`).
    package var versioning = false
    /// Whether requests must name the project billed for them (`billing.requesterPays`).
    package var requesterPays = false

    package init(name: String, timeCreated: Date) {
        self.name = name
        self.timeCreated = timeCreated
        updated = timeCreated
    }

    private enum CodingKeys: String, CodingKey {
        case name, timeCreated, updated, metageneration, versioning, requesterPays
    }

    /// Reads the fields stores wrote before buckets had settings as defaults.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        timeCreated = try container.decode(Date.self, forKey: .timeCreated)
        updated = try container.decodeIfPresent(Date.self, forKey: .updated) ?? timeCreated
        metageneration = try container.decodeIfPresent(Int64.self, forKey: .metageneration) ?? 1
        versioning = try container.decodeIfPresent(Bool.self, forKey: .versioning) ?? false
        requesterPays = try container.decodeIfPresent(Bool.self, forKey: .requesterPays) ?? false
    }
}

/// Why a store refused an operation.
package struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable { case invalidName, notFound, io, conditionNotMet, bucketNotEmpty }
    package let kind: Kind
    package let description: String

    package static func invalidName(_ message: String) -> StoreError { .init(kind: .invalidName, description: message) }
    package static func notFound(_ message: String) -> StoreError { .init(kind: .notFound, description: message) }
    package static func io(_ message: String) -> StoreError { .init(kind: .io, description: message) }
    /// A write's condition did not hold for the object as it was when the store came to replace it.
    package static let conditionNotMet = StoreError(
        kind: .conditionNotMet, description: "At least one of the pre-conditions you specified did not hold.")
    /// A bucket that still holds objects (live or noncurrent) cannot be deleted.
    package static let bucketNotEmpty = StoreError(
        kind: .bucketNotEmpty, description: "The bucket you tried to delete is not empty.")
}

/// Where buckets, objects and their metadata live.
///
/// Implementations must be safe to call from many threads at once (the server
/// runs each connection on its own thread) and may block. Object bytes are
/// written to a ``StagingWriter`` first and become visible only through
/// ``commit(_:record:)``, atomically: a reader sees the old object or the new
/// one, never part of one. Generations increase strictly within a store.
///
/// Conditional writes (`ifGenerationMatch` and friends) hand their condition to
/// the write itself: the store evaluates it against the current version and
/// replaces or deletes that version in one step, under its own lock, so that two
/// writers conditioned on the same generation cannot both succeed.
///
/// In a bucket with versioning on (``BucketRecord/versioning``), the live version
/// that a commit replaces, a move takes away or a delete without a generation
/// removes is kept as a noncurrent version, with ``ObjectRecord/timeDeleted`` set;
/// deleting a generation removes that version for good. Records and readers
/// address any kept generation, live or noncurrent.
package protocol ObjectStore: Sendable {
    /// Creates a bucket; returns false if it already existed.
    func createBucket(_ name: String) throws(StoreError) -> Bool
    /// The bucket, if it exists.
    func bucket(_ name: String) -> BucketRecord?
    /// Every bucket, sorted by name.
    func buckets() -> [BucketRecord]
    /// Changes a bucket's settings under the store's lock; nil if there is no such bucket.
    func updateBucket(_ name: String, _ change: (inout BucketRecord) throws -> Void) throws -> BucketRecord?
    /// Deletes a bucket that holds no object, live or noncurrent; false if there is no such bucket.
    ///
    /// - Parameter condition: Asked, atomically with the deletion, about the bucket.
    /// - Throws: ``StoreError/bucketNotEmpty``, or ``StoreError/conditionNotMet`` when `condition` answers false.
    func deleteBucket(_ name: String, if condition: (BucketRecord) -> Bool) throws(StoreError) -> Bool
    /// A fresh place to stream an object's bytes into, for an object of `bucket`.
    func makeStagingWriter(bucket: String) throws(StoreError) -> any StagingWriter
    /// Makes the staged bytes the current version of `record.bucket`/`record.name`.
    ///
    /// Assigns the generation, metageneration 1 and the creation time; size and
    /// checksums come from the caller, who computed them while streaming.
    /// The writer is consumed (its bytes moved or discarded).
    ///
    /// - Parameter condition: Asked, atomically with the replacement, about the current version
    ///   (nil when there is none); when it answers false nothing changes, the staged bytes are
    ///   discarded and the commit throws ``StoreError/conditionNotMet``.
    func commit(
        _ writer: any StagingWriter, record: ObjectRecord, if condition: (ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord
    /// The current version of an object.
    func record(bucket: String, name: String) -> ObjectRecord?
    /// One generation of an object, live or noncurrent.
    func record(bucket: String, name: String, generation: Int64) -> ObjectRecord?
    /// Visits a bucket's objects in name order (the UTF-8 bytes of the names, as Cloud Storage
    /// lists them) from the first whose name is at or after `start`, for as long as `visit` asks:
    /// the live version of each name, or every version of it, noncurrent and live, in generation
    /// order (see ``ScanVersions``).
    ///
    /// After each version `visit` says whether to go on with the next, seek to the first name
    /// at or after a later one, or stop (see ``ScanStep``). Stores find each starting point in
    /// an ordered index (``ObjectIndex``) without looking at the names before it, so a listing
    /// page costs in proportion to what it visits, not to the bucket. `visit` runs under the
    /// store's lock: it must be quick and must not call the store. A missing bucket has no objects.
    func scan(bucket: String, from start: ObjectKey, versions: ScanVersions, _ visit: (ObjectRecord) -> ScanStep)
    /// Changes the metadata of an object's live version, or of `generation` when given (which
    /// may be noncurrent), under the store's lock; nil if there is no such version.
    func updateRecord(
        bucket: String, name: String, generation: Int64?, _ change: (inout ObjectRecord) throws -> Void
    ) throws -> ObjectRecord?
    /// Deletes the live version of an object, or `generation` when given (live or noncurrent);
    /// false if nothing matched.
    ///
    /// Without a generation, a versioned bucket keeps the live version as a noncurrent one;
    /// a generation is removed for good.
    ///
    /// - Parameter condition: Asked, atomically with the deletion, about the version matched;
    ///   when it answers false nothing is deleted and the call throws ``StoreError/conditionNotMet``.
    func delete(
        bucket: String, name: String, generation: Int64?, if condition: (ObjectRecord) -> Bool
    ) throws(StoreError) -> Bool
    /// Renames the live version of `source` to `destination` in one step: the destination
    /// gets a new generation with the source's bytes and metadata, and the source is gone
    /// (kept as noncurrent in a versioned bucket, as is a live destination it replaces).
    ///
    /// - Parameter condition: Asked, atomically with the move, about the source's live version
    ///   and the destination's (nil when there is none); when it answers false nothing changes
    ///   and the call throws ``StoreError/conditionNotMet``.
    /// - Returns: The destination's new record; nil if the source has no live version.
    func move(
        bucket: String, from source: String, to destination: String,
        if condition: (_ source: ObjectRecord, _ destination: ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord?
    /// Opens the bytes of this version of an object for reading.
    func openReader(_ record: ObjectRecord) throws(StoreError) -> any ObjectReader
    /// Whether uploads into this store hash MD5 (`md5Hash`); CRC32C and the size are always computed.
    var computesMD5: Bool { get }
}

extension ObjectStore {
    /// Commits unconditionally.
    package func commit(_ writer: any StagingWriter, record: ObjectRecord) throws(StoreError) -> ObjectRecord {
        try commit(writer, record: record, if: { _ in true })
    }

    /// Deletes unconditionally (but for `generation`).
    package func delete(bucket: String, name: String, generation: Int64?) throws(StoreError) -> Bool {
        try delete(bucket: bucket, name: name, generation: generation, if: { _ in true })
    }

    /// Changes the metadata of an object's live version.
    package func updateRecord(
        bucket: String, name: String, _ change: (inout ObjectRecord) throws -> Void
    ) throws -> ObjectRecord? {
        try updateRecord(bucket: bucket, name: name, generation: nil, change)
    }

    /// Stores that keep objects report an `md5Hash` for each, as Cloud Storage does.
    package var computesMD5: Bool { true }

    /// The live version of every object of a bucket, in name order: a whole scan, for small
    /// buckets and tests.
    package func records(bucket: String) -> [ObjectRecord] {
        wholeScan(bucket: bucket, versions: .live)
    }

    /// Every version of every object of a bucket, noncurrent and live, by name and then by
    /// generation (what `versions=true` lists): a whole scan, for small buckets and tests.
    package func versions(bucket: String) -> [ObjectRecord] {
        wholeScan(bucket: bucket, versions: .all(after: nil))
    }

    private func wholeScan(bucket: String, versions: ScanVersions) -> [ObjectRecord] {
        var records: [ObjectRecord] = []
        scan(bucket: bucket, from: ObjectKey(bytes: []), versions: versions) { record in
            records.append(record)
            return .next
        }
        return records
    }
}

/// Which versions of each name a scan visits (see ``ObjectStore/scan(bucket:from:versions:_:)``).
package enum ScanVersions: Sendable, Equatable {
    /// The live version of each name; names that only have noncurrent versions are passed over.
    case live
    /// Every version of each name, noncurrent ones and then the live one, in generation order
    /// (what `versions=true` lists). Where a page resumes: of the name the scan starts at, only
    /// the versions whose generation is after `after`, when given.
    case all(after: Int64?)
}

/// What a scan of a bucket's objects in name order does after visiting one (see
/// ``ObjectStore/scan(bucket:from:versions:_:)``).
package enum ScanStep: Sendable, Equatable {
    /// Visit the next object (or, in a scan of versions, the next version).
    case next
    /// Skip to the first object whose name is at or after this key (if that is after the
    /// current one; otherwise the next): e.g. past every name under a common prefix.
    case seek(ObjectKey)
    /// End the scan.
    case stop
}

/// Bytes of an object being uploaded, not yet visible.
package protocol StagingWriter: Sendable {
    /// Bytes written so far.
    var size: Int64 { get }
    /// Appends bytes.
    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError)
    /// Writes bytes at `offset`, over what is there; a gap before `offset` reads as zeros.
    /// The size becomes the largest end written.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError)
    /// Drops everything after the first `size` bytes.
    func truncate(to size: Int64) throws(StoreError)
    /// Appends the bytes `other` staged in `range`, leaving `other` as it was: how a multipart
    /// upload's Complete assembles parts it cannot take as they lie.
    ///
    /// - Throws: ``StoreError/io(_:)`` when `other` belongs to another kind of store, is this
    ///   writer, or holds fewer bytes than `range` names.
    func append(contentsOf other: any StagingWriter, range: Range<Int64>) throws(StoreError)
    /// Throws the staged bytes away (idempotent).
    func discard()
    /// Lets go of any file descriptor between writes; the next write or truncate takes it again.
    ///
    /// Upload sessions call it after every request, so that sessions nobody is sending
    /// to hold no descriptors (abandoned ones would otherwise exhaust the process's).
    func relinquish()
}

extension StagingWriter {
    /// Writers that hold no descriptor have nothing to let go of.
    package func relinquish() {}
}

/// Random access to one stored version of an object.
package protocol ObjectReader: Sendable {
    /// Reads up to `buffer.count` bytes at `offset`; 0 at the end.
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int
    /// Releases the reader's resources (idempotent).
    func close()
}

extension ObjectStore {
    /// Reads a whole object into memory (tests and small objects only).
    package func readAll(_ record: ObjectRecord) throws(StoreError) -> Data {
        let reader = try openReader(record)
        defer { reader.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var offset: Int64 = 0
        while true {
            var failure: StoreError?
            let count = buffer.withUnsafeMutableBytes { raw -> Int in
                do throws(StoreError) { return try reader.read(at: offset, into: raw) } catch {
                    failure = error
                    return 0
                }
            }
            if let failure { throw failure }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
            offset += Int64(count)
        }
    }
}

/// Object and bucket name rules shared by every store (those of GCS, plus NUL).
package enum NameRules {
    /// Checks an object name: 1–1024 bytes of UTF-8, no CR, LF or NUL, not `.` or `..`.
    package static func validateObjectName(_ name: String) throws(StoreError) {
        let bytes = name.utf8.count
        guard bytes > 0 else { throw .invalidName("The object name is empty.") }
        guard bytes <= 1024 else { throw .invalidName("The object name is longer than 1024 bytes.") }
        guard name != ".", name != ".." else { throw .invalidName("Object names cannot be '.' or '..'.") }
        guard !name.utf8.contains(where: { $0 == 0 || $0 == 0x0A || $0 == 0x0D }) else {
            throw .invalidName("Object names cannot contain NUL, carriage return or line feed characters.")
        }
    }

    /// Checks a bucket name as Cloud Storage does (cloud.google.com/storage/docs/buckets#naming):
    /// lowercase letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit;
    /// 3–63 characters, or up to 222 with dots, each dot-separated part at most 63; not a
    /// dotted-decimal IP address; not starting with `goog`; not containing `google` or a close
    /// misspelling of it (read with digits that pass for letters: `0`→o, `1`→l, `3`→e, `6` and `9`→g).
    package static func validateBucketName(_ name: String) throws(StoreError) {
        let bytes = Array(name.utf8)
        let allowed = { (byte: UInt8) in
            (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
                || byte == 0x2E
        }
        let alphanumeric = { (byte: UInt8) in (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard (3...222).contains(bytes.count), bytes.allSatisfy(allowed), let first = bytes.first,
            let last = bytes.last, alphanumeric(first), alphanumeric(last), !name.contains(".."),
            parts.allSatisfy({ $0.utf8.count <= 63 })
        else { throw .invalidName("Invalid bucket name: '\(name)'.") }
        let isAddress =
            parts.count == 4 && parts.allSatisfy { part in part.allSatisfy(\.isASCII) && UInt8(part) != nil }
        guard !isAddress, !name.hasPrefix("goog"), !soundsLikeGoogle(name) else {
            throw .invalidName(
                "Invalid bucket name: '\(name)'. Bucket names cannot be IP addresses, begin with"
                    + " 'goog' or contain 'google' or a close misspelling of it.")
        }
    }

    /// Whether `name`, its look-alike digits read as letters, contains `google`.
    private static func soundsLikeGoogle(_ name: String) -> Bool {
        let read = String(
            name.map { character -> Character in
                switch character {
                case "0": "o"
                case "1": "l"
                case "3": "e"
                case "6", "9": "g"
                default: character
                }
            })
        return read.contains("google")
    }

    /// Orders names by their UTF-8 bytes, as GCS lists them.
    package static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}

/// Strictly increasing generation numbers, microseconds since 1970 like GCS's.
package struct GenerationClock: Sendable {
    private var last: Int64 = 0

    package init() {}

    package mutating func next(now: Date = Date()) -> Int64 {
        let micros = Int64(now.timeIntervalSince1970 * 1_000_000)
        last = max(last + 1, micros)
        return last
    }
}
