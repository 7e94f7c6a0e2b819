/// How safe a request is to send again, in Google's retry strategy
/// (cloud.google.com/storage/docs/retry-strategy): the class of its operation and, for a
/// conditionally idempotent one, the precondition that makes a second attempt safe.
///
/// Every request the SDK sends declares it, and the call executor's one retry gate
/// (``CallExecutor/backOff(after:)``) decides from it, the failure and the
/// ``StorageConfiguration/Retry/Policy`` whether to try again.
enum CallIdempotency: Sendable, Equatable {
    /// Repeating it changes nothing more: reads, listings, a resumable session's own requests
    /// (chunks, status queries, cancellation: the session is one write that the server commits at
    /// most once), parts of a multipart upload (a part number is overwritten, not added), token
    /// fetches and signing.
    case idempotent
    /// A write that is safe to repeat only under a precondition: object inserts (and the start
    /// of a resumable or multipart upload), copies, rewrites, composes, moves and deletes under
    /// `ifGenerationMatch` (a delete also under a pinned generation), metadata patches under
    /// `ifMetagenerationMatch`. `precondition` names the one the request carries; nil when none.
    case conditional(precondition: String?)
    /// Never safe to repeat: each success makes something new (an ACL entry, a notification, an
    /// HMAC key).
    case nonIdempotent

    /// An object write that Cloud Storage makes idempotent with `ifGenerationMatch`: insert,
    /// copy, rewrite, compose, move.
    static func generationConditioned(_ preconditions: StoragePreconditions) -> CallIdempotency {
        .conditional(precondition: preconditions.ifGenerationMatch.map { "ifGenerationMatch=\($0)" })
    }

    /// An object delete: idempotent under `ifGenerationMatch`, or when it names one generation.
    static func delete(_ preconditions: StoragePreconditions, generation: Int64?) -> CallIdempotency {
        if let generation { return .conditional(precondition: "generation=\(generation)") }
        return generationConditioned(preconditions)
    }

    /// A metadata patch, idempotent under `ifMetagenerationMatch`.
    static func metagenerationConditioned(_ preconditions: StoragePreconditions) -> CallIdempotency {
        .conditional(precondition: preconditions.ifMetagenerationMatch.map { "ifMetagenerationMatch=\($0)" })
    }
}

/// Whether a failed request may be sent again, and the rule that says so: what the retry event
/// reports, and what a failure that was not retried says.
struct RetryDecision: Sendable, Equatable {
    /// Whether a retry is allowed.
    let allowsRetry: Bool
    /// The rule, for events and messages ("idempotent", "made idempotent by ifGenerationMatch=0",
    /// "retry policy never").
    let rule: String

    init(allowsRetry: Bool, rule: String) {
        self.allowsRetry = allowsRetry
        self.rule = rule
    }

    /// The decision of `policy` on a request of `idempotency`.
    init(policy: StorageConfiguration.Retry.Policy, idempotency: CallIdempotency) {
        switch (policy, idempotency) {
        case (.never, _):
            (allowsRetry, rule) = (false, "the retry policy is never")
        case (.always, _):
            (allowsRetry, rule) = (true, "the retry policy is always")
        case (.idempotentOnly, .idempotent):
            (allowsRetry, rule) = (true, "the request is idempotent")
        case (.idempotentOnly, .conditional(let precondition?)):
            (allowsRetry, rule) = (true, "the request is made idempotent by \(precondition)")
        case (.idempotentOnly, .conditional(nil)):
            (allowsRetry, rule) = (
                false,
                "a write without a precondition is not idempotent (set ifGenerationMatch, or ifMetagenerationMatch "
                    + "for metadata, or the retry policy always)"
            )
        case (.idempotentOnly, .nonIdempotent):
            (allowsRetry, rule) = (false, "the request is not idempotent")
        }
    }
}
