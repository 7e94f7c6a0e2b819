/// When to retry a failed request and how long to wait first: exponential
/// back-off with jitter, inside an overall time budget.
struct RetryPolicy: Sendable {
    var initialDelay: Duration
    var maxDelay: Duration
    var budget: Duration

    init(configuration: StorageConfiguration) {
        initialDelay = configuration.initialRetryDelay
        maxDelay =
            configuration.maxUploadRetryTime < configuration.maxRetryDelay
            ? configuration.maxUploadRetryTime : configuration.maxRetryDelay
        budget = configuration.maxUploadRetryTime
    }

    /// The failures since the last progress, and what to do about the next one.
    struct Attempts: Sendable {
        private(set) var firstFailure: ContinuousClock.Instant?
        private(set) var failures = 0

        /// Forgets past failures: the operation made progress.
        mutating func reset() {
            firstFailure = nil
            failures = 0
        }

        /// Records a failure at `now` and returns how long to wait before
        /// retrying, or nil when the wait would end past the budget.
        ///
        /// - Parameter jitter: A fraction in `0..<1` of the delay to add.
        mutating func recordFailure(
            at now: ContinuousClock.Instant,
            policy: RetryPolicy,
            jitter: Double
        ) -> Duration? {
            let first = firstFailure ?? now
            firstFailure = first
            failures += 1
            var delay = policy.initialDelay
            for _ in 1..<failures where delay < policy.maxDelay {
                delay *= 2
            }
            delay = min(delay, policy.maxDelay)
            delay += delay * (jitter * 0.5)
            return (now - first) + delay <= policy.budget ? delay : nil
        }
    }
}
