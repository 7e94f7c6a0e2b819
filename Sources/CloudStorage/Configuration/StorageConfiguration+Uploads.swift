import CloudStorageWire
extension StorageConfiguration {
    /// How uploads are split into requests: one multipart request for small
    /// ones, a resumable session of one or more requests for the rest.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// configuration.uploads.multipartThreshold = 1024 * 1024  // a session for anything above 1 MiB
    /// try configuration.uploads.setChunkSize(16 * 1024 * 1024)  // at most 16 MiB per request
    /// ```
    public struct Uploads: Sendable, Hashable {
        /// The unit in which resumable uploads must send every request but the
        /// last: 256 KiB.
        public static let chunkGranularity: Int64 = ProtocolLimits.chunkGranularity

        /// Uploads of at most this many bytes go as one multipart request; larger
        /// ones open a resumable session. Default 8 MiB. A negative threshold
        /// sends every upload, even an empty one, through a session.
        public var multipartThreshold: Int64 = 8 * 1024 * 1024

        /// The most bytes one request of a resumable upload carries, or nil
        /// (the default) to send everything that remains in one request.
        ///
        /// One request is fastest: every chunk boundary costs a round trip. Files
        /// and `Data` can be re-read from any offset, so after a failure or a
        /// pause the upload asks the server what it has and continues from there
        /// either way. Set a size, with ``setChunkSize(_:)``, to bound how much
        /// one failed request wastes.
        public private(set) var chunkSize: Int64? = nil

        /// When a file upload sends its parts on several connections at once (see ``Parallel``).
        public var parallel = Parallel()

        /// Creates the default upload settings.
        public init() {}

        /// Sets ``chunkSize``, refusing a size the protocols do not allow.
        ///
        /// Every request of a resumable upload but the last must carry a
        /// multiple of ``chunkGranularity`` (256 KiB), so a size is checked
        /// here, where it is chosen, rather than when an upload runs.
        ///
        /// ```swift
        /// var configuration = StorageConfiguration()
        /// try configuration.uploads.setChunkSize(16 * 1024 * 1024)  // 16 MiB per request
        /// try configuration.uploads.setChunkSize(nil)               // back to one request
        /// ```
        ///
        /// - Parameter size: A positive multiple of ``chunkGranularity``, or nil
        ///   for no bound.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for any other size;
        ///   ``chunkSize`` is then unchanged.
        public mutating func setChunkSize(_ size: Int64?) throws(StorageError) {
            if let size, !ProtocolLimits.isChunkSize(size) {
                throw .invalidSetting(
                    "uploads.chunkSize", must: "a positive multiple of \(ProtocolLimits.chunkGranularityText)", is: size)
            }
            chunkSize = size
        }
    }
}
