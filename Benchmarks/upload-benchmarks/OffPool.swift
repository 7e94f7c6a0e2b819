import Dispatch

/// Runs blocking work (spawning and waiting for processes, file writes,
/// reading `/proc`) on dispatch threads, so that it never occupies one of
/// Swift's few cooperative threads.
enum OffPool {
    private static let queue = DispatchQueue(
        label: "upload-benchmarks.blocking",
        // Spawned processes inherit the thread's priority; on Linux a higher
        // QoS means a negative nice value, which would make curl unfairly fast.
        qos: .default,
        attributes: .concurrent
    )

    /// Runs `body` on a dispatch thread and returns its result.
    ///
    /// - Parameter body: Blocking work; it is not interrupted by cancellation.
    /// - Returns: What `body` returned.
    /// - Throws: What `body` threw.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { try body() })
            }
        }
        return try result.get()
    }
}
