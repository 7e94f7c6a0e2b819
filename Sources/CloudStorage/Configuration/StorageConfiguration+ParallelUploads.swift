extension StorageConfiguration.Uploads {
    /// When and how a file upload is split into parts sent on several connections at once,
    /// through Cloud Storage's XML API multipart upload, and stored as one ordinary object.
    ///
    /// A file of at least ``threshold`` bytes uploaded to a Cloud Storage endpoint goes up in
    /// parts of ``partSize`` bytes, ``connections`` at a time; each part is checked with its
    /// CRC32C (over https hashed as it is encrypted, against the hash the server answers; over
    /// plain HTTP hashed first, for the server to check), and the stored object with their
    /// combined CRC32C. A pause keeps the parts already
    /// stored; a cancel or a definitive failure aborts the upload, which leaves nothing on the
    /// server. Firebase endpoints, uploads with preconditions, customer-supplied or KMS keys, a
    /// predefined ACL or metadata the XML API cannot carry (custom time, holds, retention), and
    /// servers that refuse the protocol go in one stream as before.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// configuration.uploads.parallel.threshold = 64 * 1024 * 1024
    /// try configuration.uploads.parallel.setPartSize(16 * 1024 * 1024)
    /// try configuration.uploads.parallel.setConnections(8)
    /// ```
    public struct Parallel: Sendable, Hashable {
        /// Files of at least this many bytes go up in parts; default 128 MiB (provisional).
        /// `Int64.max` sends every file in one stream.
        public var threshold: Int64 = 128 * 1024 * 1024

        /// The bytes of every part but the last; default 32 MiB (provisional). Cloud Storage
        /// refuses parts below 5 MiB but the last when the upload completes. A file that would
        /// need more than 10,000 parts gets larger ones.
        public private(set) var partSize: Int64 = 32 * 1024 * 1024

        /// How many parts go up at once, each on its own connection; default 16, measured:
        /// across the emulator shaped to 50 MB/s per connection and a 10 ms round trip, a
        /// 2 GiB upload in 32 MiB parts took 6.2 s on 8 connections, 4.9 s on 12 and 4.8 s on
        /// 16 (445 MB/s; python-storage's `upload_chunks_concurrently`, 8 workers, 297 MB/s in the
        /// same conditions). Each connection costs a socket (over plain HTTP also a 1 MiB
        /// checksum block), not a part's bytes.
        public private(set) var connections = 16

        /// The most parts one upload may have: Cloud Storage's limit.
        public static let maximumPartCount: Int64 = 10_000

        /// Creates the default settings.
        public init() {}

        /// Sets ``partSize``.
        ///
        /// ```swift
        /// try configuration.uploads.parallel.setPartSize(64 * 1024 * 1024)
        /// ```
        ///
        /// - Parameter size: A positive number of bytes, at most 5 GiB (Cloud Storage's largest part).
        /// - Throws: ``StorageErrorCode/invalidArgument`` for any other size; ``partSize`` is then unchanged.
        public mutating func setPartSize(_ size: Int64) throws(StorageError) {
            guard size > 0, size <= 5 * 1024 * 1024 * 1024 else {
                throw .invalidSetting(
                    "uploads.parallel.partSize", must: "between 1 byte and 5 GiB", is: size)
            }
            partSize = size
        }

        /// Sets ``connections``.
        ///
        /// ```swift
        /// try configuration.uploads.parallel.setConnections(8)
        /// ```
        ///
        /// - Parameter count: From 1 to 64.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for any other count; ``connections`` is then unchanged.
        public mutating func setConnections(_ count: Int) throws(StorageError) {
            guard (1...64).contains(count) else {
                throw .invalidSetting("uploads.parallel.connections", must: "from 1 to 64", is: count)
            }
            connections = count
        }

        /// The part size for a file of `size` bytes: ``partSize``, or larger so that no more than
        /// ``maximumPartCount`` parts are needed.
        func partSize(forFileOf size: Int64) -> Int64 {
            max(partSize, (size + Self.maximumPartCount - 1) / Self.maximumPartCount)
        }
    }
}
