import Foundation
import Synchronization
import Testing

@testable import CloudStorage

/// The stream buffer's back-pressure, checked on counts: the sequence is never read further
/// than one element past the furthest offset asked for.
@Suite("Upload stream buffer")
struct UploadStreamTests {
    /// A sequence of `count` elements of `size` bytes that counts the bytes it has handed out.
    struct Counting: AsyncSequence, Sendable {
        let count: Int
        let size: Int
        let handedOut: Counter

        struct AsyncIterator: AsyncIteratorProtocol {
            let sequence: Counting
            var index = 0
            mutating func next() async -> Data? {
                guard index < sequence.count else { return nil }
                index += 1
                sequence.handedOut.bytes.withLock { $0 += Int64(sequence.size) }
                return Data(repeating: UInt8(index & 0xFF), count: sequence.size)
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self) }
    }

    @Test("the sequence never gets more than the demand plus one element ahead")
    func backPressure() async throws {
        let element = 10_000
        let counting = Counting(count: 1000, size: element, handedOut: Counter())
        let stream = UploadStream(counting, size: 10_000_000)
        let window: Int64 = 256 * 1024
        var committed: Int64 = 0
        while committed < 10_000_000 {
            let target = min(committed + window, 10_000_000)
            let (end, _) = try await stream.fill(to: target)
            #expect(end >= target)
            // Let the reader run as far as it would: it parks once it reached the demand.
            await stream.waitUntilReaderParked()
            let read = counting.handedOut.bytes.withLock { $0 }
            #expect(read <= target + Int64(element), "read \(read) bytes with demand \(target)")
            committed = target
            try await stream.discard(below: committed)
        }
        await stream.cancel()
    }
}

/// Bytes handed out so far, shared by a sequence's copies.
final class Counter: Sendable {
    let bytes = Mutex<Int64>(0)
}
