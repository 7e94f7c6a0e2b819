import Foundation
import HTTP1
import NativeTLS
import Testing

@testable import StorageEmulator

/// The authentication servers through a real emulator's socket and its public test hooks.
@Suite("Emulator auth servers over HTTP")
struct AuthServerTests {
    /// One request on a fresh connection.
    static func exchange(_ port: Int, _ head: String, body: [UInt8] = []) async throws -> RawClient.Response {
        try await onThread {
            let client = try RawClient(port: port)
            try client.send(Array(head.utf8) + body)
            return try client.readResponse()
        }
    }

    @Test("token grant, upload, expireAllTokens → 401, metadata token, tokenGrantCount")
    func endToEnd() async throws {
        var configuration = StorageEmulator.Configuration()
        configuration.authentication = AuthFixture.configuration()
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let port = emulator.port
        let host = "127.0.0.1:\(port)"
        #expect(emulator.tokenGrantCount == 0)

        let now = Int64(Date().timeIntervalSince1970)
        let assertion = try AuthFixture.jwt(
            claims: AuthFixture.claims(now, aud: "\(emulator.baseURL.absoluteString)/token"), key: AuthFixture.key)
        let form = AuthFixture.formBody([
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion),
        ])
        let granted = try await Self.exchange(
            port,
            "POST /token HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                + "Content-Length: \(form.count)\r\n\r\n", body: form)
        #expect(granted.status == 200, "\(granted.text)")
        let json = try JSONSerialization.jsonObject(with: Data(granted.body)) as? [String: Any]
        let token = try #require(json?["access_token"] as? String)
        #expect(emulator.tokenGrantCount == 1)

        func upload(_ name: String, _ token: String) async throws -> Int {
            try await Self.exchange(
                port,
                "POST /upload/storage/v1/b/bkt/o?uploadType=media&name=\(name) HTTP/1.1\r\nHost: \(host)\r\n"
                    + "Authorization: Bearer \(token)\r\nContent-Length: 1\r\n\r\n", body: [7]
            ).status
        }
        #expect(try await upload("a", token) == 200)
        emulator.expireAllTokens()
        #expect(try await upload("b", token) == 401)

        let metadata = try await Self.exchange(
            port,
            "GET /computeMetadata/v1/instance/service-accounts/default/token HTTP/1.1\r\nHost: \(host)\r\n"
                + "Metadata-Flavor: Google\r\n\r\n")
        #expect(metadata.status == 200)
        #expect(metadata.headers["Metadata-Flavor"] == "Google")
        let vmToken = try #require(
            (try JSONSerialization.jsonObject(with: Data(metadata.body)) as? [String: Any])?["access_token"] as? String)
        #expect(emulator.tokenGrantCount == 2)
        #expect(try await upload("c", vmToken) == 200)
        let refused = try await Self.exchange(
            port, "GET /computeMetadata/v1/ HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        #expect(refused.status == 403)
        #expect(emulator.tokenGrantCount == 2)
    }

    @Test("bad keys and settings stop the emulator from starting, saying which account")
    func badConfiguration() throws {
        func failure(_ authentication: StorageEmulator.Authentication) -> String {
            var configuration = StorageEmulator.Configuration()
            configuration.authentication = authentication
            do {
                let emulator = try StorageEmulator.start(configuration)
                emulator.stop()
                return ""
            } catch {
                return "\(error)"
            }
        }
        let pem = AuthFixture.text("service-account.pub")
        #expect(failure(.init(serviceAccounts: [.init(email: "a@x", publicKeyPEM: "garbage")])).contains("a@x"))
        #expect(
            failure(
                .init(serviceAccounts: [
                    .init(email: "a@x", publicKeyPEM: pem, privateKeyPEM: AuthFixture.text("second-account.key"))
                ])
            ).contains("does not match"))
        #expect(
            failure(
                .init(serviceAccounts: [.init(email: "a@x", publicKeyPEM: pem), .init(email: "a@x", publicKeyPEM: pem)])
            )
            .contains("twice"))
        #expect(failure(.init(tokenLifetime: .milliseconds(500))).contains("at least one second"))
        #expect(
            failure(.init(serviceAccounts: [.init(email: "a@x", publicKeyPEM: AuthFixture.text("rsa-1024.key"))]))
                .contains("a@x"))
    }
}
