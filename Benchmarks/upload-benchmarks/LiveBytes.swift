import Synchronization

/// Counts the bytes of a stream's elements that are alive, and the most that were at once.
///
/// ``FileBlocks`` hands out each element in a buffer of its own whose deallocator subtracts
/// it, so the peak is what the consumer (the SDK) kept referenced at one time: its buffer,
/// any request body still holding slices, anything else that retains an element. Unlike
/// peak RSS it does not include what the allocator keeps after a free.
final class LiveBytes: Sendable {
    private struct Counts {
        var live: Int64 = 0
        var peak: Int64 = 0
    }

    private let counts = Mutex(Counts())

    /// The most bytes alive at once so far.
    var peak: Int64 { counts.withLock { $0.peak } }

    /// An element of `count` bytes was made.
    func add(_ count: Int) {
        counts.withLock { counts in
            counts.live += Int64(count)
            counts.peak = max(counts.peak, counts.live)
        }
    }

    /// An element of `count` bytes was freed.
    func remove(_ count: Int) {
        counts.withLock { $0.live -= Int64(count) }
    }
}
