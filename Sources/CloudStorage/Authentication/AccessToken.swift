/// An OAuth 2 access token and when it stops being worth sending.
///
/// Its descriptions never show the token: a `print`, a `dump` or an error message that
/// interpolates one shows `<redacted>`.
struct AccessToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret itself, sent as `Authorization: Bearer <value>`.
    let value: String
    /// When the server stops accepting it (by this process's monotonic clock).
    let expiry: ContinuousClock.Instant
    /// How long it was valid when it was issued.
    let lifetime: Duration
    /// The project billed for requests (`x-goog-user-project`), when the credential names one.
    let quotaProject: String?

    /// The longest margin before expiry at which a cached token is replaced: long enough that
    /// a token handed out now survives a request that takes a while to start.
    static let maximumRefreshMargin: Duration = .seconds(240)

    /// Tokens live this long when the endpoint does not say (Google's last an hour).
    static let defaultLifetime: Duration = .seconds(3600)

    /// The longest lifetime believed, so that a hostile `expires_in` cannot overflow a `Duration`.
    static let maximumLifetime: Duration = .seconds(86_400)

    /// - Parameters:
    ///   - value: The token.
    ///   - lifetime: `expires_in` (clamped to 0 …  one day).
    ///   - issued: When the answer carrying it arrived.
    ///   - quotaProject: The project to bill, if any.
    init(value: String, lifetime: Duration, issued: ContinuousClock.Instant, quotaProject: String? = nil) {
        self.value = value
        self.lifetime = min(max(lifetime, .zero), Self.maximumLifetime)
        self.expiry = issued + self.lifetime
        self.quotaProject = quotaProject
    }

    /// Whether the token is still worth handing out at `now`: more than
    /// min(``maximumRefreshMargin``, half its lifetime) remains.
    func isFresh(at now: ContinuousClock.Instant) -> Bool {
        let margin = min(Self.maximumRefreshMargin, lifetime / 2)
        return now < expiry - margin
    }

    /// The same token billed to `project` (for a credential that names one).
    func billed(to project: String?) -> AccessToken {
        AccessToken(value: value, expiry: expiry, lifetime: lifetime, quotaProject: project)
    }

    private init(value: String, expiry: ContinuousClock.Instant, lifetime: Duration, quotaProject: String?) {
        self.value = value
        self.expiry = expiry
        self.lifetime = lifetime
        self.quotaProject = quotaProject
    }

    var description: String { "AccessToken(<redacted>, lifetime: \(lifetime))" }
    var debugDescription: String { description }
    var customMirror: Mirror { Mirror(self, children: [:]) }
}
