/// When to retry a failed request and how long to wait first: exponential
/// back-off with jitter, inside an overall time budget.
struct RetryPolicy: Sendable {
    /// The kinds of operation, each with its own retry time, named as the
    /// Firebase SDKs name them.
    enum Operation: Sendable, Equatable {
        /// Uploads: ``StorageConfiguration/maxUploadRetryTime``.
        case upload
        /// Downloads: ``StorageConfiguration/maxDownloadRetryTime``.
        case download
        /// Metadata reads and updates, deletes, listings, download URLs:
        /// ``StorageConfiguration/maxOperationRetryTime``.
        case other
    }

    var initialDelay: Duration
    var maxDelay: Duration
    var budget: Duration
    /// The name of the setting that sets ``budget``, for error messages.
    var budgetName: String

    init(configuration: StorageConfiguration, operation: Operation) {
        switch operation {
        case .upload:
            budget = configuration.maxUploadRetryTime
            budgetName = "maxUploadRetryTime"
        case .download:
            budget = configuration.maxDownloadRetryTime
            budgetName = "maxDownloadRetryTime"
        case .other:
            budget = configuration.maxOperationRetryTime
            budgetName = "maxOperationRetryTime"
        }
        initialDelay = configuration.initialRetryDelay
        maxDelay = min(budget, configuration.maxRetryDelay)
    }

    /// The failures since the operation began or last reached a new high, and
    /// what to do about the next one.
    ///
    /// The budget is a deadline that starts at the first failure recorded
    /// after creation or after ``reset()``: a retry is allowed only while its
    /// wait ends within ``RetryPolicy/budget`` of that instant.
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
            // A zero (or negative) budget allows no retry at all, even one without a wait.
            guard policy.budget > .zero else { return nil }
            return (now - first) + delay <= policy.budget ? delay : nil
        }
    }
}
