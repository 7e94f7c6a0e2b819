import Foundation
import HTTPClient

/// One call to the IAM Credentials API's `signBlob`: the signature of some bytes by a
/// service account's Google-managed key, for a caller that holds a token but no key.
///
/// `POST <base>/v1/projects/-/serviceAccounts/<email>:signBlob` with
/// `{"payload": "<base64>"}` answers `{"keyId": "…", "signedBlob": "<base64>"}`.
struct IAMSignBlob: Sendable {
    let baseURL: URL
    let email: String
    /// Whose tokens authorize the call; nil for the Storage's own.
    var authorization: StorageAuthorization? = nil

    /// The request, without its `Authorization` (the call executor adds it).
    func request(payload: [UInt8]) -> HTTPRequest {
        let body = "{\"payload\":\"\(Data(payload).base64EncodedString())\"}"
        var request = HTTPRequest(
            method: "POST",
            url: WireURL.make(
                base: baseURL, path: "/v1/projects/-/serviceAccounts/\(WireURL.pathSegment(email)):signBlob"),
            body: .data(Data(body.utf8)),
            // Signing is a pure function of the payload: sending it twice does no harm.
            isIdempotent: true
        )
        request.headers.add("Content-Type", "application/json; charset=UTF-8")
        return request
    }

    /// Asks IAM to sign `payload` with `storage`'s token, transport and retry budget.
    ///
    /// - Throws: ``StorageErrorCode/unauthorized`` when IAM refuses (403: no permission
    ///   to sign for the account), ``StorageErrorCode/invalidArgument`` for 400 and 404
    ///   (no such account), ``StorageErrorCode/unauthenticated`` when the token is refused
    ///   even after a refresh, ``StorageErrorCode/protocolViolation`` for an answer without
    ///   a signature; retry exhaustion and cancellation as other operations.
    func sign(_ payload: [UInt8], for storage: Storage) async throws(StorageError) -> [UInt8] {
        // An endpoint of IAM's own, so the header says `Bearer` (an OAuth access token)
        // whatever protocol the Storage speaks; credentials, settings and transport are its.
        let iam = Storage(
            bucket: storage.bucket, endpoint: .gcs(baseURL), authorization: authorization ?? storage.authorization,
            configuration: storage.configuration, transport: storage.transport)
        var executor = CallExecutor(storage: iam, operation: .other)
        let response = try await executor.execute(
            request(payload: payload), idempotency: .idempotent, accepting: [200, 400, 403, 404],
            about: .object(email))
        return try signature(in: response)
    }

    /// The signature in a `signBlob` answer, or the error a refusal means.
    func signature(in response: HTTPResponse) throws(StorageError) -> [UInt8] {
        switch response.status {
        case 200:
            break
        case 403:
            throw StorageError(
                .unauthorized, "IAM refused to sign as \(email): the token's account may not sign for it.",
                httpStatus: 403, serverMessage: response.serverMessage)
        default:
            throw StorageError(
                .invalidArgument, "IAM refused to sign as \(email) (no such account, or a malformed request).",
                httpStatus: response.status, serverMessage: response.serverMessage)
        }
        guard let object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
            let text = object["signedBlob"] as? String, let signature = Data(base64Encoded: text),
            !signature.isEmpty
        else {
            throw .protocolViolation("IAM's signBlob answer carries no base64 signedBlob.")
        }
        return Array(signature)
    }
}
