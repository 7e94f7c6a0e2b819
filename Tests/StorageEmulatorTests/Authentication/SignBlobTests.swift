import Foundation
import HTTP1
import NativeTLS
import Testing

@testable import StorageEmulator

/// IAM `signBlob` signs with the account's private key, only for a live token of that account.
@Suite("Emulator IAM signBlob")
struct SignBlobTests {
    static func path(_ email: String) -> String {
        "/v1/projects/-/serviceAccounts/\(URLText.encodeComponent(email)):signBlob"
    }

    static let payload = Array("GOOG4-RSA-SHA256\n20261124T143000Z\n…".utf8)

    func sign(_ harness: Harness, _ email: String, token: String?, payload: [UInt8] = payload) -> TestResponder {
        var headers: HTTPHeaders = [:]
        if let token { headers.add("Authorization", "Bearer \(token)") }
        return harness.send(
            "POST", Self.path(email), headers: headers, json: ["payload": Data(payload).base64EncodedString()])
    }

    @Test("the signature verifies with the account's public key; keyId is the configured one")
    func signs() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let token = try harness.token(clock, scope: AuthFixture.cloudPlatform)
        let response = sign(harness, AuthFixture.email, token: token)
        #expect(response.status == 200)
        #expect(response.json["keyId"] as? String == "key-1")
        let signature = try #require(Data(base64Encoded: response.json["signedBlob"] as? String ?? ""))
        let publicKey = try RSAKey(publicKeyPEM: Array(AuthFixture.text("service-account.pub").utf8))
        #expect(publicKey.isValidSHA256Signature(Array(signature), of: Self.payload))
        #expect(!publicKey.isValidSHA256Signature(Array(signature), of: Self.payload + [0]))
    }

    @Test("a metadata-server token signs for the VM's account, with a derived keyId")
    func metadataToken() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let answer = harness.send(
            "GET", "/computeMetadata/v1/instance/service-accounts/default/token", headers: ["Metadata-Flavor": "Google"]
        )
        let token = try #require(answer.json["access_token"] as? String)
        let response = sign(harness, AuthFixture.vmEmail, token: token)
        #expect(response.status == 200)
        #expect((response.json["keyId"] as? String)?.count == 40)
        let signature = try #require(Data(base64Encoded: response.json["signedBlob"] as? String ?? ""))
        #expect(try AuthFixture.secondKey.isValidSHA256Signature(Array(signature), of: Self.payload))
    }

    @Test(
        "refusals: no token, unknown or expired token, another account's token, narrow scope, no key, unknown account")
    func refusals() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let own = try harness.token(clock, scope: AuthFixture.cloudPlatform)
        let storageOnly = try harness.token(clock, scope: AuthFixture.storageScope)
        let other = try harness.token(
            clock, email: AuthFixture.secondEmail, key: AuthFixture.secondKey, scope: AuthFixture.cloudPlatform)
        let publicOnly = try harness.token(clock, email: AuthFixture.publicOnlyEmail, scope: AuthFixture.cloudPlatform)
        #expect(sign(harness, AuthFixture.email, token: nil).status == 401)
        #expect(sign(harness, AuthFixture.email, token: "ya29.made-up").status == 401)
        #expect(sign(harness, AuthFixture.email, token: other).status == 403)
        #expect(sign(harness, AuthFixture.email, token: storageOnly).status == 403)
        let noKey = sign(harness, AuthFixture.publicOnlyEmail, token: publicOnly)
        #expect(noKey.status == 403)
        #expect(((noKey.json["error"] as? [String: Any])?["message"] as? String)?.contains("no private key") == true)
        #expect(sign(harness, "ghost@x.iam.gserviceaccount.com", token: own).status == 404)
        let badPayload = harness.send(
            "POST", Self.path(AuthFixture.email), headers: ["Authorization": "Bearer \(own)"], json: ["payload": "%%%"])
        #expect(badPayload.status == 400)
        let noPayload = harness.send(
            "POST", Self.path(AuthFixture.email), headers: ["Authorization": "Bearer \(own)"], json: [:])
        #expect(noPayload.status == 400)
        let project = harness.send(
            "POST", "/v1/projects/demo/serviceAccounts/\(AuthFixture.email):signBlob",
            headers: ["Authorization": "Bearer \(own)"], json: ["payload": "AA=="])
        #expect(project.status == 400)
        #expect(sign(harness, AuthFixture.email, token: own).status == 200)
        harness.app.settings.authentication?.tokens.expireAll()
        #expect(sign(harness, AuthFixture.email, token: own).status == 401)
    }
}
