import SystemCalls
import Testing

@testable import CloudStorage

@Suite("Buffers of pages of their own")
struct MappedBufferTests {
    @Test("a mapped buffer has the bytes asked for, zeroed and writable; none for zero bytes")
    func mapsZeroedWritablePages() {
        var none = true
        if MappedBuffer(byteCount: 0) != nil { none = false }
        #expect(none)
        for count in [1, 4096, 4097, 1 << 20] {
            guard let buffer = MappedBuffer(byteCount: count) else {
                Issue.record("no pages for \(count) bytes")
                continue
            }
            #expect(buffer.bytes.count == count)
            #expect(buffer.bytes.allSatisfy { $0 == 0 })
            buffer.bytes[count - 1] = 0xA5
            #expect(buffer.bytes[count - 1] == 0xA5)
        }
    }

    @Test("a checksum read block by block through a mapped buffer is the whole bytes' checksum")
    func checksumThroughMappedBlocks() throws {
        let bytes = (0..<(3 << 20) + 5).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var whole = CRC32C()
        bytes.withUnsafeBytes { whole.update($0) }
        for blockSize in [4096, 1 << 20, 5 << 20] {
            var blocks = CRC32C()
            try blocks.update(
                reading: { buffer, count, offset in
                    bytes.withUnsafeBytes { source in
                        buffer.copyMemory(from: source.baseAddress! + Int(offset), byteCount: count)
                    }
                },
                from: 0, to: Int64(bytes.count), blockSize: blockSize)
            #expect(blocks == whole, "blocks of \(blockSize)")
        }
    }
}
