extension StorageConfiguration {
    /// How large file downloads are cut into slices that download in parallel.
    ///
    /// A file download (``StorageReference/write(toFile:preconditions:)``,
    /// ``StorageReference/writeAsync(toFile:preconditions:onProgress:)``) of an object of at least
    /// ``slicingThreshold`` bytes runs ``sliceCount`` ranged requests at once, each on its own
    /// connection, writing its bytes where they belong in the file. On a real network one
    /// connection is capped by latency and per-stream limits far below what the server and the
    /// link carry; several connections add up.
    ///
    /// The first request is the same as for any download; its answer says the object's size,
    /// generation, encoding and CRC32C, so no metadata request is added. It keeps the first
    /// slice, and the others ask for the same generation (`ifGenerationMatch`): an object
    /// replaced meanwhile ends the download with ``StorageErrorCode/objectChanged``, never a
    /// file mixing two versions. Each slice resumes from its own bytes after a failure; the
    /// object's CRC32C is checked by combining the slices' checksums, without reading the file
    /// again. Objects stored gzip-compressed, downloads into memory, streams, ranges and
    /// Firebase Storage endpoints (which cannot pin a generation) always use one connection.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// configuration.downloads.slicingThreshold = 64 * 1024 * 1024  // slice from 64 MiB
    /// try configuration.downloads.setSliceCount(16)
    /// let storage = Storage(bucket: "my-bucket", configuration: configuration)
    /// ```
    public struct Downloads: Sendable, Hashable {
        /// The most slices one download may use.
        public static let maxSliceCount = 64

        /// File downloads of objects of at least this many bytes are sliced. Default 150 MiB,
        /// where `gcloud storage` starts slicing: below it the extra requests' round trips
        /// and connections cost more than a second stream gains. `Int64.max` never slices.
        public var slicingThreshold: Int64 = 150 * 1024 * 1024

        /// How many ranged requests a sliced download runs at once, each for about
        /// 1 / `sliceCount` of the object. Default 16, measured: across the emulator shaped to
        /// 50 MB/s per connection and a 10 ms round trip, a 2 GiB download reached 394 MB/s
        /// with 8 slices and 775 MB/s with 16 (`gcloud storage cp`: 310 MB/s), and on
        /// unshaped loopback 16 slices are as fast as one stream. The memory a download holds
        /// is `sliceCount` transport buffers. 1 never slices. Set with ``setSliceCount(_:)``.
        public private(set) var sliceCount = 16

        /// Creates the default download settings.
        public init() {}

        /// Sets ``sliceCount``.
        ///
        /// ```swift
        /// var configuration = StorageConfiguration()
        /// try configuration.downloads.setSliceCount(1)  // one connection per download
        /// ```
        ///
        /// - Parameter count: From 1 (no slicing) to ``maxSliceCount``.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for any other count; ``sliceCount``
        ///   is then unchanged.
        public mutating func setSliceCount(_ count: Int) throws(StorageError) {
            guard (1...Self.maxSliceCount).contains(count) else {
                throw .invalidSetting("downloads.sliceCount", must: "from 1 to \(Self.maxSliceCount)", is: count)
            }
            sliceCount = count
        }
    }
}
