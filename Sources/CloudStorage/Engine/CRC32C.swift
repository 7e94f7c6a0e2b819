import CCRC32C
import Foundation
import SystemCalls

/// A running CRC32C (Castagnoli) checksum, the one Cloud Storage keeps for
/// every object.
package struct CRC32C: Sendable, Equatable {
    package private(set) var value: UInt32 = 0

    /// The checksum of no bytes; feed it with ``update(_:)-(UnsafeRawBufferPointer)``.
    package init() {}

    /// Whether this machine computes it with CPU instructions.
    static var isHardwareAccelerated: Bool { cs_crc32c_is_hardware_accelerated() != 0 }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        value = cs_crc32c_update(value, base, bytes.count)
    }

    mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Extends the checksum with the bytes from `start` to `end`, read with `read` block by block
    /// into one buffer of `blockSize` bytes. Blocking: call it off the cooperative pool.
    ///
    /// - Throws: What `read` throws; ``StorageErrorCode/cancelled`` once `stop` returns true.
    mutating func update(
        reading read: (_ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) throws(StorageError) -> Void,
        from start: Int64,
        to end: Int64,
        blockSize: Int,
        stop: () -> Bool = { false }
    ) throws(StorageError) {
        guard start < end else { return }
        // Pages of its own, so that the block goes back to the system with the call (see
        // MappedBuffer); the heap only if the system refuses them.
        if let mapped = MappedBuffer(byteCount: blockSize) {
            try update(reading: read, from: start, to: end, into: mapped.bytes, stop: stop)
        } else {
            let buffer = SystemCall.allocateFileBuffer(byteCount: blockSize)
            defer { buffer.deallocate() }
            try update(reading: read, from: start, to: end, into: buffer, stop: stop)
        }
    }

    private mutating func update(
        reading read: (_ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) throws(StorageError) -> Void,
        from start: Int64,
        to end: Int64,
        into buffer: UnsafeMutableRawBufferPointer,
        stop: () -> Bool
    ) throws(StorageError) {
        let blockSize = buffer.count
        var offset = start
        while offset < end {
            if stop() { throw .cancelled() }
            let count = Int(min(Int64(blockSize), end - offset))
            try read(buffer.baseAddress!, count, offset)
            update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            offset += Int64(count)
        }
    }

    static func checksum(_ data: Data) -> UInt32 {
        var crc = CRC32C()
        crc.update(data)
        return crc.value
    }

    /// The checksum of two byte sequences one after the other, from the checksum of each and the
    /// length of the second, without the bytes: what a composed object's checksum must be.
    ///
    /// Appending `n` bytes multiplies the first checksum by x^(8n) modulo the polynomial (the
    /// pre- and post-inversion of CRC32C cancel out), and adds the second one: CCRC32C's
    /// `cs_crc32c_combine`, at most 64 multiplications whatever `n`.
    ///
    /// - Parameters:
    ///   - first: The checksum of the first sequence.
    ///   - second: The checksum of the second sequence.
    ///   - secondLength: The length of the second sequence in bytes; not negative.
    /// - Returns: The checksum of the concatenation.
    static func combine(_ first: UInt32, _ second: UInt32, secondLength: Int64) -> UInt32 {
        cs_crc32c_combine(first, second, UInt64(max(0, secondLength)))
    }
}
