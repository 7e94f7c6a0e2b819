import SystemCalls
import Testing

@Suite("Buffers for file bytes")
struct FileBufferTests {
    /// A page-aligned buffer is what keeps `pread` from the page cache off the CPU's 4 KiB
    /// aliasing; an allocator that ignored the alignment would bring the cost back unseen.
    @Test(arguments: [1, 4096, 64 * 1024, 1 << 20, (1 << 20) + 1])
    func everyFileBufferStartsOnAPageBoundary(byteCount: Int) {
        let buffers = (0..<8).map { _ in SystemCall.allocateFileBuffer(byteCount: byteCount) }
        defer { buffers.forEach { $0.deallocate() } }
        for buffer in buffers {
            #expect(buffer.count == byteCount)
            #expect(Int(bitPattern: buffer.baseAddress) % SystemCall.pageAlignment == 0)
        }
    }

    @Test func thePageAlignmentIsAtLeastTheSystemsPageSize() {
        #expect(SystemCall.pageAlignment >= 4096)
        #expect(SystemCall.pageAlignment & (SystemCall.pageAlignment - 1) == 0)
    }
}
