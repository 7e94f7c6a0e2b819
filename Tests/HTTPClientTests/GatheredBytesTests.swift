import SystemCalls
import Testing

/// The bookkeeping of a gathered send: which bytes the next `sendmsg` offers after
/// earlier sends took whole ranges, parts of ranges, or both.
@Suite("Gathered bytes")
struct GatheredBytesTests {
    /// What the next send would offer, as arrays.
    private func next(_ bytes: POSIXSocket.GatheredBytes) -> [[UInt8]] {
        bytes.nextRanges.map { Array($0) }
    }

    @Test func advancingSkipsEmptyRangesAndResumesInsideAPartlySentOne() {
        let first: [UInt8] = [1, 2, 3]
        let second: [UInt8] = [4, 5, 6, 7, 8]
        first.withUnsafeBytes { a in
            second.withUnsafeBytes { b in
                let bytes = POSIXSocket.GatheredBytes([a, UnsafeRawBufferPointer(start: nil, count: 0), b])
                #expect(next(bytes) == [[1, 2, 3], [4, 5, 6, 7, 8]])
                bytes.advance(by: 4)
                #expect(next(bytes) == [[5, 6, 7, 8]])
                #expect(!bytes.isEmpty)
                bytes.advance(by: 2)
                #expect(next(bytes) == [[7, 8]])
                bytes.advance(by: 2)
                #expect(bytes.isEmpty)
                #expect(next(bytes).isEmpty)
            }
        }
    }

    @Test func oneSendOffersAtMost512RangesAndTheRestFollow() {
        let storage = [UInt8](0..<200)
        storage.withUnsafeBytes { all in
            let ranges = (0..<600).map { UnsafeRawBufferPointer(rebasing: all[($0 % 200)..<($0 % 200 + 1)]) }
            let bytes = POSIXSocket.GatheredBytes(ranges)
            #expect(next(bytes).count == 512)
            bytes.advance(by: 512)
            #expect(next(bytes).count == 88)
            #expect(next(bytes).first == [112])
        }
    }

    @Test func nothingToSendIsEmptyFromTheStart() {
        #expect(POSIXSocket.GatheredBytes([]).isEmpty)
    }
}
