import Foundation
import HTTP1

/// `POST /token`: Google's OAuth 2.0 token endpoint for service-account JWTs
/// (`urn:ietf:params:oauth:grant-type:jwt-bearer`) and authorized users' refresh tokens.
extension EmulatorApplication {
    /// The jwt-bearer grant type (RFC 7523).
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// The largest token request body read: a grant is a few kilobytes.
    static let maxTokenRequestBody = 64 * 1024

    func tokenEndpoint(_ request: any ServerRequest, _ body: BodyReader) throws -> Reply {
        guard let authentication = settings.authentication else { throw HTTPError(404, "Not Found") }
        do {
            let mediaType = request.headers["Content-Type"]?.split(separator: ";").first?
                .trimmingCharacters(in: .whitespaces).lowercased()
            guard mediaType == "application/x-www-form-urlencoded" else {
                throw OAuthRefusal.invalidRequest(
                    "The token request must be application/x-www-form-urlencoded.")
            }
            if let length = request.contentLength, length > Int64(Self.maxTokenRequestBody) {
                throw OAuthRefusal.invalidRequest(
                    "The token request body is larger than \(Self.maxTokenRequestBody) bytes.")
            }
            let data: Data
            do {
                data = try body.readAll(limit: Self.maxTokenRequestBody)
            } catch let error as HTTPError where error.status == 413 {
                throw OAuthRefusal.invalidRequest(
                    "The token request body is larger than \(Self.maxTokenRequestBody) bytes.")
            }
            let form = try FormBody.parse(data)
            let now = settings.now()
            switch form["grant_type"] {
            case nil:
                throw OAuthRefusal.invalidRequest("Missing required parameter: grant_type")
            case Self.jwtBearerGrant?:
                guard let assertion = form["assertion"], !assertion.isEmpty else {
                    throw OAuthRefusal.invalidRequest("Missing required parameter: assertion")
                }
                let verified = try JWTAssertion(
                    assertion, accounts: authentication.accounts,
                    audienceMatches: { isTokenEndpoint($0, request) }, now: now)
                return authentication.tokenReply(
                    for: .serviceAccount(verified.email), scopes: verified.scopes, now: now)
            case "refresh_token"?:
                let user = try refreshGrantUser(form, authentication)
                return authentication.tokenReply(for: .user(clientID: user.clientID), scopes: [], now: now)
            case let other?:
                throw OAuthRefusal.unsupportedGrantType("Invalid grant_type: \(other.prefix(100))")
            }
        } catch let refusal as OAuthRefusal {
            return refusal.reply
        }
    }

    /// The authorized user a refresh-token grant names, if its client and token are right.
    private func refreshGrantUser(
        _ form: [String: String], _ authentication: AuthenticationService
    ) throws(OAuthRefusal) -> StorageEmulator.Authentication.AuthorizedUser {
        for name in ["client_id", "client_secret", "refresh_token"] where (form[name] ?? "").isEmpty {
            throw .invalidRequest("Missing required parameter: \(name)")
        }
        guard let clientID = form["client_id"], let user = authentication.users[clientID] else {
            throw .invalidClient("The OAuth client was not found.")
        }
        guard Self.constantTimeEqual(form["client_secret"] ?? "", user.clientSecret) else {
            throw .invalidClient("Unauthorized: the client secret is wrong.")
        }
        guard Self.constantTimeEqual(form["refresh_token"] ?? "", user.refreshToken) else {
            throw .invalidGrant("Bad Request: the refresh token is not valid for this client.")
        }
        return user
    }

    /// Audiences Google's token endpoint accepts wherever the grant is posted: its client
    /// libraries put the canonical one in every JWT, whatever their key file's `token_uri`.
    static let googleTokenAudiences: Set<String> = [
        "https://oauth2.googleapis.com/token", "https://www.googleapis.com/oauth2/v4/token",
    ]

    /// Whether a JWT's `aud` names this endpoint as the client reached it (same scheme, host as
    /// in the `Host` field, port, path `/token`, nothing else) or is Google's own token endpoint.
    private func isTokenEndpoint(_ audience: String, _ request: any ServerRequest) -> Bool {
        if Self.googleTokenAudiences.contains(audience) { return true }
        guard let host = request.headers["Host"], !host.isEmpty,
            let expected = URLComponents(string: "\(settings.scheme)://\(host)/token"),
            let given = URLComponents(string: audience)
        else { return false }
        let defaultPort = settings.scheme == "https" ? 443 : 80
        return given.scheme?.lowercased() == settings.scheme && given.user == nil && given.password == nil
            && given.host?.lowercased() == expected.host?.lowercased()
            && (given.port ?? defaultPort) == (expected.port ?? defaultPort)
            && given.percentEncodedPath == "/token" && given.query == nil && given.fragment == nil
    }

    /// Compares secrets without stopping at the first difference.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8)
        let right = Array(b.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
