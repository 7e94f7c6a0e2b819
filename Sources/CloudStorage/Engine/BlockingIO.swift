import Dispatch

/// Runs blocking work (file reads, `stat`) on threads of its own, so that it
/// never occupies one of Swift's few cooperative threads.
enum BlockingIO {
    private static let queue = DispatchQueue(
        label: "CloudStorage.BlockingIO",
        qos: .userInitiated,
        attributes: .concurrent
    )

    /// Runs `body` on a dispatch thread and returns its result.
    ///
    /// The body is not interrupted by cancellation; keep each call short
    /// (one read, one checksum block) and check for cancellation between calls.
    static func run<T: Sendable, E: Error>(
        _ body: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(E) -> T in try body() })
            }
        }
        return try result.get()
    }

    /// Starts `body` on a dispatch thread and returns at once.
    static func start(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }
}
