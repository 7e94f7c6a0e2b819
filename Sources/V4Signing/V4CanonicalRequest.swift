/// The canonical request of a V4 signature (`GOOG4-RSA-SHA256`), and the string to sign
/// made from it: the text both the signer (the SDK) and the verifier (the emulator) build,
/// so that they agree byte for byte.
///
/// No cryptography here: the caller hashes ``text`` with SHA-256 and signs
/// ``stringToSign(timestamp:credentialScope:canonicalRequestHash:)`` with its own means
/// (the SDK's signing key or IAM, the emulator's public keys).
///
/// The rules are Google's (the V4 signing conformance cases): the path percent-encoded
/// with `/` kept; the query sorted by encoded name, names and values percent-encoded;
/// header names lower-cased, values trimmed with inner runs of spaces and tabs collapsed
/// to one space, sorted by name, `host` always among them; the payload
/// `UNSIGNED-PAYLOAD` unless an `x-goog-content-sha256` header gives its hash.
package struct V4CanonicalRequest: Sendable, Equatable {
    /// The signing algorithm, `X-Goog-Algorithm`.
    package static let algorithm = "GOOG4-RSA-SHA256"
    /// The payload hash of a request whose body is not signed.
    package static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// The longest a signed URL may live: seven days, in seconds.
    package static let maximumExpiry: Int64 = 604_800
    /// The header whose value replaces ``unsignedPayload``.
    package static let payloadHashHeader = "x-goog-content-sha256"

    /// Query parameter names.
    package enum Query {
        package static let algorithm = "X-Goog-Algorithm"
        package static let credential = "X-Goog-Credential"
        package static let date = "X-Goog-Date"
        package static let expires = "X-Goog-Expires"
        package static let signedHeaders = "X-Goog-SignedHeaders"
        package static let signature = "X-Goog-Signature"
        /// Every name the signature itself uses; a caller's own parameters must not.
        package static let reserved = [algorithm, credential, date, expires, signedHeaders, signature]
    }

    /// `GET`, `PUT`, …
    package let method: String
    /// The path as it appears in the URL, already percent-encoded.
    package let encodedPath: String
    /// `name=value` pairs joined with `&`, sorted.
    package let canonicalQuery: String
    /// One `name:value\n` line per signed header, sorted by name.
    package let canonicalHeaders: String
    /// The signed header names joined with `;`: the value of `X-Goog-SignedHeaders`.
    package let signedHeaders: String
    /// ``unsignedPayload`` or the value of `x-goog-content-sha256`.
    package let payloadHash: String

    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - encodedPath: The URL's path, percent-encoded as sent (see ``encodedPath(_:)``).
    ///   - query: Every query parameter but `X-Goog-Signature`, decoded, in any order.
    ///   - headers: The signed headers, `host` among them, names in any case, values raw;
    ///     names must be distinct once lower-cased.
    package init(
        method: String, encodedPath: String, query: [(name: String, value: String)],
        headers: [(name: String, value: String)]
    ) {
        self.method = method
        self.encodedPath = encodedPath
        canonicalQuery = Self.canonicalQuery(query)
        let canonical = headers.map { (name: $0.name.lowercased(), value: Self.canonicalHeaderValue($0.value)) }
            .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        canonicalHeaders = canonical.map { "\($0.name):\($0.value)\n" }.joined()
        signedHeaders = canonical.map(\.name).joined(separator: ";")
        payloadHash = canonical.first { $0.name == Self.payloadHashHeader }?.value ?? Self.unsignedPayload
    }

    /// The canonical request.
    package var text: String {
        "\(method)\n\(encodedPath)\n\(canonicalQuery)\n\(canonicalHeaders)\n\(signedHeaders)\n\(payloadHash)"
    }

    /// `<date>/auto/storage/goog4_request`.
    package static func credentialScope(_ timestamp: V4Timestamp) -> String {
        "\(timestamp.dateStamp)/auto/storage/goog4_request"
    }

    /// The text the signature covers.
    ///
    /// - Parameters:
    ///   - timestamp: `X-Goog-Date`.
    ///   - canonicalRequestHash: The lower-case hex SHA-256 of ``text``.
    package static func stringToSign(timestamp: V4Timestamp, canonicalRequestHash: String) -> String {
        "\(algorithm)\n\(timestamp.text)\n\(credentialScope(timestamp))\n\(canonicalRequestHash)"
    }

    /// The query parameters a signed URL carries besides the caller's own and `X-Goog-Signature`.
    package static func signingQuery(
        email: String, timestamp: V4Timestamp, expiresInSeconds: Int64, signedHeaders: String
    ) -> [(name: String, value: String)] {
        [
            (Query.algorithm, algorithm),
            (Query.credential, "\(email)/\(credentialScope(timestamp))"),
            (Query.date, timestamp.text),
            (Query.expires, String(expiresInSeconds)),
            (Query.signedHeaders, signedHeaders),
        ]
    }

    /// The query names and values percent-encoded, sorted by encoded name (then value), as
    /// `a=1&b=2`.
    package static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        query.map { (V4PercentEncoding.encode($0.name), V4PercentEncoding.encode($0.value)) }
            .sorted { lhs, rhs in
                lhs.0 == rhs.0
                    ? lhs.1.utf8.lexicographicallyPrecedes(rhs.1.utf8)
                    : lhs.0.utf8.lexicographicallyPrecedes(rhs.0.utf8)
            }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// An object path encoded for a URL: every byte but unreserved ones and `/` escaped.
    package static func encodedPath(_ decoded: some StringProtocol) -> String {
        V4PercentEncoding.encode(decoded, keepingSlashes: true)
    }

    /// A header value as signed: leading and trailing spaces and tabs dropped, each inner
    /// run of them replaced by one space.
    package static func canonicalHeaderValue(_ value: some StringProtocol) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// The `host` value signed for an authority (`Host` field or URL host and port): the
    /// host lower-cased, without its port (Google's signers leave the port out).
    package static func canonicalHost(authority: some StringProtocol) -> String {
        var host = Substring(authority)
        if host.hasPrefix("[") {
            // An IPv6 literal: the port, if any, follows the closing bracket.
            if let close = host.firstIndex(of: "]") { host = host[...close] }
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        return host.lowercased()
    }

    /// Whether `name` can be a signed header's name: visible ASCII other than `:` (and `;`,
    /// which separates names in `X-Goog-SignedHeaders`).
    package static func isValidHeaderName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: ";") }
    }

    /// Whether `value` can be a signed header's value: no control characters but tab.
    package static func isValidHeaderValue(_ value: some StringProtocol) -> Bool {
        value.utf8.allSatisfy { $0 == UInt8(ascii: "\t") || ($0 >= 0x20 && $0 != 0x7F) }
    }
}
