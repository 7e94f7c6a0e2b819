import Foundation
import HTTP1
import NativeTLS
import Synchronization
import Testing

@testable import StorageEmulator

/// A clock tests move by hand, so that expiry never depends on elapsed time.
final class TestClock: Sendable {
    private let value: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        value = Mutex(start)
    }

    var now: Date { value.withLock { $0 } }
    var seconds: Int64 { Int64(now.timeIntervalSince1970) }

    func advance(_ seconds: TimeInterval) {
        value.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// Service accounts, users and JWTs for the auth tests, made with the TEST-ONLY keys of
/// Tests/TestCredentials.
enum AuthFixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("TestCredentials")

    static func text(_ name: String) -> String {
        (try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    /// Known by its certificate, with its private key for signBlob.
    static let email = "test-account@cloudstorage-test.iam.gserviceaccount.com"
    /// Known by its private key only (the `ServiceAccount(email:privateKeyPEM:)` form).
    static let secondEmail = "second@cloudstorage-test.iam.gserviceaccount.com"
    /// Known by its public key only: it cannot signBlob.
    static let publicOnlyEmail = "public-only@cloudstorage-test.iam.gserviceaccount.com"
    /// The metadata server's account (the second account, so its tokens can signBlob).
    static let vmEmail = secondEmail

    static let storageScope = "https://www.googleapis.com/auth/devstorage.read_write"
    static let cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"

    static var key: RSAKey {
        get throws { try RSAKey(privateKeyPEM: Array(text("service-account.key").utf8)) }
    }
    static var secondKey: RSAKey {
        get throws { try RSAKey(privateKeyPEM: Array(text("second-account.key").utf8)) }
    }

    static let user = StorageEmulator.Authentication.AuthorizedUser(
        clientID: "client-1.apps.googleusercontent.com", clientSecret: "client-secret", refreshToken: "1//refresh")

    static func configuration(
        requiresToken: Bool = true, lifetime: Duration = .seconds(3600), metadata: Bool = true
    ) -> StorageEmulator.Authentication {
        StorageEmulator.Authentication(
            serviceAccounts: [
                .init(
                    email: email, publicKeyPEM: text("service-account.crt"), privateKeyPEM: text("service-account.key"),
                    keyID: "key-1"),
                .init(email: secondEmail, privateKeyPEM: text("second-account.key")),
                .init(email: publicOnlyEmail, publicKeyPEM: text("service-account.pub")),
            ],
            authorizedUsers: [user],
            metadataServerAccount: metadata ? .init(email: vmEmail, projectID: "demo-project") : nil,
            tokenLifetime: lifetime, requiresToken: requiresToken)
    }

    /// An in-process emulator with authentication and a hand-moved clock.
    static func harness(
        _ clock: TestClock, requiresToken: Bool = true, lifetime: Duration = .seconds(3600), metadata: Bool = true,
        staticToken: String? = nil
    ) throws -> Harness {
        let service = try AuthenticationService(
            configuration(requiresToken: requiresToken, lifetime: lifetime, metadata: metadata))
        return try Harness(token: staticToken) { settings in
            settings.authentication = service
            settings.now = { clock.now }
        }
    }

    static func base64URL(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Base64URL.encode(Array(data))
    }

    /// The claims a correct client sends at `now` for the in-process harness's host.
    static func claims(
        _ now: Int64, iss: String = email, aud: String = "http://emulator.test/token", scope: String = storageScope
    ) -> [String: Any] {
        ["iss": iss, "aud": aud, "scope": scope, "iat": now, "exp": now + 3600]
    }

    static var header: [String: Any] { ["alg": "RS256", "typ": "JWT", "kid": "key-1"] }

    /// header.claims.signature, signed RS256 with `key` over the encoded parts.
    static func jwt(header: [String: Any] = AuthFixture.header, claims: [String: Any], key: RSAKey) throws -> String {
        try jwt(encodedHeader: base64URL(header), encodedClaims: base64URL(claims), key: key)
    }

    static func jwt(encodedHeader: String, encodedClaims: String, key: RSAKey) throws -> String {
        let input = encodedHeader + "." + encodedClaims
        return input + "." + Base64URL.encode(try key.signSHA256(Array(input.utf8)))
    }

    static func formBody(_ parameters: [(String, String)]) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let text = parameters.map { name, value in
            name + "=" + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }.joined(separator: "&")
        return Array(text.utf8)
    }

    static let formHeaders: HTTPHeaders = ["Content-Type": "application/x-www-form-urlencoded"]
}

extension Harness {
    /// `POST /token` with form parameters.
    func tokenRequest(_ parameters: [(String, String)], headers: HTTPHeaders = AuthFixture.formHeaders) -> TestResponder
    {
        send("POST", "/token", headers: headers, body: AuthFixture.formBody(parameters))
    }

    /// A jwt-bearer grant.
    func grant(_ assertion: String) -> TestResponder {
        tokenRequest([("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)])
    }

    /// A valid token for `email`, signed with `key`.
    func token(
        _ clock: TestClock, email: String = AuthFixture.email, key: RSAKey? = nil,
        scope: String = AuthFixture.storageScope
    ) throws -> String {
        let assertion = try AuthFixture.jwt(
            claims: AuthFixture.claims(clock.seconds, iss: email, scope: scope), key: key ?? AuthFixture.key)
        let response = grant(assertion)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        return try #require(response.json["access_token"] as? String)
    }
}

extension TestResponder {
    var oauthError: String? { json["error"] as? String }
    var oauthDescription: String { json["error_description"] as? String ?? "" }
    var text: String { String(decoding: body, as: UTF8.self) }
}
