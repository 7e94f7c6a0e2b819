import Foundation
import V4Signing

/// Everything a V4 signed URL is made of, before and after its signature: the canonical
/// request, the string to sign, and the URL once the signature is known.
///
/// Checks what the caller gave (expiry, headers, query parameters) and throws
/// ``StorageErrorCode/invalidArgument`` with the reason; builds no request and signs nothing.
struct V4SignedURLRequest: Sendable {
    /// Where the URL points: scheme, `host[:port]` as written in the URL, and the encoded path.
    struct Target: Sendable, Equatable {
        var scheme: String
        var authority: String
        var encodedPath: String
    }

    let target: Target
    let canonicalRequest: V4CanonicalRequest
    let stringToSign: String

    /// - Parameters:
    ///   - method: `GET`, `PUT`, `POST`, `DELETE`.
    ///   - target: The URL's scheme, authority and path.
    ///   - email: The signing account, for `X-Goog-Credential`.
    ///   - timestamp: `X-Goog-Date`: when the URL starts to be valid.
    ///   - expiresIn: How long it stays valid: whole seconds, 1 to 604800.
    ///   - headers: Headers the request must carry with exactly these values (besides `host`).
    ///   - queryParameters: Further parameters the URL carries, signed.
    init(
        method: String, target: Target, email: String, timestamp: Date, expiresIn: Duration,
        headers: [String: String], queryParameters: [String: String]
    ) throws(StorageError) {
        let seconds = try Self.expirySeconds(expiresIn)
        guard let timestamp = V4Timestamp(secondsSince1970: Int64(timestamp.timeIntervalSince1970.rounded(.down)))
        else { throw .invalidArgument("The signing time \(timestamp) is outside the years 1 to 9999.") }
        var signed: [(name: String, value: String)] = [
            ("host", V4CanonicalRequest.canonicalHost(authority: target.authority))
        ]
        var seen: Set<String> = ["host"]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            guard V4CanonicalRequest.isValidHeaderName(name) else {
                throw .invalidArgument(
                    "The header name \"\(name)\" cannot be signed: use visible ASCII characters other than ':' and ';'."
                )
            }
            guard V4CanonicalRequest.isValidHeaderValue(value) else {
                throw .invalidArgument("The value of header \(name) contains a control character.")
            }
            let lowered = name.lowercased()
            guard seen.insert(lowered).inserted else {
                throw .invalidArgument(
                    lowered == "host"
                        ? "The host header is always signed, from the URL's host; do not pass it."
                        : "The header \(lowered) is given twice (header names are case-insensitive).")
            }
            signed.append((name, value))
        }
        if method == SignedURLMethod.post.rawValue, !seen.contains("x-goog-resumable") {
            // A signed POST is only ever a resumable upload's start, which needs this header.
            signed.append(("x-goog-resumable", "start"))
        }
        let signedHeaders = signed.map { $0.name.lowercased() }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .joined(separator: ";")
        for name in queryParameters.keys {
            if let reserved = V4CanonicalRequest.Query.reserved.first(where: {
                $0.lowercased() == name.lowercased()
            }) {
                throw .invalidArgument("The query parameter \(reserved) belongs to the signature; do not pass it.")
            }
        }
        let query =
            queryParameters.map { (name: $0.key, value: $0.value) }
            + V4CanonicalRequest.signingQuery(
                email: email, timestamp: timestamp, expiresInSeconds: seconds, signedHeaders: signedHeaders)
        self.target = target
        canonicalRequest = V4CanonicalRequest(
            method: method, encodedPath: target.encodedPath, query: query, headers: signed)
        stringToSign = V4CanonicalRequest.stringToSign(
            timestamp: timestamp, canonicalRequestHash: try SHA256Digest.hex(of: Array(canonicalRequest.text.utf8)))
    }

    /// The signed URL.
    ///
    /// - Parameter signature: The RSA-SHA256 signature of ``stringToSign``.
    /// - Throws: ``StorageErrorCode/invalidArgument`` when the pieces do not make a URL
    ///   (a host name with characters no URL allows).
    func url(signature: [UInt8]) throws(StorageError) -> URL {
        let hex = signature.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }.joined()
        let text =
            "\(target.scheme)://\(target.authority)\(target.encodedPath)?\(canonicalRequest.canonicalQuery)"
            + "&\(V4CanonicalRequest.Query.signature)=\(hex)"
        guard let url = URL(string: text) else {
            throw .invalidArgument("The signed URL for \(target.scheme)://\(target.authority) is not a valid URL.")
        }
        return url
    }

    /// `expiresIn` as whole seconds in 1…604800 (seven days, the most V4 allows).
    static func expirySeconds(_ expiresIn: Duration) throws(StorageError) -> Int64 {
        let (seconds, attoseconds) = expiresIn.components
        guard attoseconds == 0, (1...V4CanonicalRequest.maximumExpiry).contains(seconds) else {
            throw .invalidArgument(
                "A signed URL expires after a whole number of seconds from 1 to \(V4CanonicalRequest.maximumExpiry) (7 days); \(expiresIn) is not."
            )
        }
        return seconds
    }
}
