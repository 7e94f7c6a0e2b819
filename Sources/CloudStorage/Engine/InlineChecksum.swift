import HTTPClient
import Synchronization

/// The CRC32C of a range of an upload's file (all of it, or one part), computed from the bytes
/// the transport reads to send them, so that the file is read once instead of twice (issue 10).
///
/// A read extends the hash only with bytes that start exactly at the hashed
/// end: the first send of the range is sequential, so it hashes everything it
/// reads; a re-read of earlier bytes after a retry changes nothing until it
/// passes the hashed end, and a read that skips ahead (a resume from a
/// committed offset the hash has not reached) leaves the hash where it is.
/// ``value(reading:)`` hashes whatever no read covered, from the hashed end to the
/// range's end, usually only the tail the engine sends last.
final class InlineChecksum: Sendable {
    private struct State {
        var crc = CRC32C()
        /// Where the running checksum ends: it covers the bytes from the range's start to here.
        var hashedEnd: Int64
    }

    private let state: Mutex<State>
    /// The bytes of the file the checksum is of.
    let range: Range<Int64>

    /// The checksum of the file's first `size` bytes.
    convenience init(size: Int64) {
        self.init(of: 0..<size)
    }

    /// The checksum of the file's bytes in `range`.
    init(of range: Range<Int64>) {
        self.range = range
        state = Mutex(State(hashedEnd: range.lowerBound))
    }

    /// Extends the checksum with the part of `bytes`, just read from `offset`, that starts at the
    /// hashed end: a read that reaches it from before (a retry re-reading from a committed offset
    /// catches up, or a read of the bytes before the range) hashes only what lies past it, up to
    /// the range's end; one that starts beyond it changes nothing.
    ///
    /// Hashes under the lock: concurrent reads of one upload's file are rare (a retry racing an abandoned
    /// request), and hashing a read's buffer costs far less than reading it.
    func observe(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        state.withLock { state in
            let end = min(offset + Int64(bytes.count), range.upperBound)
            guard offset <= state.hashedEnd, state.hashedEnd < end else { return }
            let skip = Int(state.hashedEnd - offset)
            state.crc.update(UnsafeRawBufferPointer(rebasing: bytes[skip..<Int(end - offset)]))
            state.hashedEnd = end
        }
    }

    /// Where the bytes the checksum covers now end.
    var hashedEnd: Int64 { state.withLock { $0.hashedEnd } }

    /// The checksum if every byte has been hashed, without reading anything.
    var valueIfComplete: UInt32? {
        state.withLock { $0.hashedEnd == range.upperBound ? $0.crc.value : nil }
    }

    /// The checksum of the whole range: what no read covered is read from `file` and hashed on
    /// a blocking thread.
    func value(reading file: ReadOnlyFile) async throws(StorageError) -> UInt32 {
        if let value = valueIfComplete { return value }
        return try await BlockingIO.run { () throws(StorageError) -> UInt32 in
            try self.complete(
                reading: { (buffer, count, offset) throws(StorageError) in
                    try file.readExactly(into: buffer, count: count, at: offset)
                },
                blockSize: PreparedSource.checksumBlockSize)
        }
    }

    /// The checksum of the whole range: blocks to read and hash, with `read`, what no read
    /// covered. Call it from a blocking thread.
    ///
    /// - Parameter read: Reads exactly `count` bytes at an offset into a buffer, throwing if it cannot.
    func complete(
        reading read: (_ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) throws(StorageError) -> Void,
        blockSize: Int
    ) throws(StorageError) -> UInt32 {
        var (crc, start) = state.withLock { ($0.crc, $0.hashedEnd) }
        guard start < range.upperBound else { return crc.value }
        try crc.update(reading: read, from: start, to: range.upperBound, blockSize: blockSize)
        let finished = crc
        // Recorded unless reads covered the same bytes meanwhile (both then hold the same value).
        state.withLock { state in
            if state.hashedEnd == start {
                state.crc = finished
                state.hashedEnd = range.upperBound
            }
        }
        return finished.value
    }
}

/// An upload's file as the transport sees it when it hashes what it reads:
/// every ``readExactly(into:count:at:)`` also feeds the upload's ``InlineChecksum``.
struct HashingBodyFile: HTTPBodyFile {
    let file: ReadOnlyFile
    let checksum: InlineChecksum

    var descriptor: Int32 { file.descriptor }

    func readExactly(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws {
        try file.readExactly(into: buffer, count: count, at: offset)
        checksum.observe(UnsafeRawBufferPointer(start: buffer, count: count), at: offset)
    }

    func endedEarlyError(at end: Int64) -> any Error {
        file.endedEarlyError(at: end)
    }

    func readFailedError(errno code: Int32) -> any Error {
        file.readFailedError(errno: code)
    }
}
