import HTTPClient

/// What a call sends with each request beyond the request itself, and on whose behalf: the
/// per-call options and the credentials. The ``CallExecutor`` asks it before every attempt; a
/// ``Storage`` is one (a token request has none).
///
/// A protocol rather than the ``Storage`` itself, so that the executor, which the credentials'
/// own token requests use too, depends on no credential type: the layers stay one way.
protocol CallAuthority: Sendable {
    /// Adds the per-call options to `request` (extra headers, App Check), or refuses them.
    func prepare(_ request: inout HTTPRequest) async throws(StorageError)
    /// Whether the credentials are a secret that must not cross a network in the clear.
    var sendsSecret: Bool { get }
    /// Whether a `401` is worth one more attempt with a fresh token.
    var refreshesAfterRefusal: Bool { get }
    /// The credential for the next attempt.
    ///
    /// - Parameters:
    ///   - context: What a token exchange may borrow from the call (transport, retry time…).
    ///   - scheme: The `Authorization` scheme of the endpoint's service.
    ///   - previous: The token this call sent before, if it asked already (its value may be nil:
    ///     no credential).
    ///   - refreshing: The server refused `previous`: fetch another.
    /// - Returns: The credential, or nil to send none.
    func credential(
        context: TokenRequestContext, scheme: String, previous: String??, refreshing: Bool
    ) async throws(StorageError) -> CallCredential?
}

/// What a request carries to prove who sends it.
struct CallCredential: Sendable {
    var scheme: String
    var token: String
    var quotaProject: String?
}
