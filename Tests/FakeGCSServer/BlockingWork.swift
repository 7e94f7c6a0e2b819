import Dispatch

/// Runs blocking work (waiting for `flock`, for pip, spawning processes) on
/// dispatch threads, so that it never occupies one of Swift's few cooperative
/// threads.
public enum BlockingWork {
    private static let queue = DispatchQueue(
        label: "FakeGCSServer.BlockingWork",
        // Processes spawned here inherit the thread's priority; on Linux a
        // higher QoS means a negative nice value, which a shared machine and
        // fair benchmarks should not get.
        qos: .default,
        attributes: .concurrent
    )

    /// Runs `body` on a dispatch thread and returns its result.
    ///
    /// The body is not interrupted by cancellation.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { try body() })
            }
        }
        return try result.get()
    }
}
