import CCRC32C
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

@Suite("CRC32C")
struct CRC32CTests {
    @Test func standardCheckValues() {
        #expect(CRC32C.checksum(Data("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum(Data()) == 0)
        #expect(CRC32C.checksum(Data(repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum(Data(repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum(Data((0..<32).map { UInt8($0) })) == 0x46DD_794E)
        #expect(CRC32C.checksum(Data((0..<32).map { UInt8(31 - $0) })) == 0x113F_DB5C)
    }

    // Lengths around the three-stream blocks (3 x 256 and 3 x 8192 bytes), the folding's
    // 128-byte stride (folding starts at two strides) and its 16-byte blocks, and their multiples.
    @Test(arguments: [
        0, 1, 7, 8, 9, 23, 24, 25, 255, 256, 257, 271, 272, 273, 383, 384, 767, 768, 769, 1000, 1543, 24_575,
        24_576, 24_577, 49_919, 65_537, 1_000_003,
    ])
    func acceleratedPathMatchesThePortableOne(length: Int) {
        var generator = SeededGenerator(seed: UInt64(length))
        let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for start in 0..<min(8, max(1, length)) {
            let slice = bytes[start...]
            let fast = slice.withUnsafeBytes { cs_crc32c_update(0, $0.baseAddress, $0.count) }
            let portable = slice.withUnsafeBytes { cs_crc32c_update_portable(0, $0.baseAddress, $0.count) }
            #expect(fast == portable, "length \(length), misaligned by \(start)")
        }
    }

    /// CRC32C by its definition, one bit at a time (the reflected Castagnoli polynomial): no
    /// table, no instruction, nothing shared with the code under test.
    static func bitByBit(_ bytes: some Collection<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1
            }
        }
        return ~crc
    }

    /// The dispatched implementation (the VPCLMULQDQ fold where the CPU has it, the crc32
    /// instruction's three streams, or the tables) against the definition, over random lengths
    /// from nothing to past several fold strides and three-stream blocks, at every alignment
    /// within a cache line, and resumed from a running value.
    @Test func theDispatchedImplementationMatchesTheDefinitionAtRandomLengthsAndAlignments() {
        var generator = SeededGenerator(seed: 0x3243_F6A8)
        let bytes = (0..<(80_000 + 64)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var mismatches: [String] = []
        for _ in 0..<60 {
            let length = Int.random(in: 0...80_000, using: &generator)
            let start = Int.random(in: 0..<64, using: &generator)
            let slice = bytes[start..<(start + length)]
            let fast = slice.withUnsafeBytes { cs_crc32c_update(0, $0.baseAddress, $0.count) }
            if fast != Self.bitByBit(slice) { mismatches.append("length \(length) at offset \(start)") }
            let split = length / 3
            let resumed = slice.withUnsafeBytes { raw in
                let head = cs_crc32c_update(0, raw.baseAddress, split)
                return cs_crc32c_update(head, raw.baseAddress.map { $0 + split }, length - split)
            }
            if resumed != fast { mismatches.append("length \(length) at offset \(start), resumed at \(split)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }

    @Test func updatingInPiecesEqualsOneUpdate() {
        var generator = SeededGenerator(seed: 42)
        let bytes = Data((0..<100_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        var pieces = CRC32C()
        var offset = 0
        while offset < bytes.count {
            let count = Int.random(in: 1...5000, using: &generator)
            pieces.update(bytes[offset..<min(offset + count, bytes.count)])
            offset += count
        }
        #expect(pieces.value == CRC32C.checksum(bytes))
    }

    @Test func reportsHardwareAccelerationOnThisMachine() {
        #if arch(x86_64) || arch(arm64)
        // Every x86_64 CPU Swift targets on Linux has SSE4.2 in practice; this guards the detection code.
        #expect(CRC32C.isHardwareAccelerated)
        #endif
    }

    /// The checksum a composed object must have, from its components' checksums and lengths.
    @Test(arguments: [(0, 0), (0, 5), (5, 0), (1, 1), (9, 4096), (100_000, 3), (262_144, 262_145)])
    func combiningChecksumsEqualsTheChecksumOfTheConcatenation(firstLength: Int, secondLength: Int) {
        let first = TestSupport.payload(size: firstLength, seed: UInt64(firstLength))
        let second = TestSupport.payload(size: secondLength, seed: UInt64(secondLength) + 1)
        let combined = CRC32C.combine(
            CRC32C.checksum(first), CRC32C.checksum(second), secondLength: Int64(secondLength))
        #expect(combined == CRC32C.checksum(first + second))
        // The length matters: claiming one more byte gives another combination (the empty
        // sequence's checksum is 0, which no shift changes).
        if firstLength > 0 && secondLength > 0 {
            #expect(
                CRC32C.combine(CRC32C.checksum(first), CRC32C.checksum(second), secondLength: Int64(secondLength + 1))
                    != combined)
        }
    }

    @Test func combiningIsAssociativeAcrossManyParts() {
        let parts = (0..<32).map { TestSupport.payload(size: 37 * $0 + 1, seed: UInt64($0)) }
        let folded = parts.reduce(UInt32(0)) {
            CRC32C.combine($0, CRC32C.checksum($1), secondLength: Int64($1.count))
        }
        #expect(folded == CRC32C.checksum(parts.reduce(Data(), +)))
    }
}
