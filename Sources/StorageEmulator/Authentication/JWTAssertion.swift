import Foundation
import NativeTLS

/// A service account's signed JWT (the `assertion` of a jwt-bearer grant), checked as
/// Google's token endpoint checks it: RS256 only, signature by the issuer's key, then the
/// audience, the scope and a short, current validity window.
struct JWTAssertion {
    /// The verified account.
    let email: String
    /// The scopes asked for (space-separated in the JWT).
    let scopes: [String]

    /// Longest validity Google allows a JWT: one hour from `iat` to `exp`.
    static let maximumLifetime: Int64 = 3600
    /// How far `iat` may be ahead of the emulator's clock.
    static let allowedClockSkew: Int64 = 300
    /// Larger assertions are refused before any decoding (real ones are under 2 KB).
    static let maximumLength = 16 * 1024

    private struct Header: Decodable {
        let alg: String?
        let typ: String?
        let kid: String?
    }

    private struct Claims: Decodable {
        let iss: String?
        let sub: String?
        let aud: String?
        let scope: String?
        let iat: NumericDate?
        let exp: NumericDate?
    }

    /// A JWT time (RFC 7519 NumericDate): whole seconds since 1970, within Int64.
    private struct NumericDate: Decodable {
        let seconds: Int64

        /// A time that is a string, a fraction, or beyond Int64.
        struct Invalid: Error {
            let field: String
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            guard let seconds = try? container.decode(Int64.self) else {
                throw Invalid(field: decoder.codingPath.last?.stringValue ?? "?")
            }
            self.seconds = seconds
        }
    }

    /// Verifies an assertion.
    ///
    /// - Parameters:
    ///   - assertion: The compact JWT.
    ///   - accounts: The known accounts and their keys.
    ///   - audienceMatches: Whether an `aud` names this token endpoint as the client reached it.
    ///   - now: The emulator's clock.
    /// - Throws: ``OAuthRefusal`` saying exactly what is wrong.
    init(
        _ assertion: String, accounts: ServiceAccountTable, audienceMatches: (String) -> Bool, now: Date
    ) throws(OAuthRefusal) {
        let jwt = try CompactJWT(assertion)
        let header = try Self.header(jwt.header)
        let claims: Claims = try Self.decode(jwt.claims, what: "claim set")
        let iss = try Self.signer(of: jwt, header: header, claims: claims, accounts: accounts)
        if let sub = claims.sub, sub != iss {
            throw .invalidGrant(
                "Invalid JWT: sub '\(sub)' differs from iss; the emulator has no domain-wide delegation.")
        }
        guard let aud = claims.aud else { throw .invalidGrant("Invalid JWT: the aud claim is missing.") }
        guard audienceMatches(aud) else {
            throw .invalidGrant("Invalid JWT: failed audience check: aud '\(aud)' is not this token endpoint.")
        }
        try Self.checkValidity(claims, now: now)
        let scopes = (claims.scope ?? "").split(separator: " ").map(String.init)
        guard !scopes.isEmpty else {
            throw .invalidScope(
                "Invalid OAuth scope or ID token audience provided: the scope claim is missing or empty.")
        }
        email = iss
        self.scopes = scopes
    }

    /// The three parts of a compact JWT, each still to be checked, and the bytes its signature covers.
    private struct CompactJWT {
        var header: [UInt8]
        var claims: [UInt8]
        var signature: [UInt8]
        /// The base64url text of header and claims, exactly as sent.
        var signingInput: [UInt8]

        init(_ assertion: String) throws(OAuthRefusal) {
            guard assertion.utf8.count <= JWTAssertion.maximumLength else {
                throw .invalidGrant("Invalid JWT: the assertion is longer than \(JWTAssertion.maximumLength) bytes.")
            }
            let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3 else {
                throw .invalidGrant(
                    "Invalid JWT: expected three base64url parts separated by '.', found \(parts.count).")
            }
            guard let header = Base64URL.decode(parts[0]) else {
                throw .invalidGrant("Invalid JWT: the header is not unpadded base64url.")
            }
            guard let claims = Base64URL.decode(parts[1]) else {
                throw .invalidGrant("Invalid JWT: the claim set is not unpadded base64url.")
            }
            guard let signature = Base64URL.decode(parts[2]), !signature.isEmpty else {
                throw .invalidGrant("Invalid JWT: the signature is missing or not unpadded base64url.")
            }
            self.header = header
            self.claims = claims
            self.signature = signature
            signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        }
    }

    /// The header of an RS256 JWT: Google's endpoint takes no other algorithm from a service account.
    private static func header(_ bytes: [UInt8]) throws(OAuthRefusal) -> Header {
        let header: Header = try Self.decode(bytes, what: "header")
        guard header.alg == "RS256" else {
            throw .invalidGrant(
                "Invalid JWT: the header's alg is \(header.alg.map { "'\($0)'" } ?? "missing"); only RS256 is accepted."
            )
        }
        if let typ = header.typ, typ != "JWT" {
            throw .invalidGrant("Invalid JWT: the header's typ is '\(typ)', not 'JWT'.")
        }
        return header
    }

    /// The issuer, a known account whose key (the one `kid` names, where the account has one)
    /// verifies the signature; nothing else in the claims is believed before that.
    private static func signer(
        of jwt: CompactJWT, header: Header, claims: Claims, accounts: ServiceAccountTable
    ) throws(OAuthRefusal) -> String {
        guard let iss = claims.iss, !iss.isEmpty else { throw .invalidGrant("Invalid JWT: the iss claim is missing.") }
        guard let account = accounts.account(iss) else {
            throw .invalidGrant("Invalid grant: account not found (iss '\(iss)' is not a known service account).")
        }
        if account.keyIDIsConfigured, let kid = header.kid, kid != account.keyID {
            throw .invalidGrant("Invalid JWT: kid '\(kid)' is not the key of \(iss).")
        }
        guard account.publicKey.isValidSHA256Signature(jwt.signature, of: jwt.signingInput) else {
            throw .invalidGrant("Invalid JWT Signature.")
        }
        return iss
    }

    /// A short, current window: `iat` not ahead of the clock (beyond the skew allowed), `exp`
    /// not past, and at most ``maximumLifetime`` between them; overflow cannot trap.
    private static func checkValidity(_ claims: Claims, now: Date) throws(OAuthRefusal) {
        guard let iat = claims.iat?.seconds else { throw .invalidGrant("Invalid JWT: the iat claim is missing.") }
        guard let exp = claims.exp?.seconds else { throw .invalidGrant("Invalid JWT: the exp claim is missing.") }
        let nowSeconds = Self.wholeSeconds(now)
        let window =
            "Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
        guard iat <= nowSeconds.addingReportingOverflow(Self.allowedClockSkew).partialValue else {
            throw .invalidGrant("Invalid JWT: iat is in the future. \(window)")
        }
        guard exp > nowSeconds else { throw .invalidGrant("Invalid JWT: the JWT has expired (exp is past). \(window)") }
        let lifetime = exp.subtractingReportingOverflow(iat)
        guard !lifetime.overflow, lifetime.partialValue > 0 else {
            throw .invalidGrant("Invalid JWT: exp is not after iat. \(window)")
        }
        guard lifetime.partialValue <= Self.maximumLifetime else {
            throw .invalidGrant("Invalid JWT: exp - iat is more than \(Self.maximumLifetime) seconds. \(window)")
        }
    }

    /// Decodes a JSON object part, naming the part and the offending field on failure.
    private static func decode<T: Decodable>(_ bytes: [UInt8], what: String) throws(OAuthRefusal) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as NumericDate.Invalid {
            throw .invalidGrant("Invalid JWT: the \(what)'s '\(error.field)' is not a whole number of seconds.")
        } catch DecodingError.typeMismatch(_, let context) where !context.codingPath.isEmpty {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw .invalidGrant("Invalid JWT: the \(what)'s '\(field)' has the wrong type.")
        } catch DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw .invalidGrant("Invalid JWT: the \(what)'s '\(field)' is out of range.")
        } catch {
            throw .invalidGrant("Invalid JWT: the \(what) is not a JSON object.")
        }
    }

    /// Seconds since 1970, rounded down (a NaN or huge clock cannot trap).
    static func wholeSeconds(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970.rounded(.down)
        guard value.isFinite, value > -9e18, value < 9e18 else { return 0 }
        return Int64(value)
    }
}
