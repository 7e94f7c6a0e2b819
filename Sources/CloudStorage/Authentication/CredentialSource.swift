/// Where a credential's access tokens come from, once known.
enum CredentialSource: Sendable {
    /// A service account key: a signed JWT exchanged at its `token_uri`.
    case serviceAccount(ServiceAccountKey)
    /// A user's refresh token exchanged at its `token_uri`.
    case authorizedUser(AuthorizedUserCredentials)
    /// The metadata server's token endpoint.
    case metadataServer(MetadataServer)

    /// Fetches a new access token.
    ///
    /// - Parameters:
    ///   - scopes: The OAuth scopes asked for (an authorized user's refresh token keeps the
    ///     scopes it was issued with).
    ///   - context: The transport and retry time to use.
    func fetchToken(scopes: [String], context: TokenRequestContext) async throws(StorageError) -> AccessToken {
        switch self {
        case .serviceAccount(let key):
            try await key.fetchToken(scopes: scopes, context: context)
        case .authorizedUser(let user):
            try await user.fetchToken(context: context)
        case .metadataServer(let server):
            try await server.fetchToken(scopes: scopes, context: context)
        }
    }

    /// Its kind, for events: `service account`, `authorized user` or `metadata server`.
    var kind: String {
        switch self {
        case .serviceAccount: "service account"
        case .authorizedUser: "authorized user"
        case .metadataServer: "metadata server"
        }
    }

    /// What it is, for messages and descriptions: never a secret.
    var summary: String {
        switch self {
        case .serviceAccount(let key): "service account \(key.clientEmail)"
        case .authorizedUser(let user): "authorized user of OAuth client \(user.clientID)"
        case .metadataServer(let server): server.name
        }
    }
}
