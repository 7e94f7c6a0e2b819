extension StorageConfiguration {
    /// Which operations are retried (``policy``), how long each kind keeps retrying after
    /// failures that may pass (HTTP 408, 429, 5xx, broken connections, time-outs, malformed
    /// answers), and how long it waits between attempts.
    ///
    /// Each retry time is a deadline, not an allowance per retry: for uploads
    /// and downloads the clock starts at the operation's first such failure
    /// (and starts again when the transfer gets further than ever before); for
    /// every other operation it starts when the call starts, so a first attempt
    /// that hangs counts too. No retry begins whose wait would end past the
    /// deadline, and no attempt of a non-transfer runs past it. When it runs out the
    /// operation fails with ``StorageErrorCode/retryLimitExceeded`` (or
    /// ``StorageErrorCode/quotaExceeded`` if the server kept answering 429,
    /// ``StorageErrorCode/protocolViolation`` if it kept answering malformed).
    /// Zero allows no retry. The defaults are the Firebase SDKs'.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// try configuration.retry.setMaxUploadTime(.seconds(120))
    /// try configuration.retry.setMaxOperationTime(.seconds(30))  // metadata, delete, list
    /// try configuration.retry.setInitialDelay(.milliseconds(200))
    /// ```
    public struct Retry: Sendable, Hashable {
        /// How long an upload keeps retrying. Default 600 seconds.
        ///
        /// Only progress resets the clock — the server's committed offset
        /// reaching a new high in this run of the upload (offsets it reports
        /// again, or reaches again in a new session after it forgot one, do
        /// not); the next failure then starts it again. Resuming a paused
        /// upload starts afresh. Set it with ``setMaxUploadTime(_:)``.
        public private(set) var maxUploadTime: Duration = .seconds(600)

        /// How long a download (``StorageReference/getData(maxSize:preconditions:)``,
        /// ``StorageReference/write(toFile:preconditions:)``) keeps retrying,
        /// resuming from the bytes it has. Default 600 seconds. Only a failed
        /// request that still received bytes beyond any received before resets
        /// the clock. Set it with ``setMaxDownloadTime(_:)``.
        public private(set) var maxDownloadTime: Duration = .seconds(600)

        /// How long every other operation — reading and updating metadata,
        /// deleting, listing, copying, getting download URLs, signing — keeps
        /// retrying. Default 120 seconds. The clock starts with the call, and only a
        /// copy that gets further (by at least a mebibyte) starts it again. Set it with
        /// ``setMaxOperationTime(_:)``.
        public private(set) var maxOperationTime: Duration = .seconds(120)

        /// The wait before the first retry; each later wait doubles, up to
        /// ``maxDelay``, with up to 50% random jitter. Default 1 second. Set it
        /// with ``setInitialDelay(_:)``.
        public private(set) var initialDelay: Duration = .seconds(1)

        /// The longest wait between two retries. Default 32 seconds. Set it
        /// with ``setMaxDelay(_:)``.
        public private(set) var maxDelay: Duration = .seconds(32)

        /// Which failed requests are sent again at all: Google's retry strategy. Default
        /// ``Policy/idempotentOnly``, as in Google's own libraries.
        ///
        /// Set it per ``Storage`` in its configuration, or per call with
        /// ``StorageRequestOptions/retry`` (``Storage/with(_:)``, ``StorageReference/with(_:)``):
        ///
        /// ```swift
        /// var retry = storage.configuration.retry
        /// retry.policy = .always  // this log file has one writer: a repeated write is harmless
        /// try await storage.reference(withPath: "logs/today.txt")
        ///     .with(StorageRequestOptions(retry: retry))
        ///     .delete()
        /// ```
        public var policy: Policy = .idempotentOnly

        /// Which failed requests are sent again: every retryable failure (HTTP 408, 429, 5xx,
        /// broken connections, time-outs) is retried only if the policy allows it for the
        /// request's kind of operation.
        ///
        /// Google's retry strategy (cloud.google.com/storage/docs/retry-strategy) sorts operations
        /// into three classes:
        /// - *always idempotent*: reads, listings, the requests inside a resumable upload session
        ///   (its chunks, status queries and cancellation: a session stores at most one object),
        ///   the parts of a multipart upload, token fetches and signing;
        /// - *conditionally idempotent*: object inserts (a one-request upload, the start of a
        ///   resumable session or of a multipart upload), copies, composes, moves and deletes,
        ///   safe to repeat under `ifGenerationMatch` (a delete also when it names a generation);
        ///   metadata updates, safe under `ifMetagenerationMatch`;
        /// - *never idempotent*: operations whose every success makes something new.
        ///
        /// Firebase Storage endpoints are not Cloud Storage's API and keep the Firebase SDKs'
        /// semantics: their uploads, metadata updates and deletes are retried within the retry
        /// times whatever this policy says, except ``never``.
        public enum Policy: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
            /// Retries always idempotent operations, and conditionally idempotent ones that carry
            /// the precondition that makes them safe; never the others, unless the request never
            /// left this machine (no connection could be made, so it cannot have taken effect).
            /// The default, as in Google's libraries (Go's `RetryIdempotent`, Python's
            /// conditional retry).
            case idempotentOnly
            /// Retries every operation, idempotent or not (Go's `RetryAlways`): for objects with
            /// one writer, where a repeated write cannot overwrite anyone else's.
            case always
            /// Retries nothing: every failure is reported at once (Go's `RetryNever`).
            case never

            /// The policy's name, as the CLI's `--retry-policy` spells it (`idempotent-only`).
            public var description: String {
                switch self {
                case .idempotentOnly: "idempotent-only"
                case .always: "always"
                case .never: "never"
                }
            }
        }

        /// Creates the default retry settings.
        public init() {}

        /// Sets ``maxUploadTime``.
        ///
        /// ```swift
        /// try configuration.retry.setMaxUploadTime(.seconds(120))
        /// ```
        ///
        /// - Parameter time: Zero (no retry) or more.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for a negative time;
        ///   ``maxUploadTime`` is then unchanged.
        public mutating func setMaxUploadTime(_ time: Duration) throws(StorageError) {
            maxUploadTime = try Self.checkedRetryTime(time, "retry.maxUploadTime")
        }

        /// Sets ``maxDownloadTime``.
        ///
        /// ```swift
        /// try configuration.retry.setMaxDownloadTime(.seconds(60))
        /// ```
        ///
        /// - Parameter time: Zero (no retry) or more.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for a negative time;
        ///   ``maxDownloadTime`` is then unchanged.
        public mutating func setMaxDownloadTime(_ time: Duration) throws(StorageError) {
            maxDownloadTime = try Self.checkedRetryTime(time, "retry.maxDownloadTime")
        }

        /// Sets ``maxOperationTime``.
        ///
        /// ```swift
        /// try configuration.retry.setMaxOperationTime(.seconds(30))
        /// ```
        ///
        /// - Parameter time: Zero (no retry) or more.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for a negative time;
        ///   ``maxOperationTime`` is then unchanged.
        public mutating func setMaxOperationTime(_ time: Duration) throws(StorageError) {
            maxOperationTime = try Self.checkedRetryTime(time, "retry.maxOperationTime")
        }

        /// Sets ``initialDelay``.
        ///
        /// ```swift
        /// try configuration.retry.setInitialDelay(.milliseconds(200))
        /// ```
        ///
        /// - Parameter delay: A positive wait.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for zero or less (each
        ///   wait doubles the one before, so zero would never wait);
        ///   ``initialDelay`` is then unchanged.
        public mutating func setInitialDelay(_ delay: Duration) throws(StorageError) {
            initialDelay = try checkedPositive(delay, "retry.initialDelay")
        }

        /// Sets ``maxDelay``.
        ///
        /// ```swift
        /// try configuration.retry.setMaxDelay(.seconds(10))
        /// ```
        ///
        /// - Parameter delay: A positive wait.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for zero or less;
        ///   ``maxDelay`` is then unchanged.
        public mutating func setMaxDelay(_ delay: Duration) throws(StorageError) {
            maxDelay = try checkedPositive(delay, "retry.maxDelay")
        }

        /// The retry time for one kind of operation, and its setting's name for messages.
        func maxTime(for operation: RetryBackoff.Operation) -> (time: Duration, name: String) {
            switch operation {
            case .upload: (maxUploadTime, "retry.maxUploadTime")
            case .download: (maxDownloadTime, "retry.maxDownloadTime")
            case .other: (maxOperationTime, "retry.maxOperationTime")
            }
        }

        private static func checkedRetryTime(_ time: Duration, _ setting: String) throws(StorageError) -> Duration {
            guard time >= .zero else { throw .invalidSetting(setting, must: "zero (no retry) or more", is: time) }
            return time
        }
    }
}

/// `duration`, if it is positive.
///
/// - Throws: ``StorageErrorCode/invalidArgument`` naming `setting` otherwise.
func checkedPositive(_ duration: Duration, _ setting: String) throws(StorageError) -> Duration {
    guard duration > .zero else { throw .invalidSetting(setting, must: "positive", is: duration) }
    return duration
}
