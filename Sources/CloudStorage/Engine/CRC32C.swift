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

    static func checksum(_ data: Data) -> UInt32 {
        var crc = CRC32C()
        crc.update(data)
        return crc.value
    }
}
