import CloudStorage
package import Foundation
import NativeTLS
import Synchronization

/// Google's token endpoint, metadata server and a storage server that checks bearer tokens,
/// in one loopback server, with scripted refusals and failures: enough of the wire protocol
/// (AUTH-CONTRACT.md) to test the SDK's credentials against.
///
/// The token endpoint verifies a service account's JWT with Tests/TestCredentials'
/// public key and an authorized user's client secret and refresh token; the storage server
/// answers `DELETE /storage/v1/b/<bucket>/o/<name>` with 204 for a live token, else 401.
package final class GoogleAuthFake: Sendable {
    struct State {
        /// Tokens the storage server accepts.
        var live: Set<String> = []
        var issued = 0
        /// Answers the token endpoint or metadata server gives before issuing, one per request.
        var scripted: [AuthTestServer.Reply] = []
        var expiresIn = 3599
    }

    /// The state the server's threads and the test share.
    final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let shared = Shared()
    private let server: AuthTestServer

    /// Starts the server on a free loopback port.
    package init() throws {
        let publicKey = try RSAKey(publicKeyPEM: Array(try TestCredentials.text("service-account.pub").utf8))
        let shared = self.shared
        server = try AuthTestServer { request in
            Self.answer(request, state: shared.state, publicKey: publicKey)
        }
    }

    /// The server's `http://127.0.0.1:<port>` URL: its storage server.
    package var baseURL: URL { server.baseURL }
    /// The token endpoint, for a key file's `token_uri`.
    package var tokenURI: String { baseURL.absoluteString + "/token" }
    /// The metadata server, for `GCE_METADATA_HOST`.
    package var metadataHost: String { "127.0.0.1:\(server.port)" }
    /// How many tokens have been issued.
    package var grants: Int { shared.state.withLock { $0.issued } }

    /// Every issued token stops being accepted (as if it expired).
    package func expireAllTokens() { shared.state.withLock { $0.live = [] } }

    /// The next token requests get these answers instead of a token.
    package func script(_ replies: AuthTestServer.Reply...) { shared.state.withLock { $0.scripted += replies } }

    /// The `expires_in` of tokens issued from now on.
    func setExpiresIn(_ seconds: Int) { shared.state.withLock { $0.expiresIn = seconds } }

    /// The requests to `path`.
    package func requests(to path: String) -> [AuthTestServer.Request] { server.requests(to: path) }

    /// Stops listening and closes every connection.
    package func stop() { server.stop() }

    private static func answer(
        _ request: AuthTestServer.Request, state: borrowing Mutex<State>, publicKey: RSAKey
    ) -> AuthTestServer.Reply {
        switch (request.method, request.path) {
        case ("POST", "/token"):
            if let scripted = state.withLock({ $0.scripted.isEmpty ? nil : $0.scripted.removeFirst() }) {
                return scripted
            }
            guard request.headers["Content-Type"] == "application/x-www-form-urlencoded" else {
                return .json(400, #"{"error":"invalid_request","error_description":"not a form"}"#)
            }
            let form = request.form
            switch form["grant_type"] {
            case "urn:ietf:params:oauth:grant-type:jwt-bearer":
                guard let jwt = form["assertion"], verify(jwt, publicKey: publicKey) else {
                    return .json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
                }
            case "refresh_token":
                guard form["client_id"] == "test-client.apps.googleusercontent.com",
                    form["client_secret"] == "TEST-ONLY-client-secret",
                    form["refresh_token"] == "TEST-ONLY-refresh-token"
                else {
                    return .json(400, #"{"error":"invalid_grant","error_description":"Bad Request"}"#)
                }
            default:
                return .json(400, #"{"error":"unsupported_grant_type","error_description":"Invalid grant_type"}"#)
            }
            return issue(state)
        case ("GET", "/computeMetadata/v1/"):
            guard request.headers["Metadata-Flavor"] == "Google" else { return forbidden }
            return AuthTestServer.Reply(status: 200, headers: [("Metadata-Flavor", "Google")], body: "instance/\n")
        case ("GET", "/computeMetadata/v1/instance/service-accounts/default/token"):
            guard request.headers["Metadata-Flavor"] == "Google" else { return forbidden }
            if let scripted = state.withLock({ $0.scripted.isEmpty ? nil : $0.scripted.removeFirst() }) {
                return scripted
            }
            var reply = issue(state)
            reply.headers.append(("Metadata-Flavor", "Google"))
            return reply
        case ("GET", "/computeMetadata/v1/instance/service-accounts/default/email"):
            guard request.headers["Metadata-Flavor"] == "Google" else { return forbidden }
            return AuthTestServer.Reply(
                status: 200, headers: [("Metadata-Flavor", "Google")], body: TestKeyFiles.email)
        case ("DELETE", let path) where path.hasPrefix("/storage/v1/b/"):
            let authorization = request.headers["Authorization"] ?? ""
            let live = state.withLock { $0.live }
            guard authorization.hasPrefix("Bearer "), live.contains(String(authorization.dropFirst(7))) else {
                return .json(401, #"{"error":{"code":401,"message":"Invalid Credentials"}}"#)
            }
            return AuthTestServer.Reply(status: 204)
        default:
            return AuthTestServer.Reply(status: 404, body: "no route \(request.method) \(request.path)")
        }
    }

    private static let forbidden = AuthTestServer.Reply(status: 403, body: "Missing Metadata-Flavor:Google header.")

    private static func issue(_ state: borrowing Mutex<State>) -> AuthTestServer.Reply {
        let (token, expiresIn) = state.withLock { state -> (String, Int) in
            state.issued += 1
            let token = "ya29.test-token-\(state.issued)"
            state.live.insert(token)
            return (token, state.expiresIn)
        }
        return .token(token, expiresIn: expiresIn)
    }

    /// Whether `jwt` is signed by the test key and names the test account.
    private static func verify(_ jwt: String, publicKey: RSAKey) -> Bool {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let signature = Base64URL.decode(parts[2]),
            let claims = Base64URL.decode(parts[1]),
            let object = try? JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any],
            object["iss"] as? String == TestKeyFiles.email
        else { return false }
        return publicKey.isValidSHA256Signature(signature, of: Array("\(parts[0]).\(parts[1])".utf8))
    }
}
