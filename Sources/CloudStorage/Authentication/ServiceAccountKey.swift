import Foundation

/// A service account's JSON key file, as the Cloud console and `gcloud iam service-accounts
/// keys create` write it: the account's email, its RSA private key, and the token endpoint
/// that exchanges a JWT signed with that key for an access token.
struct ServiceAccountKey: Sendable {
    /// `client_email`: the account, the JWT's issuer.
    let clientEmail: String
    /// `private_key_id`: the JWT header's `kid`, when the file has one.
    let privateKeyID: String?
    /// `private_key`, parsed: what the assertion (and V4 signed URLs) are signed with.
    let signingKey: RSASigningKey
    /// `token_uri`: where the assertion is exchanged, and its audience.
    let tokenURI: URL
    /// `project_id`.
    let projectID: String?
    /// `quota_project_id`: the project billed, sent as `x-goog-user-project`.
    let quotaProject: String?

    /// Reads the fields of a `"type": "service_account"` file.
    ///
    /// - Parameters:
    ///   - object: The parsed JSON.
    ///   - source: Names the file in messages ("The key file /etc/key.json").
    /// - Throws: ``StorageErrorCode/invalidArgument`` naming the missing or unusable field.
    init(json object: [String: Any], source: String) throws(StorageError) {
        clientEmail = try CredentialFile.requiredString("client_email", in: object, source: source)
        let pem = try CredentialFile.requiredString("private_key", in: object, source: source)
        do {
            signingKey = try RSASigningKey(pem: pem)
        } catch {
            // RSASigningKey's message names the problem, never the key's bytes.
            throw .invalidArgument("\(source) has a private_key that cannot be used: \(error.message)")
        }
        tokenURI = try CredentialFile.tokenURI(
            try CredentialFile.requiredString("token_uri", in: object, source: source), source: source)
        privateKeyID = CredentialFile.optionalString("private_key_id", in: object)
        projectID = CredentialFile.optionalString("project_id", in: object)
        quotaProject = CredentialFile.optionalString("quota_project_id", in: object)
    }

    /// The JWT the token endpoint exchanges for an access token (RFC 7523): RS256-signed,
    /// issued by the account, for `scopes`, addressed to ``tokenURI``, valid for one hour.
    ///
    /// - Parameters:
    ///   - scopes: The OAuth scopes asked for.
    ///   - issuedAt: Now, by the wall clock (the endpoint checks `iat` with some skew allowed).
    /// - Returns: `header.claims.signature`, each base64url without padding.
    func assertion(scopes: [String], issuedAt: Date) throws(StorageError) -> String {
        var header: [String: Any] = ["alg": "RS256", "typ": "JWT"]
        if let privateKeyID { header["kid"] = privateKeyID }
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let claims: [String: Any] = [
            "iss": clientEmail, "scope": scopes.joined(separator: " "), "aud": tokenURI.absoluteString,
            "iat": iat, "exp": iat + 3600,
        ]
        let signingInput =
            try Base64URL.encode(Self.json(header)) + "." + Base64URL.encode(Self.json(claims))
        let signature = try signingKey.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Fetches an access token for `scopes` with a fresh assertion.
    func fetchToken(scopes: [String], context: TokenRequestContext) async throws(StorageError) -> AccessToken {
        let assertion = try assertion(scopes: scopes, issuedAt: Date())
        let token = try await TokenEndpoint.exchange(
            form: [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)],
            at: tokenURI, grant: "the key of service account \(clientEmail)", context: context)
        return token.billed(to: quotaProject)
    }

    private static func json(_ object: [String: Any]) throws(StorageError) -> [UInt8] {
        do {
            return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        } catch {
            throw .internalError("A JWT part could not be written as JSON.", underlyingError: nil)
        }
    }
}

/// base64url without padding (RFC 4648 §5), as JWTs use it.
///
/// `package` so that the shared credential fakes (Tests/StorageTestSupport, a regular target that
/// cannot `@testable import`) can read the JWTs they are sent; no product's public API shows it.
package enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// The bytes of base64url text, padded or not; nil when it is not base64url.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
