import Foundation
import SystemCalls

/// Runs blocking work (file opens and reads, `stat`, `fsync`) on a bounded pool
/// of threads of its own, so that it never occupies one of Swift's few
/// cooperative threads, and a burst of uploads cannot start a thread per call.
enum BlockingIO {
    /// Runs `body` on the pool and returns its result.
    ///
    /// The body is not interrupted once it runs; keep each call short (one read,
    /// one checksum block) and check for cancellation between calls.
    ///
    /// - Throws: What `body` throws, or ``StorageErrorCode/cancelled`` when the
    ///   calling task is cancelled before `body` started (it then never runs).
    static func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(StorageError) -> T
    ) async throws(StorageError) -> T {
        let result: Result<T, StorageError>
        do throws(CancellationError) {
            result = try await BlockingThreadPool.shared.run(body)
        } catch {
            throw .cancelled()
        }
        return try result.get()
    }

    /// Runs `body` on the pool even if the calling task is cancelled, and waits for it:
    /// for closing and cleaning up, which must happen on every path.
    static func runToCompletion<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            BlockingThreadPool.shared.start { continuation.resume(returning: body()) }
        }
    }

    /// Starts `body` on the pool and returns at once; it runs even if the caller is cancelled.
    static func start(_ body: @escaping @Sendable () -> Void) {
        BlockingThreadPool.shared.start(body)
    }
}
