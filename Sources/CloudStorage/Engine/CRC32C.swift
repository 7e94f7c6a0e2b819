import CCloudStorage
import Foundation

/// A running CRC32C (Castagnoli) checksum, the one Cloud Storage keeps for
/// every object.
struct CRC32C: Sendable, Equatable {
    private(set) var value: UInt32 = 0

    /// Whether this machine computes it with CPU instructions.
    static var isHardwareAccelerated: Bool { cs_crc32c_is_hardware_accelerated() != 0 }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
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
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 64)
        defer { buffer.deallocate() }
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
}
