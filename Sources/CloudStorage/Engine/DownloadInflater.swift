import HTTP1
import Synchronization

/// Inflates a gzip-stored object's bytes on their way from the response sink to the destination
/// (``RangedDownloadStateMachine/BodyCoding/inflated``), keeping its place across answers and
/// across the runs (pauses) of one download, since a resumed answer continues the stored bytes.
///
/// Called on the transport's thread, one call at a time, like the destination. The decoded bytes
/// reach the destination in pieces of at most 64 KiB, so memory stays bounded however much the
/// body inflates; `maxSize` holds the decoded bytes. A body that is not valid gzip is remembered,
/// not thrown at once: the stored bytes go on arriving so that the CRC32C can say whether they
/// were damaged on the way (``StorageErrorCode/nonMatchingChecksum``), and only bytes that
/// match it yet do not decode end as ``StorageErrorCode/undecodableContent``, from ``finish()``.
final class DownloadInflater: Sendable {
    private struct State: ~Copyable {
        var decoder: GzipDecoder?
        /// Decoded bytes written to the destination.
        var written: Int64 = 0
        /// Their CRC32C (what a body compressed on the way out is checked with).
        var crc = CRC32C()
        /// Whether any stored byte arrived.
        var started = false
        /// Why the body does not decode, once it did not.
        var failure: StorageError?
    }

    private let state = Mutex(State())
    /// The most decoded bytes the download may hold.
    let maxSize: Int64?

    init(maxSize: Int64?) {
        self.maxSize = maxSize
    }

    /// Decoded bytes written so far.
    var written: Int64 { state.withLock { $0.written } }
    /// The CRC32C of the decoded bytes written so far.
    var crc: UInt32 { state.withLock { $0.crc.value } }

    /// Forgets everything: the download starts over from the first stored byte.
    func reset() {
        state.withLock { $0 = State() }
    }

    /// Inflates the next stored bytes into `destination`.
    ///
    /// - Throws: ``StorageErrorCode/downloadSizeExceeded`` past ``maxSize``;
    ///   ``StorageErrorCode/undecodableContent`` when zlib cannot be loaded; what the destination throws.
    func write(_ bytes: UnsafeRawBufferPointer, to destination: any DownloadDestination) throws(StorageError) {
        // The decoder leaves the lock while the destination writes (which may wait for a consumer).
        let (offset0, crc0, failed) = state.withLock { state in
            state.started = true
            return (state.written, state.crc, state.failure != nil)
        }
        guard !failed else { return }
        var offset = offset0
        var crc = crc0
        var decoder = state.withLock { $0.decoder.take() }
        if decoder == nil {
            do throws(GzipError) {
                decoder = try GzipDecoder()
            } catch {
                throw StorageError(.undecodableContent, "Cannot decompress the gzip-stored object: \(error).")
            }
        }
        let maxSize = maxSize
        var failure: StorageError?
        do throws(StorageError) {
            try decoder!.decode(
                bytes,
                failure: { StorageError(.undecodableContent, "The gzip-stored object does not decompress: \($0).") }
            ) { (piece) throws(StorageError) in
                let end = offset + Int64(piece.count)
                if let maxSize, end > maxSize {
                    throw RangedDownloadStateMachine.sizeExceeded(total: end, maxSize: maxSize)
                }
                try destination.write(piece, at: offset)
                crc.update(piece)
                offset = end
            }
        } catch  where error.code == .undecodableContent {
            failure = error
        }
        state.withLock { state in
            state.decoder = decoder.take()
            state.written = offset
            state.crc = crc
            state.failure = failure
        }
    }

    /// Checks that every stored byte decoded and the last gzip member ended.
    ///
    /// - Throws: ``StorageErrorCode/undecodableContent`` for bytes that are not gzip, end inside
    ///   a member, or carry something after the last one.
    func finish() throws(StorageError) {
        let failure = state.withLock { (state) -> StorageError? in
            if let failure = state.failure { return failure }
            // An empty object stored with Content-Encoding gzip has nothing to decode.
            guard state.started else { return nil }
            do throws(GzipError) {
                try state.decoder?.finish()
                return nil
            } catch {
                return StorageError(
                    .undecodableContent, "The gzip-stored object ends inside a gzip member (truncated).")
            }
        }
        if let failure { throw failure }
    }
}
