import Foundation
import HTTP1
import NativeTLS
import V4Signing

/// Checks a V4-signed request (`X-Goog-Signature` in the query) as Cloud Storage does:
/// rebuilds the canonical request from what arrived, checks the signature against the public
/// key of the account its credential names, and the time against its date and expiry.
///
/// Pure: the keys and the clock come in, a verdict goes out. Refusals are GCS's XML-API
/// errors: 400 `AuthorizationQueryParametersError` for missing or malformed parameters,
/// 400 `ExpiredToken` for a URL past its expiry (or before its date), 403
/// `SignatureDoesNotMatch` for an unknown account, a missing signed header or a wrong signature.
struct V4SignatureVerifier: Sendable {
    /// The request as received.
    struct Request {
        /// `GET`, `PUT`, …
        var method: String
        /// The path, still percent-encoded.
        var path: String
        /// The query, decoded, in order.
        var queryItems: [(name: String, value: String)]
        var headers: HTTPHeaders
    }

    /// What a valid signature vouches for.
    struct Verified: Equatable {
        /// The account that signed.
        var email: String
        /// The body's SHA-256 (hex) the signature covers, or nil when the body is not signed.
        var payloadHash: String?
    }

    /// The key that verifies an account's signatures, by email; nil for an unknown account.
    let publicKey: @Sendable (_ email: String) -> RSAKey?

    init(publicKey: @escaping @Sendable (_ email: String) -> RSAKey?) {
        self.publicKey = publicKey
    }

    init(publicKeys: [String: RSAKey]) {
        self.init { publicKeys[$0] }
    }

    /// Whether a request claims to be V4-signed (and so must be verified as one).
    static func isSigned(_ queryItems: [(name: String, value: String)]) -> Bool {
        queryItems.contains { $0.name == V4CanonicalRequest.Query.signature }
    }

    /// Verifies `request` at time `now`.
    ///
    /// - Returns: The account that signed, and the body hash the signature covers; the
    ///   caller checks the body against it.
    /// - Throws: ``HTTPError`` with GCS's status and XML error code as its reason.
    func verify(_ request: Request, now: Date) throws(HTTPError) -> Verified {
        let parameters = try SignedParameters(request.queryItems)
        try Self.checkWindow(parameters, now: now)
        let canonical = try Self.canonicalRequest(request, signedHeaders: parameters.signedHeaders)
        let stringToSign = try Self.stringToSign(canonical, timestamp: parameters.timestamp)
        guard let key = publicKey(parameters.email) else {
            throw Self.mismatch("No service account \(parameters.email) is known to this emulator.")
        }
        guard key.isValidSHA256Signature(parameters.signature, of: Array(stringToSign.utf8)) else {
            throw Self.mismatch(
                "The request signature we calculated does not match the signature you provided. "
                    + "StringToSign: \(stringToSign.debugDescription) CanonicalRequest: \(canonical.text.debugDescription)"
            )
        }
        let payloadHash = canonical.payloadHash
        return Verified(
            email: parameters.email, payloadHash: payloadHash == V4CanonicalRequest.unsignedPayload ? nil : payloadHash)
    }

    /// The `X-Goog-*` parameters of a signed request, well-formed (whether they are true is for
    /// the clock, the canonical request and the key to say).
    private struct SignedParameters {
        typealias Query = V4CanonicalRequest.Query

        var timestamp: V4Timestamp
        /// Seconds from `timestamp` that the signature stays valid.
        var expires: Int64
        /// The account the credential names.
        var email: String
        /// Lower-case, in order, `host` among them.
        var signedHeaders: [String]
        var signature: [UInt8]

        /// Checked in a fixed order, so that of several malformed parameters the same one is refused.
        init(_ queryItems: [(name: String, value: String)]) throws(HTTPError) {
            func single(_ name: String) throws(HTTPError) -> String {
                try Self.single(name, in: queryItems)
            }
            guard try single(Query.algorithm) == V4CanonicalRequest.algorithm else {
                throw V4SignatureVerifier.parameterError(
                    "Only the \(V4CanonicalRequest.algorithm) algorithm is supported.")
            }
            guard let timestamp = V4Timestamp(text: try single(Query.date)) else {
                throw V4SignatureVerifier.parameterError("X-Goog-Date must look like 20190201T090000Z.")
            }
            self.timestamp = timestamp
            expires = try Self.expires(single(Query.expires))
            email = try Self.email(credential: single(Query.credential), timestamp: timestamp)
            signedHeaders = try Self.signedHeaders(single(Query.signedHeaders))
            guard let signature = V4SignatureVerifier.bytes(hex: try single(Query.signature)) else {
                throw V4SignatureVerifier.parameterError("X-Goog-Signature must be hexadecimal.")
            }
            self.signature = signature
        }

        /// The value of a parameter that must be there exactly once.
        private static func single(
            _ name: String, in queryItems: [(name: String, value: String)]
        ) throws(HTTPError) -> String {
            let values = queryItems.filter { $0.name == name }
            guard values.count == 1 else {
                throw V4SignatureVerifier.parameterError(
                    values.isEmpty ? "The signed request has no \(name) parameter." : "\(name) is given more than once."
                )
            }
            return values[0].value
        }

        /// Plain digits only, as `Int64(_:)` alone would take a sign too.
        private static func expires(_ text: String) throws(HTTPError) -> Int64 {
            guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), text.utf8.count <= 7,
                let expires = Int64(text), (1...V4CanonicalRequest.maximumExpiry).contains(expires)
            else {
                throw V4SignatureVerifier.parameterError(
                    "X-Goog-Expires must be a whole number of seconds from 1 to \(V4CanonicalRequest.maximumExpiry).")
            }
            return expires
        }

        /// The email of `<email>/<date>/auto/storage/goog4_request`, whose date must be `X-Goog-Date`'s.
        private static func email(credential text: String, timestamp: V4Timestamp) throws(HTTPError) -> String {
            let credential = text.split(separator: "/", omittingEmptySubsequences: false)
            guard credential.count == 5, !credential[0].isEmpty,
                credential[1...].joined(separator: "/") == V4CanonicalRequest.credentialScope(timestamp)
            else {
                throw V4SignatureVerifier.parameterError(
                    "X-Goog-Credential must be <email>/\(V4CanonicalRequest.credentialScope(timestamp)), matching X-Goog-Date."
                )
            }
            return String(credential[0])
        }

        /// The names a signature covers must be canonical already: the canonical request lists them as given.
        private static func signedHeaders(_ text: String) throws(HTTPError) -> [String] {
            let names = text.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            guard names.contains("host"),
                names.allSatisfy({ V4CanonicalRequest.isValidHeaderName($0) && $0 == $0.lowercased() }),
                zip(names, names.dropFirst()).allSatisfy({ $0.utf8.lexicographicallyPrecedes($1.utf8) })
            else {
                throw V4SignatureVerifier.parameterError(
                    "X-Goog-SignedHeaders must list lower-case header names in order, separated by ';', host among them."
                )
            }
            return names
        }
    }

    /// The time window: [date, date + expires).
    private static func checkWindow(_ parameters: SignedParameters, now: Date) throws(HTTPError) {
        let timestamp = parameters.timestamp
        let expires = parameters.expires
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        if nowSeconds < timestamp.secondsSince1970 {
            throw HTTPError(
                400, "Request is not valid yet: its X-Goog-Date \(timestamp.text) is in the future.",
                reason: "ExpiredToken")
        }
        if nowSeconds >= timestamp.secondsSince1970 + expires {
            throw HTTPError(
                400,
                "Invalid argument. Request has expired: \(timestamp.secondsSince1970 + expires) (signed at \(timestamp.text) for \(expires) s).",
                reason: "ExpiredToken")
        }
    }

    /// The canonical request, rebuilt from what arrived: what the signer built, if the request is as signed.
    private static func canonicalRequest(
        _ request: Request, signedHeaders: [String]
    ) throws(HTTPError) -> V4CanonicalRequest {
        var headers: [(name: String, value: String)] = []
        for name in signedHeaders {
            let values = request.headers.values(name)
            guard !values.isEmpty else {
                throw Self.mismatch("The header \(name) is signed but the request does not carry it.")
            }
            let value =
                name == "host"
                ? V4CanonicalRequest.canonicalHost(authority: values[0])
                : values.map { V4CanonicalRequest.canonicalHeaderValue($0) }.joined(separator: ",")
            headers.append((name, value))
        }
        guard let decodedPath = V4PercentEncoding.decode(request.path) else {
            throw Self.parameterError("The request path's percent-encoding is malformed.")
        }
        return V4CanonicalRequest(
            method: request.method, encodedPath: V4CanonicalRequest.encodedPath(decodedPath),
            query: request.queryItems.filter { $0.name != V4CanonicalRequest.Query.signature }, headers: headers)
    }

    private static func stringToSign(
        _ canonical: V4CanonicalRequest, timestamp: V4Timestamp
    ) throws(HTTPError) -> String {
        do {
            let hash = try OpenSSLDigest.sha256(Array(canonical.text.utf8))
            return V4CanonicalRequest.stringToSign(
                timestamp: timestamp, canonicalRequestHash: hash.map { Self.hex($0) }.joined())
        } catch {
            throw HTTPError(500, "SHA-256 is unavailable: \(error).", reason: "InternalError")
        }
    }

    private static func parameterError(_ message: String) -> HTTPError {
        HTTPError(400, message, reason: "AuthorizationQueryParametersError")
    }

    private static func mismatch(_ message: String) -> HTTPError {
        HTTPError(403, message, reason: "SignatureDoesNotMatch")
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }

    /// The bytes of even-length hexadecimal text (either case); nil for anything else.
    private static func bytes(hex text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard !digits.isEmpty, digits.count % 2 == 0, digits.count <= 2048 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
