import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// The checksum an upload's reads compute as they pass (``InlineChecksum``): whatever order
/// the transport reads in, the value is the CRC32C of the file's bytes.
@Suite("Inline checksum")
struct InlineChecksumTests {
    static let payload = TestSupport.payload(size: 1_000_003, seed: 77)

    /// Feeds `range` of the payload as if the transport had just read it.
    static func read(_ range: Range<Int>, into checksum: InlineChecksum) {
        payload[range].withUnsafeBytes { checksum.observe($0, at: Int64(range.lowerBound)) }
    }

    /// Completes from the payload, counting the bytes read to do so.
    static func complete(_ checksum: InlineChecksum) throws -> (value: UInt32, bytesRead: Int) {
        var bytesRead = 0
        let value = try checksum.complete(
            reading: { (buffer, count, offset) throws(StorageError) in
                payload.withUnsafeBytes { bytes in
                    buffer.copyMemory(from: bytes.baseAddress! + Int(offset), byteCount: count)
                }
                bytesRead += count
            },
            blockSize: 4096)
        return (value, bytesRead)
    }

    @Test func sequentialReadsHashEverythingWithoutReadingAgain() throws {
        let checksum = InlineChecksum(size: Int64(Self.payload.count))
        var offset = 0
        while offset < Self.payload.count {
            let end = min(offset + 65_536, Self.payload.count)
            Self.read(offset..<end, into: checksum)
            offset = end
        }
        #expect(checksum.valueIfComplete == CRC32C.checksum(Self.payload))
        let completed = try Self.complete(checksum)
        #expect(completed.value == CRC32C.checksum(Self.payload))
        #expect(completed.bytesRead == 0)
    }

    /// A part's checksum: reads that begin before its range or run past it count only its bytes.
    @Test func aRangeHashesOnlyItsOwnBytes() throws {
        let part = 200_000..<700_000
        let checksum = InlineChecksum(of: Int64(part.lowerBound)..<Int64(part.upperBound))
        Self.read(0..<150_000, into: checksum)  // before the range: nothing
        #expect(checksum.hashedEnd == 200_000)
        Self.read(150_000..<300_000, into: checksum)
        #expect(checksum.hashedEnd == 300_000)
        Self.read(300_000..<900_000, into: checksum)  // past the range's end: up to it
        #expect(checksum.valueIfComplete == CRC32C.checksum(Self.payload[part]))
        let fresh = InlineChecksum(of: Int64(part.lowerBound)..<Int64(part.upperBound))
        Self.read(0..<250_000, into: fresh)
        let completed = try Self.complete(fresh)
        #expect(completed.value == CRC32C.checksum(Self.payload[part]))
        #expect(completed.bytesRead == 450_000, "only the range's bytes no read covered")
    }

    @Test func reReadsAfterARetryCountOnlyPastTheHashedEnd() throws {
        let checksum = InlineChecksum(size: Int64(Self.payload.count))
        Self.read(0..<300_000, into: checksum)
        Self.read(100_000..<200_000, into: checksum)  // a retry from a committed offset: already hashed
        #expect(checksum.hashedEnd == 300_000)
        Self.read(200_000..<400_000, into: checksum)  // straddles the hashed end: its new part counts
        #expect(checksum.hashedEnd == 400_000)
        Self.read(400_000..<1_000_000, into: checksum)
        let completed = try Self.complete(checksum)
        #expect(completed.value == CRC32C.checksum(Self.payload))
        #expect(completed.bytesRead == 3, "only the tail no read covered")
    }

    @Test func aReadThatSkipsAheadLeavesTheHashAndCompletionCatchesUp() throws {
        let checksum = InlineChecksum(size: Int64(Self.payload.count))
        Self.read(0..<100_000, into: checksum)
        Self.read(500_000..<900_000, into: checksum)  // a resume from further on
        #expect(checksum.hashedEnd == 100_000)
        #expect(checksum.valueIfComplete == nil)
        let completed = try Self.complete(checksum)
        #expect(completed.value == CRC32C.checksum(Self.payload))
        #expect(completed.bytesRead == Self.payload.count - 100_000)
        #expect(checksum.valueIfComplete == CRC32C.checksum(Self.payload), "the completion is kept")
        Self.read(0..<50, into: checksum)  // a later re-read changes nothing
        #expect(checksum.valueIfComplete == CRC32C.checksum(Self.payload))
    }
}
