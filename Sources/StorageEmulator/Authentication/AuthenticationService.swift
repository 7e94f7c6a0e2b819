import Foundation

/// The emulator's authentication state: known accounts and users, the metadata server's
/// identity, and the tokens issued (see ``StorageEmulator/Authentication``).
package final class AuthenticationService: Sendable {
    /// The service accounts, with their keys.
    package let accounts: ServiceAccountTable
    /// Authorized users by OAuth client id.
    let users: [String: StorageEmulator.Authentication.AuthorizedUser]
    /// The metadata server's identity; nil for no metadata server.
    let metadataServerAccount: StorageEmulator.Authentication.MetadataServerAccount?
    /// How long issued tokens live.
    let tokenLifetime: Duration
    /// Whether storage requests need an issued token.
    package let requiresToken: Bool
    /// The tokens issued.
    package let tokens: AccessTokenTable

    /// Scopes a metadata-server token gets when the request names none (a VM's default).
    static let defaultMetadataScopes = ["https://www.googleapis.com/auth/cloud-platform"]

    /// Reads the configuration's keys.
    ///
    /// - Throws: ``StorageEmulator/EmulatorError`` for an unreadable key, a duplicate account or
    ///   client id, or a token lifetime under one second.
    package init(
        _ configuration: StorageEmulator.Authentication, tokens: AccessTokenTable = AccessTokenTable()
    ) throws(StorageEmulator.EmulatorError) {
        guard configuration.tokenLifetime >= .seconds(1) else {
            throw .init(description: "The token lifetime must be at least one second.")
        }
        accounts = try ServiceAccountTable(configuration.serviceAccounts)
        var users: [String: StorageEmulator.Authentication.AuthorizedUser] = [:]
        for user in configuration.authorizedUsers {
            guard !user.clientID.isEmpty, users[user.clientID] == nil else {
                throw .init(description: "Authorized user client id '\(user.clientID)' is empty or listed twice.")
            }
            users[user.clientID] = user
        }
        self.users = users
        metadataServerAccount = configuration.metadataServerAccount
        tokenLifetime = configuration.tokenLifetime
        requiresToken = configuration.requiresToken
        self.tokens = tokens
    }

    /// `expires_in` for a token issued now: whole seconds of the lifetime.
    var expiresIn: Int64 { tokenLifetime.components.seconds }

    /// The token endpoint's and the metadata server's success answer.
    func tokenReply(for principal: AccessTokenTable.Principal, scopes: [String], now: Date) -> Reply {
        let (token, _) = tokens.issue(for: principal, scopes: scopes, lifetime: tokenLifetime, now: now)
        var reply = Reply.json(
            200,
            [
                "access_token": token, "expires_in": expiresIn, "token_type": "Bearer",
                "scope": scopes.joined(separator: " "),
            ])
        reply.headers.set("Cache-Control", "no-store")
        return reply
    }
}
