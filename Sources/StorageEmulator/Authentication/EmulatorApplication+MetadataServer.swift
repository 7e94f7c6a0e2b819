import Foundation
import HTTP1

/// The Compute Engine metadata server's credential paths (`/computeMetadata/v1/…`), served
/// on the emulator's port so that `GCE_METADATA_HOST=127.0.0.1:<port>` points clients at it.
extension EmulatorApplication {
    func metadataServer(_ request: any ServerRequest) throws -> Reply {
        guard let authentication = settings.authentication, let account = authentication.metadataServerAccount
        else { throw HTTPError(404, "Not Found") }
        var reply = metadataAnswer(request, authentication, account)
        // Every answer carries the flavor, as on a VM: clients detect the server by it.
        reply.headers.set("Metadata-Flavor", "Google")
        reply.headers.set("Server", "Metadata Server for VM")
        return reply
    }

    private func metadataAnswer(
        _ request: any ServerRequest, _ authentication: AuthenticationService,
        _ account: StorageEmulator.Authentication.MetadataServerAccount
    ) -> Reply {
        // The header proves the request is not a browser or a redirected request (SSRF); a
        // proxied request is refused for the same reason.
        guard request.headers["Metadata-Flavor"] == "Google" else {
            return Self.text(403, "Missing required header: Metadata-Flavor: Google\n")
        }
        guard request.headers["X-Forwarded-For"] == nil else {
            return Self.text(403, "Requests with X-Forwarded-For are refused.\n")
        }
        let accountPrefix = Self.metadataAccountPrefix
        guard let route = Self.metadataRoute(request.path, account: account) else {
            return Self.text(404, "Not Found\n")
        }
        guard request.method == "GET" else { return Self.text(405, "Method Not Allowed\n") }
        switch route {
        case accountPrefix + "default/token":
            return metadataToken(request, authentication, account)
        case accountPrefix + "default/email":
            return Self.text(200, account.email)
        case accountPrefix + "default/scopes":
            return Self.text(200, AuthenticationService.defaultMetadataScopes.map { $0 + "\n" }.joined())
        case accountPrefix + "default/":
            // Some clients read the account's description in one request.
            if request.query("recursive") == "true" {
                var reply = Reply.json(
                    200,
                    [
                        "aliases": ["default"], "email": account.email,
                        "scopes": AuthenticationService.defaultMetadataScopes,
                    ])
                reply.headers.set("Content-Type", "application/json")
                return reply
            }
            return Self.text(200, "aliases\nemail\nscopes\ntoken\n")
        case accountPrefix:
            return Self.text(200, "default/\n\(account.email)/\n")
        case "/computeMetadata/v1/project/project-id":
            return Self.text(200, account.projectID)
        case "/":
            // The detection probe of Google's client libraries asks for the server's root.
            return Self.text(200, "computeMetadata/\n")
        default:
            return Self.text(200, "instance/\nproject/\n")
        }
    }

    private static let metadataAccountPrefix = "/computeMetadata/v1/instance/service-accounts/"

    /// The path a request names, with the account spelled `default` (`default` and the account's
    /// own email both name the VM's account), or nil for a path the server does not have.
    private static func metadataRoute(
        _ path: String, account: StorageEmulator.Authentication.MetadataServerAccount
    ) -> String? {
        let accountPrefix = metadataAccountPrefix
        var route = path
        if path.hasPrefix(accountPrefix) {
            let rest = path.dropFirst(accountPrefix.count)
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let name = (try? URLText.decode(rest[..<slash])) ?? ""
            if !rest.isEmpty {
                guard name == "default" || name == account.email else { return nil }
                route = accountPrefix + "default" + rest[slash...]
            }
        }
        let known = [
            "/", "/computeMetadata/v1", "/computeMetadata/v1/", accountPrefix, accountPrefix + "default/",
            accountPrefix + "default/token", accountPrefix + "default/email", accountPrefix + "default/scopes",
            "/computeMetadata/v1/project/project-id",
        ]
        return known.contains(route) ? route : nil
    }

    /// The account's access token, for the scopes the request names (the default ones without).
    private func metadataToken(
        _ request: any ServerRequest, _ authentication: AuthenticationService,
        _ account: StorageEmulator.Authentication.MetadataServerAccount
    ) -> Reply {
        var scopes = AuthenticationService.defaultMetadataScopes
        if let list = request.query("scopes") {
            scopes = list.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard !scopes.isEmpty, !scopes.contains(where: \.isEmpty) else {
                return Self.text(400, "The scopes parameter is empty or malformed.\n")
            }
        }
        return authentication.tokenReply(for: .serviceAccount(account.email), scopes: scopes, now: settings.now())
    }

    /// A plain-text answer, as the metadata server gives.
    private static func text(_ status: Int, _ text: String) -> Reply {
        var reply = Reply(status: status, body: Data(text.utf8))
        reply.headers.set("Content-Type", "application/text")
        return reply
    }
}
