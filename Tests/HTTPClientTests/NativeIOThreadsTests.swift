import Foundation
import Testing

@testable import HTTPClient

/// What an I/O thread keeps between jobs: nothing. A streamed upload's previous request (up to
/// 8 MiB of the caller's bytes) stayed referenced while its thread waited for the next job, so
/// two requests' worth were alive at once.
@Suite("Native I/O threads", .timeLimit(.minutes(10)))
struct NativeIOThreadsTests {
    /// Tells a stream when the last reference to it goes.
    final class Payload: Sendable {
        let released: AsyncStream<Void>.Continuation
        init(_ released: AsyncStream<Void>.Continuation) { self.released = released }
        deinit { released.finish() }
    }

    @Test func aJobAndItsHandOffAreReleasedBeforeTheThreadWaitsForTheNextJob() async {
        // A lifetime far beyond the test's: the thread stays idle, holding whatever it still holds.
        let threads = NativeIOThreads(name: "test-io", idleLifetime: .seconds(3600))
        let (released, continuation) = AsyncStream<Void>.makeStream()
        let (handedOff, handOffDone) = AsyncStream<Void>.makeStream()
        do {
            let payload = Payload(continuation)
            threads.run {
                _ = payload  // the job's work (a request's body) ...
                return {
                    _ = payload  // ... and its hand-off (the lease, the response) both hold it
                    handOffDone.finish()
                }
            }
        }
        for await _ in handedOff {}
        // Ends only once the payload is freed; before the fix, not until a next job or an hour.
        for await _ in released {}
        #expect(threads.threadCount == 1, "the thread is idle, not gone")
    }
}
