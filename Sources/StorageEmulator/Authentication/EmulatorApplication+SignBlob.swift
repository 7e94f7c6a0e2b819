import Foundation
import HTTP1
import NativeTLS

/// IAM Credentials `signBlob`: signs bytes with a service account's private key for a caller
/// holding that account's access token (how V4 URLs are signed on a VM, which has no key).
extension EmulatorApplication {
    /// The largest signBlob request body read.
    static let maxSignBlobBody = 1024 * 1024
    /// Scopes that allow calling IAM Credentials.
    static let iamScopes: Set<String> = [
        "https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/iam",
    ]

    func signBlob(_ request: any ServerRequest, _ body: BodyReader) throws -> Reply {
        guard let authentication = settings.authentication else { throw HTTPError(404, "Not Found") }
        // /v1/projects/-/serviceAccounts/<email>:signBlob
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[4] == "serviceAccounts", parts[5].hasSuffix(":signBlob") else {
            return Self.googleError(404, "NOT_FOUND", "Not Found")
        }
        guard request.method == "POST" else { return Self.googleError(405, "METHOD_NOT_ALLOWED", "Use POST.") }
        guard parts[3] == "-" else {
            return Self.googleError(
                400, "INVALID_ARGUMENT", "The project in the resource name must be the wildcard '-'.")
        }
        guard let email = try? URLText.decode(parts[5].dropLast(":signBlob".count)), !email.isEmpty else {
            return Self.googleError(400, "INVALID_ARGUMENT", "Invalid service account name.")
        }
        guard let header = request.headers["Authorization"], header.hasPrefix("Bearer ") else {
            return Self.googleError(
                401, "UNAUTHENTICATED", "Request is missing required authentication credential: a Bearer access token.")
        }
        let grant: AccessTokenTable.Grant
        do {
            grant = try authentication.tokens.grant(for: String(header.dropFirst("Bearer ".count)), now: settings.now())
        } catch {
            return Self.googleError(
                401, "UNAUTHENTICATED",
                error == .expired ? "The access token has expired." : "Request had invalid authentication credentials.")
        }
        guard let account = authentication.accounts.account(email) else {
            return Self.googleError(404, "NOT_FOUND", "Service account projects/-/serviceAccounts/\(email) not found.")
        }
        guard grant.principal == .serviceAccount(email) else {
            return Self.googleError(
                403, "PERMISSION_DENIED",
                "Permission 'iam.serviceAccounts.signBlob' denied on projects/-/serviceAccounts/\(email): the token is not that account's."
            )
        }
        guard !Self.iamScopes.isDisjoint(with: grant.scopes) else {
            return Self.googleError(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.")
        }
        guard let privateKey = account.privateKey else {
            return Self.googleError(
                403, "PERMISSION_DENIED", "The emulator has no private key for \(email), so it cannot sign for it.")
        }
        return try Self.signedBlob(request, body, with: privateKey, keyID: account.keyID)
    }

    /// The answer to an authorized signBlob request: its payload signed with `privateKey`.
    private static func signedBlob(
        _ request: any ServerRequest, _ body: BodyReader, with privateKey: RSAKey, keyID: String
    ) throws -> Reply {
        if let length = request.contentLength, length > Int64(Self.maxSignBlobBody) {
            return Self.googleError(413, "INVALID_ARGUMENT", "The request body is too large.")
        }
        let json = try JSON.decodeObject(try body.readAll(limit: Self.maxSignBlobBody))
        guard let text = json["payload"] as? String else {
            return Self.googleError(400, "INVALID_ARGUMENT", "Missing required field: payload (base64).")
        }
        guard let payload = Data(base64Encoded: text) else {
            return Self.googleError(400, "INVALID_ARGUMENT", "The payload is not valid base64.")
        }
        let signature: [UInt8]
        do {
            signature = try privateKey.signSHA256(Array(payload))
        } catch {
            return Self.googleError(500, "INTERNAL", "Signing failed: \(error)")
        }
        return Reply.json(200, ["keyId": keyID, "signedBlob": Data(signature).base64EncodedString()])
    }

    /// Google APIs' error JSON: `{"error": {"code", "message", "status"}}`.
    static func googleError(_ code: Int, _ status: String, _ message: String) -> Reply {
        Reply.json(code, ["error": ["code": code, "message": message, "status": status] as [String: Any]])
    }
}
