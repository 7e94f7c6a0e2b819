import Foundation
import HTTP1
import HTTPClient

/// The requests a credential makes to get a token: to an OAuth 2 token endpoint (a form
/// `POST`) or to the metadata server (a `GET`), through the requesting ``Storage``'s own
/// transport, retrying transient failures within the operation's retry time.
///
/// What it sends may be secret (a signed assertion, a refresh token, a client secret) and
/// what it receives is: neither ever goes into an error. A refusal's error carries the
/// endpoint's own `error` and `error_description`, nothing else of its body.
enum TokenEndpoint {
    /// Exchanges a grant for an access token at an OAuth 2 token endpoint.
    ///
    /// - Parameters:
    ///   - form: The grant's fields, sent as `application/x-www-form-urlencoded`.
    ///   - url: The endpoint (a key file's `token_uri`).
    ///   - grant: What is exchanged, for messages ("the service account key of …").
    ///   - context: The transport and retry time to use.
    /// - Returns: The token.
    /// - Throws: ``StorageErrorCode/unauthenticated`` when the endpoint refuses (with its
    ///   `error_description` as ``StorageError/serverMessage``) or the URL would send the secret
    ///   over plain HTTP to another machine; ``StorageErrorCode/retryLimitExceeded`` when
    ///   transient failures outlast the retry time; ``StorageErrorCode/protocolViolation``
    ///   for an answer without a token, one larger than any token answer, or a corrupt TLS
    ///   stream (see ``TransportFailureVerdict``); ``StorageErrorCode/tlsFailure``;
    ///   ``StorageErrorCode/cancelled``.
    static func exchange(
        form: [(name: String, value: String)], at url: URL, grant: String, context: TokenRequestContext
    ) async throws(StorageError) -> AccessToken {
        guard !url.isPlainHTTPToAnotherMachine else {
            throw StorageError(
                .unauthenticated,
                "Refusing to send \(grant) over plain HTTP to \(url.host ?? "an unknown host"); the token URI must be https or a loopback address."
            )
        }
        var headers = HTTPHeaders()
        headers.set("Content-Type", "application/x-www-form-urlencoded")
        headers.set("Accept", "application/json")
        let request = HTTPRequest(
            method: "POST", url: url, headers: headers, body: .data(Data(formEncoded(form).utf8)),
            idleTimeout: context.requestTimeout, isIdempotent: true)
        let response = try await send(request, to: "the token endpoint \(url.absoluteString)", context: context)
        guard response.status == 200 else {
            throw refusal(response, by: "The token endpoint \(url.absoluteString)", of: grant)
        }
        return try token(in: response, from: "The token endpoint \(url.absoluteString)")
    }

    /// Sends `request` through a call executor of its own (token requests are idempotent),
    /// retrying failures that may pass (408, 429, 5xx, and failures below HTTP as
    /// ``TransportFailureVerdict`` sorts them) within the context's retry time.
    ///
    /// Each attempt must be over within the request time-out, and by the end of the retry
    /// time once that runs, however slowly the server sends (see
    /// ``RetryBackoff/Attempts/deadline(forAttemptAt:limit:policy:)``).
    ///
    /// - Parameter server: Names the server in messages ("the token endpoint https://…").
    /// - Returns: The first answer that is not worth retrying.
    static func send(
        _ request: HTTPRequest, to server: String, context: TokenRequestContext
    ) async throws(StorageError) -> HTTPResponse {
        var executor = CallExecutor(tokenRequestsOf: context, server: server)
        return try await executor.execute(
            request, idempotency: .idempotent, accepting: finalStatuses, about: .object(server))
    }

    /// The statuses a token request does not retry: all but 408, 429 and 5xx. The caller reads
    /// a token from 200 and a refusal from the others.
    private static let finalStatuses = Set(100...599).subtracting([408, 429]).subtracting(500...599)

    /// The token of a successful answer: `{"access_token": …, "expires_in": …, "token_type": "Bearer"}`.
    ///
    /// - Parameter server: Names the server in messages, capitalized ("The metadata server at …").
    static func token(in response: HTTPResponse, from server: String) throws(StorageError) -> AccessToken {
        let issued = ContinuousClock.now
        guard let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any],
            let value = object["access_token"] as? String, !value.isEmpty,
            value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw .protocolViolation("\(server) answered HTTP 200 without a usable access_token.")
        }
        if let type = object["token_type"] as? String, type.lowercased() != "bearer" {
            throw .protocolViolation("\(server) issued a token of type \(type), not Bearer.")
        }
        // JSONSerialization reads integers as NSNumber; a string or a fraction is tolerated.
        let seconds: Double? =
            (object["expires_in"] as? NSNumber)?.doubleValue ?? (object["expires_in"] as? String).flatMap(Double.init)
        let lifetime =
            seconds.map { $0.isFinite ? Duration.seconds(min(max($0, 0), 86_400)) : AccessToken.defaultLifetime }
            ?? AccessToken.defaultLifetime
        return AccessToken(value: value, lifetime: lifetime, issued: issued)
    }

    /// The error for an endpoint's refusal: its `error` and `error_description` (RFC 6749 §5.2)
    /// and status, never the rest of its body.
    static func refusal(_ response: HTTPResponse, by server: String, of grant: String) -> StorageError {
        let fields = OAuthErrorAnswer.fields(in: response.body)
        let code = fields?.code.map { " (\($0))" } ?? ""
        return StorageError(
            .unauthenticated, "\(server) refused \(grant)\(code).", httpStatus: response.status,
            serverMessage: fields?.description)
    }

    /// `application/x-www-form-urlencoded`: every byte but the unreserved ones percent-encoded.
    static func formEncoded(_ fields: [(name: String, value: String)]) -> String {
        fields.map { "\(percentEncoded($0.name))=\(percentEncoded($0.value))" }.joined(separator: "&")
    }

    static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                encoded.unicodeScalars.append("%")
                encoded.unicodeScalars.append(hex[Int(byte >> 4)])
                encoded.unicodeScalars.append(hex[Int(byte & 0x0F)])
            }
        }
        return encoded
    }
}
