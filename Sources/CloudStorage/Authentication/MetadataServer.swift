import Foundation
import HTTP1
import HTTPClient

/// The metadata server of Compute Engine, Cloud Run, GKE and Cloud Functions: it hands out
/// access tokens for the service account the workload runs as.
///
/// Plain HTTP by design: it answers at a link-local address (`169.254.169.254`) that never
/// leaves the host, and the requests carry no secret. Every request carries
/// `Metadata-Flavor: Google`, which the server requires (so that a browser or a proxy
/// cannot be tricked into fetching a token).
struct MetadataServer: Sendable {
    /// Where the metadata server answers unless `GCE_METADATA_HOST` says otherwise.
    static let defaultHost = "169.254.169.254"

    /// How long detection waits for an answer: long enough for a real metadata server
    /// (which answers in milliseconds), short enough that a laptop with no route to it does
    /// not hang an operation.
    static let probeTimeout: Duration = .milliseconds(1500)

    /// `host` or `host:port`.
    let host: String

    /// The server that `GCE_METADATA_HOST` in `environment` names, else the default one.
    init(environment: [String: String]) {
        let named = environment["GCE_METADATA_HOST"]?.trimmingCharacters(in: .whitespaces) ?? ""
        host = named.isEmpty ? Self.defaultHost : named
    }

    init(host: String) {
        self.host = host
    }

    /// `http://<host>/computeMetadata/v1/<path>`, or nil when `host` does not make a URL.
    func url(_ path: String) -> URL? {
        URL(string: "http://\(host)/computeMetadata/v1/\(path)")
    }

    /// A description for messages: "the metadata server at 169.254.169.254".
    var name: String { "the metadata server at \(host)" }

    /// Whether a metadata server answers here, within ``probeTimeout``, with
    /// `Metadata-Flavor: Google` on its answer (a captive portal or another server at that
    /// address does not count). No retry: this is detection, and a missing server's
    /// connection times out or is refused.
    ///
    /// - Returns: Nil when it answered; else why not, for the "nothing found" message.
    func probe(using transport: any HTTPTransport) async -> String? {
        guard let url = url("") else { return "GCE_METADATA_HOST (\(host)) does not make a URL" }
        let request = HTTPRequest(
            method: "GET", url: url, headers: ["Metadata-Flavor": "Google"], idleTimeout: Self.probeTimeout,
            isIdempotent: true)
        // All of it, not only each wait: something at that address that trickles bytes is no
        // metadata server. One attempt: this is detection.
        let context = TokenRequestContext(
            transport: transport, requestTimeout: Self.probeTimeout,
            retryBackoff: RetryBackoff(configuration: StorageConfiguration(), operation: .other), retryPolicy: .never)
        var executor = CallExecutor(tokenRequestsOf: context, server: name)
        // Every status is an answer, so only a failure below HTTP comes back as retryable.
        let response: HTTPResponse
        do {
            switch try await executor.send(
                request, idempotency: .idempotent, accepting: Set(100...599), about: .object(name))
            {
            case .answer(let answer): response = answer
            case .retryable(let failure): return unanswered(failure)
            }
        } catch {
            return unanswered(error)
        }
        guard response.headers["Metadata-Flavor"] == "Google" else {
            return "\(name) answered without Metadata-Flavor: Google"
        }
        guard response.status == 200 else { return "\(name) answered HTTP \(response.status)" }
        return nil
    }

    /// Why a probe got no answer: the transport's failure kind, or the error's message.
    private func unanswered(_ error: StorageError) -> String {
        let cause = (error.underlyingError as? HTTPTransportError).map { "\($0.kind)" } ?? error.message
        return "no metadata server answered at \(host) (\(cause))"
    }

    /// An access token for the default service account, for `scopes`.
    func fetchToken(scopes: [String], context: TokenRequestContext) async throws(StorageError) -> AccessToken {
        var path = "instance/service-accounts/default/token"
        if !scopes.isEmpty {
            path += "?scopes=" + scopes.map(TokenEndpoint.percentEncoded).joined(separator: ",")
        }
        let response = try await get(path, context: context)
        return try TokenEndpoint.token(in: response, from: name.capitalizedFirst)
    }

    /// The email of the default service account (what V4 signing names as the signer).
    func serviceAccountEmail(context: TokenRequestContext) async throws(StorageError) -> String {
        let response = try await get("instance/service-accounts/default/email", context: context)
        let email = String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !email.isEmpty, email.count <= 320, !email.contains(where: { $0.isWhitespace }) else {
            throw .protocolViolation("\(name.capitalizedFirst) answered no usable service account email.")
        }
        return email
    }

    /// GETs `path`, retrying transient failures; anything but 200 is a refusal.
    private func get(_ path: String, context: TokenRequestContext) async throws(StorageError) -> HTTPResponse {
        guard let url = url(path) else {
            throw StorageError(.unauthenticated, "GCE_METADATA_HOST (\(host)) does not make a URL.")
        }
        let request = HTTPRequest(
            method: "GET", url: url, headers: ["Metadata-Flavor": "Google"], idleTimeout: context.requestTimeout,
            isIdempotent: true)
        let response = try await TokenEndpoint.send(request, to: name, context: context)
        guard response.status == 200 else {
            // Its error bodies are short plain text ("... not found"), never a secret.
            let text = String(decoding: response.body.prefix(300), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw StorageError(
                .unauthenticated, "\(name.capitalizedFirst) refused /computeMetadata/v1/\(path.prefix { $0 != "?" }).",
                httpStatus: response.status, serverMessage: text.isEmpty ? nil : text)
        }
        return response
    }
}

extension String {
    /// The string with its first character uppercased ("the metadata server" → "The metadata server").
    var capitalizedFirst: String {
        prefix(1).uppercased() + dropFirst()
    }
}
