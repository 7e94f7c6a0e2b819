import Foundation
import HTTPClient

/// Where an upload's bytes come from.
enum UploadSource: Sendable {
    /// Bytes in memory, sent from the `Data`'s own storage.
    case data(Data)
    /// A file, read when sent; it must not change until the upload ends.
    case file(URL)
    /// An `AsyncSequence` of bytes, read once as the upload sends it.
    case stream(UploadStream)
}

/// An ``UploadSource`` opened for sending: its size, its checksum, and request
/// bodies for any byte range, re-readable for retries.
struct PreparedSource: Sendable {
    private enum Bytes: Sendable {
        case data(Data)
        case file(ReadOnlyFile)
        case stream(UploadStream)
    }

    /// A checksum known before the upload starts, or one computed while it sends.
    private enum Checksum: Sendable {
        case known(UInt32)
        case pending(PendingChecksum)
        /// Hashed from the bytes the transport reads to send them; the rest when it is needed.
        case inline(ReadOnlyFile, InlineChecksum)
        /// Hashed by the stream as its bytes are read; complete once the sequence ended.
        case streamed(UploadStream)
    }

    private let bytes: Bytes
    let size: Int64
    /// Nil when checksums are off.
    private let checksum: Checksum?

    /// Sources larger than this (and than the one-request limit) are hashed while they send; smaller
    /// ones first. Below it the pass takes milliseconds, less than the extra request overlapping costs.
    static let overlapThreshold: Int64 = 32 * 1024 * 1024

    private init(bytes: Bytes, size: Int64, checksum: Checksum?) {
        self.bytes = bytes
        self.size = size
        self.checksum = checksum
    }

    /// A source whose checksum is being computed by `pending` (for tests of the engine).
    init(data: Data, pendingChecksum pending: PendingChecksum) {
        self.init(bytes: .data(data), size: Int64(data.count), checksum: .pending(pending))
    }

    /// The block in which a file is read for its checksum: large enough that
    /// system calls cost nothing, small enough to stay in cache.
    static let checksumBlockSize = 1 << 20

    /// Opens the source and, if asked, starts its checksum.
    ///
    /// With `hashingInline` (the transport reads file regions through their ``HTTPBodyFile``), a
    /// larger file is not read a second time: the bytes the transport reads for its first send are
    /// hashed as they pass, and ``crc32c()`` reads only what they did not cover.
    ///
    /// A source of at most `upFrontLimit` bytes is hashed before this returns
    /// (it goes in one request whose metadata carries the checksum; a file is
    /// read once for that, off the cooperative pool). A larger one is hashed
    /// on a blocking thread while the upload sends it: only the request that
    /// finalizes the session waits for the value (``crc32c()``), so the pass
    /// over the bytes and the transfer overlap.
    ///
    /// - Throws: ``StorageErrorCode/unreadableFile`` for a missing or
    ///   unreadable file, ``StorageErrorCode/fileChanged`` if it shrinks
    ///   meanwhile, ``StorageErrorCode/cancelled`` if the task is cancelled.
    static func prepare(
        _ source: UploadSource, computingChecksum: Bool, upFrontLimit: Int64, hashingInline: Bool = false
    ) async throws(StorageError) -> PreparedSource {
        let bytes: Bytes
        let size: Int64
        switch source {
        case .stream(let stream):
            // A sequence cannot be read twice: its checksum is computed as its bytes pass.
            if let declared = stream.declaredSize, declared < 0 {
                throw .invalidArgument("A streamed upload's size must be 0 bytes or more; it is \(declared).")
            }
            // Without a size, `Int64.max` stands for "not known until the sequence ends".
            return PreparedSource(
                bytes: .stream(stream), size: stream.declaredSize ?? .max,
                checksum: computingChecksum ? .streamed(stream) : nil)
        case .data(let data):
            bytes = .data(data)
            size = Int64(data.count)
        case .file(let url):
            let path = url.path
            let file = try await BlockingIO.run { () throws(StorageError) -> ReadOnlyFile in
                try ReadOnlyFile(path: path)
            }
            bytes = .file(file)
            size = file.size
        }
        guard computingChecksum else { return PreparedSource(bytes: bytes, size: size, checksum: nil) }
        if case .data(let data) = bytes, size <= upFrontLimit {
            return PreparedSource(bytes: bytes, size: size, checksum: .known(CRC32C.checksum(data)))
        }
        if case .file(let file) = bytes, size > upFrontLimit, hashingInline {
            return PreparedSource(bytes: bytes, size: size, checksum: .inline(file, InlineChecksum(size: size)))
        }
        let pending = PendingChecksum { stop in Self.checksum(of: bytes, stop: stop) }
        if size > upFrontLimit {
            return PreparedSource(bytes: bytes, size: size, checksum: .pending(pending))
        }
        // Waiting ends at once if the task is cancelled; the pass stops when `pending` goes.
        return PreparedSource(bytes: bytes, size: size, checksum: .known(try await pending.value()))
    }

    /// Computes the CRC32C of every byte on the calling (blocking) thread; a file is read in
    /// ``checksumBlockSize`` blocks into one reused buffer. Fails with `cancelled` once `stop` says so.
    private static func checksum(of bytes: Bytes, stop: () -> Bool) -> Result<UInt32, StorageError> {
        switch bytes {
        case .stream:
            return .failure(.internalError("A stream's checksum is computed as it is read."))
        case .data(let data):
            return .success(CRC32C.checksum(data))
        case .file(let file):
            var crc = CRC32C()
            do throws(StorageError) {
                try crc.update(
                    reading: { (buffer, count, offset) throws(StorageError) in
                        try file.readExactly(into: buffer, count: count, at: offset)
                    },
                    from: 0, to: file.size, blockSize: checksumBlockSize, stop: stop)
            } catch {
                return .failure(error)
            }
            return .success(crc.value)
        }
    }

    /// Whether the upload carries a checksum.
    var hasChecksum: Bool { checksum != nil }

    /// Whether the checksum is computed from the bytes the transport reads, not by a pass of its own.
    var hashesInline: Bool {
        if case .inline? = checksum { return true }
        return false
    }

    /// The CRC32C if it is known now: nil when checksums are off or it is still being computed.
    var knownCRC32C: UInt32? {
        switch checksum {
        case nil: return nil
        case .known(let value)?: return value
        case .pending(let pending)?: return pending.valueIfReady
        case .inline(_, let inline)?: return inline.valueIfComplete
        case .streamed?: return nil
        }
    }

    /// The CRC32C of every byte, waiting for it if it is still being computed; nil when checksums are off.
    ///
    /// - Throws: What reading the source for it threw, or ``StorageErrorCode/cancelled``.
    func crc32c() async throws(StorageError) -> UInt32? {
        switch checksum {
        case nil: return nil
        case .known(let value)?: return value
        case .pending(let pending)?: return try await pending.value()
        case .streamed(let stream)?: return await stream.crc32c()
        case .inline(let file, let inline)?: return try await inline.value(reading: file)
        }
    }

    /// Whether ``size`` is the object's size: false for a stream of unknown size (then it is
    /// `Int64.max`) until the sequence has ended.
    var sizeIsKnown: Bool { totalIfKnown != nil }

    /// The object's size, when it is known yet.
    var totalIfKnown: Int64? {
        guard let stream else { return size }
        return stream.knownTotal.withLock { $0 }
    }

    /// The opened file the bytes come from, when they come from one: its path and the identity
    /// it had when opened (what a ``StorageUploadSession`` records).
    var file: ReadOnlyFile? {
        if case .file(let file) = bytes { return file }
        return nil
    }

    /// The stream the bytes come from, when they come from one.
    var stream: UploadStream? {
        if case .stream(let stream) = bytes { return stream }
        return nil
    }

    /// The body for `length` bytes from `offset` (of a stream: bytes it has buffered).
    func body(from offset: Int64, length: Int64) async -> HTTPRequestBody {
        guard length > 0 else { return .empty }
        switch bytes {
        case .stream(let stream):
            return await stream.body(from: offset, length: length)
        case .data(let data):
            let start = data.startIndex + Int(offset)
            return .data(data[start..<(start + Int(length))])
        case .file(let file):
            if case .inline(_, let inline)? = checksum {
                let hashing = HashingBodyFile(file: file, checksum: inline)
                return HTTPRequestBody(segments: [.fileRegion(hashing, offset: offset, length: length)])
            }
            return HTTPRequestBody(segments: [.fileRegion(file, offset: offset, length: length)])
        }
    }

    /// Checks that a file source has not changed since it was opened.
    ///
    /// - Throws: ``StorageErrorCode/fileChanged``.
    func checkUnchanged() async throws(StorageError) {
        guard case .file(let file) = bytes else { return }
        try await BlockingIO.run { () throws(StorageError) in try file.checkUnchanged() }
    }
}
