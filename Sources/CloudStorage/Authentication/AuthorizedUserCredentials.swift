import Foundation

/// A user's OAuth refresh token, as `gcloud auth application-default login` writes it
/// (`"type": "authorized_user"`): exchanged at the token endpoint with the OAuth client's
/// id and secret for an access token.
struct AuthorizedUserCredentials: Sendable {
    /// Google's token endpoint: gcloud's files name none.
    static let defaultTokenURI = URL(string: "https://oauth2.googleapis.com/token")!

    let clientID: String
    let clientSecret: String
    let refreshToken: String
    /// `token_uri`, or Google's.
    let tokenURI: URL
    /// `quota_project_id`: the project billed, sent as `x-goog-user-project`.
    let quotaProject: String?

    /// Reads the fields of a `"type": "authorized_user"` file.
    ///
    /// - Parameters:
    ///   - object: The parsed JSON.
    ///   - source: Names the file in messages.
    /// - Throws: ``StorageErrorCode/invalidArgument`` naming the missing field.
    init(json object: [String: Any], source: String) throws(StorageError) {
        clientID = try CredentialFile.requiredString("client_id", in: object, source: source)
        clientSecret = try CredentialFile.requiredString("client_secret", in: object, source: source)
        refreshToken = try CredentialFile.requiredString("refresh_token", in: object, source: source)
        tokenURI =
            try CredentialFile.optionalString("token_uri", in: object).map {
                (text: String) throws(StorageError) -> URL in try CredentialFile.tokenURI(text, source: source)
            } ?? Self.defaultTokenURI
        quotaProject = CredentialFile.optionalString("quota_project_id", in: object)
    }

    /// Fetches an access token with the refresh-token grant. The scopes are those the user
    /// consented to when the refresh token was issued; the grant cannot widen them.
    func fetchToken(context: TokenRequestContext) async throws(StorageError) -> AccessToken {
        let token = try await TokenEndpoint.exchange(
            form: [
                ("grant_type", "refresh_token"), ("client_id", clientID), ("client_secret", clientSecret),
                ("refresh_token", refreshToken),
            ],
            at: tokenURI, grant: "the refresh token of OAuth client \(clientID)", context: context)
        return token.billed(to: quotaProject)
    }
}
