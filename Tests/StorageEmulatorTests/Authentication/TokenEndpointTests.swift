import Foundation
import HTTP1
import NativeTLS
import Testing

@testable import StorageEmulator

/// `POST /token` checks a service account's JWT as Google does and refuses, saying why, every
/// assertion that is not signed by the issuer's key, not for this endpoint, or not current.
@Suite("Emulator OAuth token endpoint")
struct TokenEndpointTests {
    @Test("a valid JWT grant issues a Bearer token that opens an upload")
    func validGrant() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let assertion = try AuthFixture.jwt(claims: AuthFixture.claims(clock.seconds), key: AuthFixture.key)
        let response = harness.grant(assertion)
        #expect(response.status == 200)
        #expect(response.json["token_type"] as? String == "Bearer")
        #expect((response.json["expires_in"] as? NSNumber)?.int64Value == 3600)
        #expect(response.headers["Cache-Control"] == "no-store")
        let token = try #require(response.json["access_token"] as? String)
        #expect(token.count > 40)
        let upload = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=a", headers: ["Authorization": "Bearer \(token)"],
            body: [1, 2, 3])
        #expect(upload.status == 200)
        #expect(harness.object("bkt", "a") == Data([1, 2, 3]))
        #expect(harness.app.settings.authentication?.tokens.grantCount == 1)
    }

    @Test("the second account, known by its private key only, gets tokens too; each token is new")
    func secondAccount() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let first = try harness.token(clock, email: AuthFixture.secondEmail, key: AuthFixture.secondKey)
        let second = try harness.token(clock, email: AuthFixture.secondEmail, key: AuthFixture.secondKey)
        #expect(first != second)
        #expect(harness.app.settings.authentication?.tokens.grantCount == 2)
    }

    @Test("an iat up to five minutes ahead is clock skew, accepted")
    func skewAccepted() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        var claims = AuthFixture.claims(clock.seconds + 300)
        claims["exp"] = clock.seconds + 3600
        #expect(harness.grant(try AuthFixture.jwt(claims: claims, key: AuthFixture.key)).status == 200)
    }

    /// A refused assertion and a fragment of the reason the endpoint must give.
    struct Refusal: CustomTestStringConvertible, Sendable {
        let name: String
        let reason: String
        let error: String
        let make: @Sendable (_ now: Int64) throws -> String

        init(
            _ name: String, _ reason: String, error: String = "invalid_grant",
            _ make: @escaping @Sendable (_ now: Int64) throws -> String
        ) {
            self.name = name
            self.reason = reason
            self.error = error
            self.make = make
        }

        var testDescription: String { name }
    }

    static let refusals: [Refusal] = [
        Refusal("signed by another key", "Invalid JWT Signature") { now in
            try AuthFixture.jwt(claims: AuthFixture.claims(now), key: AuthFixture.secondKey)
        },
        Refusal("claims changed after signing", "Invalid JWT Signature") { now in
            let good = try AuthFixture.jwt(claims: AuthFixture.claims(now), key: AuthFixture.key)
            let parts = good.split(separator: ".")
            let forged = AuthFixture.base64URL(AuthFixture.claims(now, scope: AuthFixture.cloudPlatform))
            return "\(parts[0]).\(forged).\(parts[2])"
        },
        Refusal("unknown iss", "account not found") { now in
            try AuthFixture.jwt(
                claims: AuthFixture.claims(now, iss: "nobody@x.iam.gserviceaccount.com"), key: AuthFixture.key)
        },
        Refusal("wrong aud host", "audience") { now in
            try AuthFixture.jwt(claims: AuthFixture.claims(now, aud: "http://other.test/token"), key: AuthFixture.key)
        },
        Refusal("Google's aud at the emulator", "audience") { now in
            try AuthFixture.jwt(
                claims: AuthFixture.claims(now, aud: "https://oauth2.googleapis.com/token"), key: AuthFixture.key)
        },
        Refusal("wrong aud path", "audience") { now in
            try AuthFixture.jwt(
                claims: AuthFixture.claims(now, aud: "http://emulator.test/token2"), key: AuthFixture.key)
        },
        Refusal("wrong aud scheme", "audience") { now in
            try AuthFixture.jwt(
                claims: AuthFixture.claims(now, aud: "https://emulator.test/token"), key: AuthFixture.key)
        },
        Refusal("wrong aud port", "audience") { now in
            try AuthFixture.jwt(
                claims: AuthFixture.claims(now, aud: "http://emulator.test:8080/token"), key: AuthFixture.key)
        },
        Refusal("expired", "expired") { now in
            var claims = AuthFixture.claims(now - 4000)
            claims["exp"] = now - 400
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("exp − iat over an hour", "more than 3600") { now in
            var claims = AuthFixture.claims(now)
            claims["exp"] = now + 3601
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("exp before iat", "not after iat") { now in
            var claims = AuthFixture.claims(now)
            claims["exp"] = now + 5
            claims["iat"] = now + 10
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("iat in the future beyond the skew", "future") { now in
            var claims = AuthFixture.claims(now + 301)
            claims["exp"] = now + 3600
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("exp at the edge of Int64", "not after iat") { now in
            var claims = AuthFixture.claims(now)
            claims["iat"] = Int64.min
            claims["exp"] = Int64.max
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("iss a number", "'iss' has the wrong type") { now in
            var claims = AuthFixture.claims(now)
            claims["iss"] = 7
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("exp beyond Int64", "'exp' is not a whole number") { now in
            let text =
                "{\"aud\":\"http://emulator.test/token\",\"exp\":99999999999999999999999,\"iat\":\(now),"
                + "\"iss\":\"\(AuthFixture.email)\",\"scope\":\"\(AuthFixture.storageScope)\"}"
            return try AuthFixture.jwt(
                encodedHeader: AuthFixture.base64URL(AuthFixture.header),
                encodedClaims: Base64URL.encode(Array(text.utf8)),
                key: AuthFixture.key)
        },
        Refusal("alg none, no signature", "signature is missing") { now in
            AuthFixture.base64URL(["alg": "none"]) + "." + AuthFixture.base64URL(AuthFixture.claims(now)) + "."
        },
        Refusal("alg none with a signature", "only RS256") { now in
            try AuthFixture.jwt(
                header: ["alg": "none", "typ": "JWT"], claims: AuthFixture.claims(now), key: AuthFixture.key)
        },
        Refusal("alg HS256", "only RS256") { now in
            try AuthFixture.jwt(
                header: ["alg": "HS256", "typ": "JWT"], claims: AuthFixture.claims(now), key: AuthFixture.key)
        },
        Refusal("alg missing", "alg is missing") { now in
            try AuthFixture.jwt(header: ["typ": "JWT"], claims: AuthFixture.claims(now), key: AuthFixture.key)
        },
        Refusal("typ not JWT", "typ") { now in
            try AuthFixture.jwt(
                header: ["alg": "RS256", "typ": "JWS"], claims: AuthFixture.claims(now), key: AuthFixture.key)
        },
        Refusal("kid of another key", "kid") { now in
            try AuthFixture.jwt(
                header: ["alg": "RS256", "typ": "JWT", "kid": "key-2"], claims: AuthFixture.claims(now),
                key: AuthFixture.key)
        },
        Refusal("two parts", "three base64url parts") { now in
            AuthFixture.base64URL(AuthFixture.header) + "." + AuthFixture.base64URL(AuthFixture.claims(now))
        },
        Refusal("four parts", "three base64url parts") { now in
            try AuthFixture.jwt(claims: AuthFixture.claims(now), key: AuthFixture.key) + ".x"
        },
        Refusal("padded base64", "not unpadded base64url") { now in
            let good = try AuthFixture.jwt(claims: AuthFixture.claims(now), key: AuthFixture.key)
            let parts = good.split(separator: ".")
            return "\(parts[0])==.\(parts[1]).\(parts[2])"
        },
        Refusal("standard-alphabet base64", "not unpadded base64url") { now in
            // Same length, one character from the standard alphabet: only the alphabet is wrong.
            let claims = AuthFixture.base64URL(AuthFixture.claims(now))
            return try AuthFixture.jwt(
                encodedHeader: AuthFixture.base64URL(AuthFixture.header), encodedClaims: "+" + claims.dropFirst(),
                key: AuthFixture.key)
        },
        Refusal("header not JSON", "header is not a JSON object") { now in
            try AuthFixture.jwt(
                encodedHeader: Base64URL.encode(Array("not json".utf8)),
                encodedClaims: AuthFixture.base64URL(AuthFixture.claims(now)), key: AuthFixture.key)
        },
        Refusal("claims a JSON array", "claim set is not a JSON object") { now in
            try AuthFixture.jwt(
                encodedHeader: AuthFixture.base64URL(AuthFixture.header),
                encodedClaims: Base64URL.encode(Array("[1]".utf8)),
                key: AuthFixture.key)
        },
        Refusal("iat a string", "'iat' is not a whole number") { now in
            var claims = AuthFixture.claims(now)
            claims["iat"] = "\(now)"
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("exp a fraction", "'exp' is not a whole number") { now in
            var claims = AuthFixture.claims(now)
            claims["exp"] = Double(now) + 0.5
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("iss missing", "iss claim is missing") { now in
            var claims = AuthFixture.claims(now)
            claims["iss"] = nil
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("aud missing", "aud claim is missing") { now in
            var claims = AuthFixture.claims(now)
            claims["aud"] = nil
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("iat missing", "iat claim is missing") { now in
            var claims = AuthFixture.claims(now)
            claims["iat"] = nil
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("exp missing", "exp claim is missing") { now in
            var claims = AuthFixture.claims(now)
            claims["exp"] = nil
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("scope missing", "scope claim is missing", error: "invalid_scope") { now in
            var claims = AuthFixture.claims(now)
            claims["scope"] = nil
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
        Refusal("sub another user", "delegation") { now in
            var claims = AuthFixture.claims(now)
            claims["sub"] = "someone@example.com"
            return try AuthFixture.jwt(claims: claims, key: AuthFixture.key)
        },
    ]

    @Test("each bad assertion is refused with invalid_grant and its own reason", arguments: refusals)
    func refused(_ refusal: Refusal) throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let response = harness.grant(try refusal.make(clock.seconds))
        #expect(response.status == 400)
        #expect(response.oauthError == refusal.error)
        #expect(
            response.oauthDescription.contains(refusal.reason),
            "\(refusal.name): \(response.oauthDescription)")
        #expect(response.json["access_token"] == nil)
        #expect(harness.app.settings.authentication?.tokens.grantCount == 0)
    }

    @Test("malformed token requests are invalid_request or unsupported_grant_type")
    func malformedRequests() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let jwtGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
        let cases: [(TestResponder, String, String)] = [
            (harness.tokenRequest([("assertion", "x")]), "invalid_request", "grant_type"),
            (harness.tokenRequest([("grant_type", jwtGrant)]), "invalid_request", "assertion"),
            (harness.tokenRequest([("grant_type", "password")]), "unsupported_grant_type", "password"),
            (
                harness.tokenRequest([("grant_type", jwtGrant), ("grant_type", jwtGrant), ("assertion", "x")]),
                "invalid_request", "more than once"
            ),
            (
                harness.tokenRequest(
                    [("grant_type", jwtGrant), ("assertion", "x")], headers: ["Content-Type": "application/json"]),
                "invalid_request", "x-www-form-urlencoded"
            ),
            (
                harness.send("POST", "/token", headers: AuthFixture.formHeaders, body: Array("grant_type=%zz".utf8)),
                "invalid_request", "percent-encoding"
            ),
            (
                harness.send(
                    "POST", "/token", headers: AuthFixture.formHeaders, body: [UInt8](repeating: 0x61, count: 70_000)),
                "invalid_request", "larger than"
            ),
        ]
        for (response, error, reason) in cases {
            #expect(response.status == 400)
            #expect(response.oauthError == error)
            #expect(response.oauthDescription.contains(reason), "\(response.oauthDescription)")
        }
        #expect(harness.send("GET", "/token").status == 405)
    }

    @Test("an authorized user's refresh token is exchanged only with the right client and secret")
    func refreshGrant() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let user = AuthFixture.user
        func exchange(_ id: String, _ secret: String, _ refresh: String) -> TestResponder {
            harness.tokenRequest([
                ("grant_type", "refresh_token"), ("client_id", id), ("client_secret", secret),
                ("refresh_token", refresh),
            ])
        }
        let good = exchange(user.clientID, user.clientSecret, user.refreshToken)
        #expect(good.status == 200)
        let token = try #require(good.json["access_token"] as? String)
        #expect(
            harness.send("GET", "/storage/v1/b/bkt/o", headers: ["Authorization": "Bearer \(token)"]).status == 200)

        let wrongSecret = exchange(user.clientID, "nope", user.refreshToken)
        #expect(wrongSecret.status == 401)
        #expect(wrongSecret.oauthError == "invalid_client")
        let unknownClient = exchange("other", user.clientSecret, user.refreshToken)
        #expect(unknownClient.status == 401)
        #expect(unknownClient.oauthError == "invalid_client")
        let wrongRefresh = exchange(user.clientID, user.clientSecret, "1//stolen")
        #expect(wrongRefresh.status == 400)
        #expect(wrongRefresh.oauthError == "invalid_grant")
        let missing = harness.tokenRequest([("grant_type", "refresh_token"), ("client_id", user.clientID)])
        #expect(missing.status == 400)
        #expect(missing.oauthError == "invalid_request")
        #expect(harness.app.settings.authentication?.tokens.grantCount == 1)
    }

    @Test("without authentication configured there is no token endpoint")
    func absentWithoutConfiguration() throws {
        let harness = try Harness()
        #expect(harness.tokenRequest([("grant_type", "refresh_token")]).status == 404)
        #expect(
            harness.send("GET", "/computeMetadata/v1/", headers: ["Metadata-Flavor": "Google"]).status == 404)
    }
}
