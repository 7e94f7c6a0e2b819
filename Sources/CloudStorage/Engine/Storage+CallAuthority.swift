import HTTPClient

extension Storage: CallAuthority {
    func prepare(_ request: inout HTTPRequest) async throws(StorageError) {
        try await options.prepare(&request, for: endpoint)
    }

    var sendsSecret: Bool { authorization.isSecret }

    var refreshesAfterRefusal: Bool { authorization.refreshesAfterRefusal }

    /// The operation's token (fetched once, then again after a 401), or for a Google credential
    /// whatever its shared cache holds now — a lock and a comparison, so a long operation
    /// switches to a new token before the old one expires instead of waiting for a 401.
    func credential(
        context: TokenRequestContext, scheme: String, previous: String??, refreshing: Bool
    ) async throws(StorageError) -> CallCredential? {
        if case .credential(let credential) = authorization.kind {
            // A credential's cache fetches again only if it still holds the refused token, so
            // that operations refused together share one exchange.
            let fresh = try await credential.token(context: context, replacing: refreshing ? (previous ?? nil) : nil)
            // OAuth 2 access tokens, whichever service the endpoint is.
            return CallCredential(scheme: "Bearer", token: fresh.value, quotaProject: fresh.quotaProject)
        }
        let token: String?
        if let previous, !refreshing {
            token = previous
        } else {
            token = try await authorization.token(forceRefresh: refreshing)
        }
        return token.map { CallCredential(scheme: scheme, token: $0) }
    }
}

extension CallExecutor {
    /// An executor for one call to `storage`.
    ///
    /// - Parameters:
    ///   - storage: Where the requests go, and the settings (retry policy and times included).
    ///   - operation: Which retry time (``StorageConfiguration/Retry/maxUploadTime``,
    ///     ``StorageConfiguration/Retry/maxDownloadTime`` or
    ///     ``StorageConfiguration/Retry/maxOperationTime``) bounds the retries.
    init(storage: Storage, operation: RetryBackoff.Operation) {
        self.init(
            authority: storage, settings: TokenRequestContext(storage: storage, operation: operation),
            credentialScheme: storage.endpoint.wireProtocol.credentialScheme,
            wireProtocol: storage.endpoint.wireProtocol, operation: operation)
    }
}

extension TokenRequestContext {
    /// The context of an operation of `storage`.
    init(storage: Storage, operation: RetryBackoff.Operation) {
        self.init(
            transport: storage.transport, requestTimeout: storage.configuration.timeouts.request,
            retryBackoff: RetryBackoff(configuration: storage.configuration, operation: operation),
            retryPolicy: storage.configuration.retry.policy,
            identification: storage.configuration.identification, events: storage.configuration.events.emitter())
    }
}
