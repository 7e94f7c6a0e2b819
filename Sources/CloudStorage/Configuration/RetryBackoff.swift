import HTTPClient

/// When to retry a failed request and how long to wait first: exponential
/// back-off with jitter, inside an overall time budget.
struct RetryBackoff: Sendable {
    /// The kinds of operation, each with its own retry time, named as the
    /// Firebase SDKs name them.
    enum Operation: Sendable, Equatable {
        /// Uploads: ``StorageConfiguration/Retry/maxUploadTime``.
        case upload
        /// Downloads: ``StorageConfiguration/Retry/maxDownloadTime``.
        case download
        /// Metadata reads and updates, deletes, listings, download URLs:
        /// ``StorageConfiguration/Retry/maxOperationTime``.
        case other
    }

    var initialDelay: Duration
    var maxDelay: Duration
    var budget: Duration
    /// The name of the setting that sets ``budget``, for error messages.
    var budgetName: String

    init(configuration: StorageConfiguration, operation: Operation) {
        (budget, budgetName) = configuration.retry.maxTime(for: operation)
        initialDelay = configuration.retry.initialDelay
        maxDelay = min(budget, configuration.retry.maxDelay)
    }

    /// The failures since the operation began or last reached a new high, and
    /// what to do about the next one.
    ///
    /// The budget is a deadline that starts at the first failure recorded
    /// after creation or after ``reset()``, or for an operation whose clock starts
    /// with the call (``RetryBackoff/Operation/other``) at its creation and at each
    /// ``reset()``: a retry is allowed only while its
    /// wait ends within ``RetryBackoff/budget`` of that instant, and nothing of
    /// an attempt that does not move object bytes goes on past it
    /// (``deadline(forAttemptAt:limit:policy:)``), so a peer that trickles its
    /// bytes cannot stretch the operation beyond its retry time.
    struct Attempts: Sendable {
        /// When the retry time's clock started: the first failure, or the call's start.
        private(set) var clockStart: ContinuousClock.Instant?
        /// Whether the clock starts with the call (and again at each reset) instead of at the
        /// first failure.
        private let startsWithCall: Bool
        private(set) var failures = 0
        /// The failure the last retry was for: what the operation reports when the end of the
        /// retry time cuts the next attempt short (``RetryTimeRanOut``).
        private(set) var lastRetriedFailure: StorageError?

        /// A record of no failure; for an operation of `kind` ``Operation/other`` the clock starts now.
        init(for kind: Operation = .upload, at now: ContinuousClock.Instant = .now) {
            startsWithCall = kind == .other
            clockStart = startsWithCall ? now : nil
        }

        /// When the retry time ends: ``RetryBackoff/budget`` after the clock started, or nil
        /// while no failure is recorded (a first attempt is bounded by its own time-outs only,
        /// even when the clock started with the call).
        func retryTimeEnd(policy: RetryBackoff) -> ContinuousClock.Instant? {
            guard failures > 0 else { return nil }
            return clockStart.map { $0 + policy.budget }
        }

        /// The instant by which a request that starts at `now` and moves no object bytes (all
        /// but upload bodies and downloads, whose moving bytes are progress the engines count)
        /// must be over, whatever the pace of its bytes (``HTTPRequest/deadline``): `limit`
        /// after it starts (the request time-out), and never past the end of the retry time
        /// once a failure started that clock.
        func deadline(
            forAttemptAt now: ContinuousClock.Instant, limit: Duration, policy: RetryBackoff
        ) -> ContinuousClock.Instant {
            let own = now + limit
            guard let end = retryTimeEnd(policy: policy) else { return own }
            return min(own, end)
        }

        /// `failure`, the verdict on `error` of a request sent with `deadline`; marked as cut
        /// short (``RetryTimeRanOut``) when that deadline was the end of the retry time and it
        /// ended the request.
        func marking(
            _ failure: StorageError, of error: HTTPTransportError, deadline: ContinuousClock.Instant?,
            policy: RetryBackoff, server: String
        ) -> StorageError {
            guard error.kind == .timedOut, let deadline, let end = retryTimeEnd(policy: policy), deadline >= end,
                ContinuousClock.now >= end
            else { return failure }
            return RetryTimeRanOut.error(during: "the request to \(server)", cause: error)
        }

        /// What an operation whose retry time ran out with `failure` reports: `failure`, or,
        /// when the end of the retry time cut that attempt short, the failure the last retry
        /// was for (what kept the operation retrying; the cut says nothing new about the
        /// server). `cutShort` says which.
        func reported(_ failure: StorageError) -> (failure: StorageError, cutShort: Bool) {
            guard failure.underlyingError is RetryTimeRanOut, let lastRetriedFailure else { return (failure, false) }
            return (lastRetriedFailure, true)
        }

        /// Whether the retry time's clock started more than ``RetryBackoff/budget`` before `now`.
        func hasRunOut(at now: ContinuousClock.Instant, policy: RetryBackoff) -> Bool {
            clockStart.map { now - $0 > policy.budget } ?? false
        }

        /// Forgets past failures: the operation made progress.
        mutating func reset(at now: ContinuousClock.Instant = .now) {
            clockStart = startsWithCall ? now : nil
            failures = 0
            lastRetriedFailure = nil
        }

        /// Records `failure` at `now` and returns how long to wait before
        /// retrying, or nil when the wait would end past the budget.
        ///
        /// - Parameter jitter: A fraction in `0..<1` of the delay to add.
        mutating func recordFailure(
            _ failure: StorageError,
            at now: ContinuousClock.Instant,
            policy: RetryBackoff,
            jitter: Double
        ) -> Duration? {
            let first = clockStart ?? now
            clockStart = first
            failures += 1
            var delay = policy.initialDelay
            for _ in 1..<failures where delay < policy.maxDelay {
                delay *= 2
            }
            delay = min(delay, policy.maxDelay)
            delay += delay * (jitter * 0.5)
            // A zero (or negative) budget allows no retry at all, even one without a wait.
            guard policy.budget > .zero, (now - first) + delay <= policy.budget else { return nil }
            lastRetriedFailure = failure
            return delay
        }
    }
}

/// The end of an operation's retry time cut short what the operation was doing: a request
/// whose deadline it was, or a wait for an access token. Not news about the server: the
/// operation, now out of retry time, reports the failure before it instead
/// (``RetryBackoff/Attempts/reported(_:)``). Carried as the
/// ``StorageError/underlyingError`` of a ``StorageErrorCode/unknown`` error.
struct RetryTimeRanOut: Error, Sendable, CustomStringConvertible {
    let description: String

    /// The error of an attempt the retry time's end cut short `during` something.
    static func error(during what: String, cause: (any Error & Sendable)? = nil) -> StorageError {
        let detail = cause.map { " (\($0))" } ?? ""
        return StorageError(
            .unknown, "The retry time ran out during \(what).",
            underlyingError: RetryTimeRanOut(description: "the retry time ran out during \(what)\(detail)"))
    }
}
