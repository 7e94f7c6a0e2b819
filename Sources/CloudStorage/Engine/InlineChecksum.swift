import HTTPClient
import Synchronization

/// The CRC32C of an upload's file, computed from the bytes the transport reads
/// to send them, so that the file is read once instead of twice (issue 10).
///
/// A read extends the hash only with bytes that start exactly at the hashed
/// end: the first send of the file is sequential, so it hashes everything it
/// reads; a re-read of earlier bytes after a retry changes nothing until it
/// passes the hashed end, and a read that skips ahead (a resume from a
/// committed offset the hash has not reached) leaves the hash where it is.
/// ``value(of:)`` hashes whatever no read covered, from the hashed end to the
/// file's size, usually only the tail the engine sends last.
final class InlineChecksum: Sendable {
    private struct State {
        var crc = CRC32C()
        /// How many bytes from the start the running checksum covers.
        var hashedEnd: Int64 = 0
    }

    private let state = Mutex(State())
    /// The number of bytes the checksum is of.
    let size: Int64

    init(size: Int64) {
        self.size = size
    }

    /// Extends the checksum with the part of `bytes`, just read from `offset`, that starts at the
    /// hashed end: a read that reaches it from before (a retry re-reading from a committed offset
    /// catches up) hashes only what lies past it; one that starts beyond it changes nothing.
    ///
    /// Hashes under the lock: concurrent reads of one upload's file are rare (a retry racing an abandoned
    /// request), and hashing a read's buffer costs far less than reading it.
    func observe(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        state.withLock { state in
            let end = offset + Int64(bytes.count)
            guard offset <= state.hashedEnd, state.hashedEnd < end, end <= size else { return }
            let skip = Int(state.hashedEnd - offset)
            state.crc.update(UnsafeRawBufferPointer(rebasing: bytes[skip...]))
            state.hashedEnd = end
        }
    }

    /// How many bytes from the start the checksum covers now.
    var hashedEnd: Int64 { state.withLock { $0.hashedEnd } }

    /// The checksum if every byte has been hashed, without reading anything.
    var valueIfComplete: UInt32? {
        state.withLock { $0.hashedEnd == size ? $0.crc.value : nil }
    }

    /// The checksum of all ``size`` bytes: blocks to read and hash, with `read`, what no read
    /// covered. Call it from a blocking thread.
    ///
    /// - Parameter read: Reads exactly `count` bytes at an offset into a buffer, throwing if it cannot.
    func complete(
        reading read: (_ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) throws(StorageError) -> Void,
        blockSize: Int
    ) throws(StorageError) -> UInt32 {
        var (crc, start) = state.withLock { ($0.crc, $0.hashedEnd) }
        guard start < size else { return crc.value }
        try crc.update(reading: read, from: start, to: size, blockSize: blockSize)
        let finished = crc
        // Recorded unless reads covered the same bytes meanwhile (both then hold the same value).
        state.withLock { state in
            if state.hashedEnd == start {
                state.crc = finished
                state.hashedEnd = size
            }
        }
        return finished.value
    }
}

/// An upload's file as the transport sees it when it hashes what it reads:
/// every ``readExactly(into:count:at:)``, and every mapped read the transport reports with
/// ``observe(_:at:)``, also feeds the upload's ``InlineChecksum``.
struct HashingBodyFile: HTTPBodyFile {
    let file: ReadOnlyFile
    let checksum: InlineChecksum

    var descriptor: Int32 { file.descriptor }

    func readExactly(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws {
        try file.readExactly(into: buffer, count: count, at: offset)
        checksum.observe(UnsafeRawBufferPointer(start: buffer, count: count), at: offset)
    }

    func observe(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        checksum.observe(bytes, at: offset)
    }

    func endedEarlyError(at end: Int64) -> any Error {
        file.endedEarlyError(at: end)
    }

    func readFailedError(errno code: Int32) -> any Error {
        file.readFailedError(errno: code)
    }
}
