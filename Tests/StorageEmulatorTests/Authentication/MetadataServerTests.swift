import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// The metadata server answers only requests that carry `Metadata-Flavor: Google`, always
/// names itself with that header, and hands out tokens for its account.
@Suite("Emulator metadata server")
struct MetadataServerTests {
    static let flavor: HTTPHeaders = ["Metadata-Flavor": "Google"]
    static let prefix = "/computeMetadata/v1"

    @Test("probe, email, project id and token with the header")
    func endpoints() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let probe = harness.send("GET", "\(Self.prefix)/", headers: Self.flavor)
        #expect(probe.status == 200)
        #expect(probe.headers["Metadata-Flavor"] == "Google")
        let email = harness.send("GET", "\(Self.prefix)/instance/service-accounts/default/email", headers: Self.flavor)
        #expect(email.status == 200)
        #expect(email.text == AuthFixture.vmEmail)
        #expect(email.headers["Metadata-Flavor"] == "Google")
        let project = harness.send("GET", "\(Self.prefix)/project/project-id", headers: Self.flavor)
        #expect(project.text == "demo-project")
        #expect(project.headers["Metadata-Flavor"] == "Google")

        let token = harness.send("GET", "\(Self.prefix)/instance/service-accounts/default/token", headers: Self.flavor)
        #expect(token.status == 200)
        #expect(token.headers["Metadata-Flavor"] == "Google")
        #expect(token.json["token_type"] as? String == "Bearer")
        #expect((token.json["expires_in"] as? NSNumber)?.int64Value == 3600)
        #expect(token.json["scope"] as? String == AuthFixture.cloudPlatform)
        let accessToken = try #require(token.json["access_token"] as? String)
        let upload = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=vm",
            headers: ["Authorization": "Bearer \(accessToken)"], body: [9])
        #expect(upload.status == 200)

        // Scopes as asked; the account's email names it as `default` does.
        let scoped = harness.send(
            "GET",
            "\(Self.prefix)/instance/service-accounts/\(URLText.encodeComponent(AuthFixture.vmEmail))/token?scopes=\(AuthFixture.storageScope),\(AuthFixture.cloudPlatform)",
            headers: Self.flavor)
        #expect(scoped.status == 200)
        #expect(scoped.json["scope"] as? String == "\(AuthFixture.storageScope) \(AuthFixture.cloudPlatform)")
        #expect(harness.app.settings.authentication?.tokens.grantCount == 2)
    }

    @Test(
        "without the header (or with a wrong one, or proxied) every path is 403, and no token is issued",
        arguments: [
            [:], ["Metadata-Flavor": "google"], ["Metadata-Flavor": "Googl"],
            ["Metadata-Flavor": "Google", "X-Forwarded-For": "10.0.0.1"],
        ] as [HTTPHeaders])
    func refusedWithoutHeader(_ headers: HTTPHeaders) throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        for path in ["/", "/instance/service-accounts/default/token", "/instance/service-accounts/default/email"] {
            let response = harness.send("GET", Self.prefix + path, headers: headers)
            #expect(response.status == 403, "\(path)")
            #expect(response.headers["Metadata-Flavor"] == "Google")
            #expect(response.json["access_token"] == nil)
        }
        #expect(harness.app.settings.authentication?.tokens.grantCount == 0)
    }

    @Test("unknown paths, other accounts, other methods and empty scopes are refused")
    func refusedRequests() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        #expect(harness.send("GET", "\(Self.prefix)/instance/zone", headers: Self.flavor).status == 404)
        #expect(
            harness.send("GET", "\(Self.prefix)/instance/service-accounts/other/token", headers: Self.flavor).status
                == 404)
        #expect(
            harness.send("POST", "\(Self.prefix)/instance/service-accounts/default/token", headers: Self.flavor).status
                == 405)
        #expect(
            harness.send(
                "GET", "\(Self.prefix)/instance/service-accounts/default/token?scopes=a,,b", headers: Self.flavor
            )
            .status == 400)
        #expect(harness.app.settings.authentication?.tokens.grantCount == 0)
    }

    @Test("without a metadata account there is no metadata server")
    func absent() throws {
        let harness = try AuthFixture.harness(TestClock(), metadata: false)
        #expect(harness.send("GET", "\(Self.prefix)/", headers: Self.flavor).status == 404)
    }
}
