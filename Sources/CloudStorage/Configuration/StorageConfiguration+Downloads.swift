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
    /// generation, encoding and CRC32C, so no metadata request is added. That connection reads
    /// alone for ``SlicingProbe/duration``; if it ran at ``SlicingProbe/rate`` or more (a
    /// connection as fast as the host, as on loopback), the download stays on it, since slices
    /// writing into one file would only contend. Otherwise the bytes still to come are cut into
    /// slices: the first connection keeps the first, and the others ask for the same generation
    /// (`ifGenerationMatch`): an object
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
        /// 1 / `sliceCount` of the bytes still to come. Default 16, measured: across the
        /// emulator shaped to 50 MB/s per connection and a 10 ms round trip, a 2 GiB download
        /// reached 394 MB/s with 8 slices and 775 MB/s with 16 (`gcloud storage cp`: 310 MB/s).
        /// The memory a download holds is `sliceCount` transport buffers. 1 never slices. Set
        /// with ``setSliceCount(_:)``.
        public private(set) var sliceCount = 16

        /// How a download that may be sliced first finds out whether one connection is enough;
        /// nil slices at the first answer, however fast its connection. Default
        /// ``SlicingProbe/init()``: 50 ms, 600 MB/s, 0.75 processors.
        ///
        /// Measured on unshaped loopback (2 cores, 1 GiB, 5 interleaved rounds): slicing at once
        /// took 1.01 s where one connection took 0.74 s, the slices' writes into one file
        /// contending for its lock; the probe keeps such downloads on one connection.
        public var slicingProbe: SlicingProbe? = SlicingProbe()

        /// How long the first connection of a download that may be sliced reads alone, and what
        /// makes it enough: its speed, or the client's own processor load.
        public struct SlicingProbe: Sendable, Hashable {
            /// How long the first connection reads alone, from its answer's head; default 50 ms.
            public let duration: Duration
            /// Bytes per second at or above which the first connection is enough: the download
            /// then stays on it. Default 600 MB/s, faster than one stream to Cloud Storage gets.
            public let rate: Int64
            /// The processors' worth of time the whole process may use during the probe for a
            /// slower connection to be sliced (0.75: three quarters of one processor's time);
            /// above it the client's own work, decrypting and writing, holds the rate back, not
            /// the connection, and the download stays on it. nil slices by the rate alone.
            ///
            /// Measured on 2026-11-28 (2 cores, a TLS emulator on loopback, 1 GiB to tmpfs, 3
            /// rounds): on a busy machine the first connection read at 500–700 MB/s with the
            /// client using about one processor, and slicing then used 1.98 CPU-s/GiB against
            /// 1.48 on one connection, for no more speed (705 against 743 MB/s).
            public let maximumClientLoad: Double?

            /// 50 ms, 600 MB/s, 0.75 processors.
            public init() {
                duration = .milliseconds(50)
                rate = 600_000_000
                maximumClientLoad = 0.75
            }

            /// A probe of `duration` that finds one connection of `rate` bytes per second or
            /// more enough, or one during which the process kept more than `maximumClientLoad`
            /// processors busy.
            ///
            /// - Throws: ``StorageErrorCode/invalidArgument`` for a negative duration, a rate
            ///   below 1, or a load that is not positive.
            public init(duration: Duration, rate: Int64, maximumClientLoad: Double? = 0.75) throws(StorageError) {
                guard duration >= .zero else {
                    throw .invalidSetting("downloads.slicingProbe.duration", must: "at least zero", is: duration)
                }
                guard rate >= 1 else {
                    throw .invalidSetting("downloads.slicingProbe.rate", must: "at least 1 byte per second", is: rate)
                }
                if let load = maximumClientLoad, !(load > 0 && load.isFinite) {
                    throw .invalidSetting(
                        "downloads.slicingProbe.maximumClientLoad", must: "a positive number of processors", is: load)
                }
                self.duration = duration
                self.rate = rate
                self.maximumClientLoad = maximumClientLoad
            }
        }

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
