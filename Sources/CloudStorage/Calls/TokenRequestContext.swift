import HTTPClient

/// What a token exchange borrows from the operation that starts it: the ``Storage``'s own
/// transport (so `https://` uses its TLS settings and trust roots), its request time-out, and
/// the operation's retry time, within which transient failures of the token endpoint are
/// retried; and when the caller stops waiting.
struct TokenRequestContext: Sendable {
    let transport: any HTTPTransport
    /// The idle time-out of each token request, and how long one may take altogether.
    let requestTimeout: Duration
    /// The back-off and retry time of the requesting operation.
    let retryBackoff: RetryBackoff
    /// Whether token requests are retried at all (they are idempotent: all but
    /// ``StorageConfiguration/Retry/Policy/never`` retry them).
    let retryPolicy: StorageConfiguration.Retry.Policy
    /// When the caller stops waiting for a token, if ever: the end of its operation's retry
    /// time once that runs. It bounds only this caller's wait (see ``TokenCache``), never an
    /// exchange other callers may share.
    let deadline: ContinuousClock.Instant?
    /// How token requests name the SDK: the requesting ``Storage``'s identification.
    let identification: StorageConfiguration.Identification
    /// Where the token fetch is reported: the requesting operation's events.
    let events: StorageEventEmitter

    init(
        transport: any HTTPTransport, requestTimeout: Duration, retryBackoff: RetryBackoff,
        retryPolicy: StorageConfiguration.Retry.Policy = .idempotentOnly,
        deadline: ContinuousClock.Instant? = nil,
        identification: StorageConfiguration.Identification = StorageConfiguration.Identification(),
        events: StorageEventEmitter = StorageEventEmitter(noOperationOf: nil)
    ) {
        self.transport = transport
        self.requestTimeout = requestTimeout
        self.retryBackoff = retryBackoff
        self.retryPolicy = retryPolicy
        self.deadline = deadline
        self.identification = identification
        self.events = events
    }
}
