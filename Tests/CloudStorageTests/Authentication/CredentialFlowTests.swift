import Foundation
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Each credential kind against a loopback token endpoint, metadata server and storage
/// server (``GoogleAuthFake``): what is sent, what is cached, what a refusal and a transient
/// failure become, and that no secret reaches a description.
@Suite("Credentials: token exchange, cache, 401 refresh, errors", .timeLimit(.minutes(10)))
struct CredentialFlowTests {
    static func storage(
        _ fake: GoogleAuthFake, _ authorization: StorageAuthorization,
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        var configuration = StorageConfiguration()
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(1))
            try $0.retry.setMaxDelay(.milliseconds(2))
            try configure(&$0)
        }
        return Storage.gcsEmulator(
            bucket: "b", baseURL: fake.baseURL, authorization: authorization, configuration: configuration)
    }

    static func serviceAccount(_ fake: GoogleAuthFake) throws -> StorageAuthorization {
        try .serviceAccount(keyJSON: try TestKeyFiles.serviceAccountJSON(tokenURI: fake.tokenURI))
    }

    static func authorizedUser(_ fake: GoogleAuthFake) throws -> StorageAuthorization {
        try .authorizedUser(json: try TestKeyFiles.authorizedUserJSON(tokenURI: fake.tokenURI))
    }

    static func delete(_ storage: Storage, _ name: String = "o") async throws(StorageError) {
        try await storage.reference(withPath: name).delete()
    }

    @Test("a service account's signed JWT buys a token that the next operations reuse")
    func serviceAccount() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let storage = Self.storage(fake, try Self.serviceAccount(fake))
        try await Self.delete(storage, "a")
        try await Self.delete(storage, "b")
        // A copy of the authorization, in another Storage, shares the cache.
        try await Self.delete(Self.storage(fake, storage.authorization), "c")
        #expect(fake.grants == 1)
        let exchange = try #require(fake.requests(to: "/token").first)
        #expect(exchange.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        let claims = try TestKeyFiles.jwtPart(try #require(exchange.form["assertion"]), 1)
        #expect(claims["scope"] as? String == "https://www.googleapis.com/auth/devstorage.read_write")
        #expect(claims["aud"] as? String == fake.tokenURI)
        let deletes = fake.requests(to: "/storage/v1/b/b/o/a") + fake.requests(to: "/storage/v1/b/b/o/c")
        #expect(
            deletes.map { $0.headers["Authorization"] } == ["Bearer ya29.test-token-1", "Bearer ya29.test-token-1"])
        #expect(deletes.allSatisfy { $0.headers["x-goog-user-project"] == nil })
    }

    @Test("an authorized user's refresh token is exchanged; its quota project is billed")
    func authorizedUser() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        try await Self.delete(Self.storage(fake, try Self.authorizedUser(fake)))
        let form = try #require(fake.requests(to: "/token").first).form
        #expect(
            form == [
                "grant_type": "refresh_token", "client_id": "test-client.apps.googleusercontent.com",
                "client_secret": "TEST-ONLY-client-secret", "refresh_token": "TEST-ONLY-refresh-token",
            ])
        let delete = try #require(fake.requests(to: "/storage/v1/b/b/o/o").first)
        #expect(delete.headers["Authorization"] == "Bearer ya29.test-token-1")
        #expect(delete.headers["x-goog-user-project"] == "cloudstorage-test-quota")
    }

    @Test("the metadata server is asked with Metadata-Flavor and the scopes")
    func metadataServer() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let authorization = StorageAuthorization.metadataServer(
            scopes: ["https://www.googleapis.com/auth/devstorage.read_only", "x"],
            environment: ["GCE_METADATA_HOST": fake.metadataHost])
        try await Self.delete(Self.storage(fake, authorization))
        let request = try #require(
            fake.requests(to: "/computeMetadata/v1/instance/service-accounts/default/token").first)
        #expect(request.headers["Metadata-Flavor"] == "Google")
        #expect(request.query["scopes"] == "https://www.googleapis.com/auth/devstorage.read_only,x")
        #expect(fake.requests(to: "/storage/v1/b/b/o/o").first?.headers["Authorization"] == "Bearer ya29.test-token-1")
    }

    @Test("a 401 for an expired token refreshes it once and repeats the request")
    func refreshAfter401() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let storage = Self.storage(fake, try Self.serviceAccount(fake))
        try await Self.delete(storage)
        fake.expireAllTokens()
        try await Self.delete(storage)
        #expect(fake.grants == 2)
        #expect(
            fake.requests(to: "/storage/v1/b/b/o/o").map { $0.headers["Authorization"] } == [
                "Bearer ya29.test-token-1", "Bearer ya29.test-token-1", "Bearer ya29.test-token-2",
            ])
    }

    @Test("200 operations refused together for the same stale token share one refresh")
    func concurrent401() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let storage = Self.storage(fake, try Self.serviceAccount(fake))
        try await Self.delete(storage)
        fake.expireAllTokens()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask { try await Self.delete(storage, "o\(index)") }
            }
            try await group.waitForAll()
        }
        #expect(fake.grants == 2)
    }

    @Test("1,000 concurrent uploads' worth of operations perform one token exchange")
    func burst() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        // A delete a starved machine timed out is sent again (the subject is the token exchange).
        let storage = Self.storage(fake, try Self.serviceAccount(fake)) { $0.retry.policy = .always }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<1000 {
                group.addTask { try await Self.delete(storage, "o\(index)") }
            }
            try await group.waitForAll()
        }
        #expect(fake.grants == 1)
        #expect(fake.requests(to: "/token").count == 1)
    }

    @Test("invalid_grant fails the operation as unauthenticated with the endpoint's own description")
    func invalidGrant() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        fake.script(.json(400, #"{"error":"invalid_grant","error_description":"Account has been deleted"}"#))
        let error = await #expect(throws: StorageError.self) {
            try await Self.delete(Self.storage(fake, try Self.serviceAccount(fake)))
        }
        #expect(error?.code == .unauthenticated)
        #expect(error?.httpStatus == 400)
        #expect(error?.serverMessage == "Account has been deleted")
        #expect(
            error?.message
                == "The token endpoint \(fake.tokenURI) refused the key of service account \(TestKeyFiles.email) (invalid_grant)."
        )
        // Refusals are not retried, and no storage request was made.
        #expect(fake.requests(to: "/token").count == 1)
        #expect(fake.requests(to: "/storage/v1/b/b/o/o").isEmpty)
    }

    @Test("transient token-endpoint failures (503, 429) are retried within the operation's retry time")
    func transientThenSuccess() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        fake.script(.json(503, #"{"error":"unavailable"}"#), .json(429, "{}"))
        try await Self.delete(Self.storage(fake, try Self.serviceAccount(fake)))
        #expect(fake.requests(to: "/token").count == 3)
        #expect(fake.grants == 1)
    }

    @Test("transient failures that outlast the retry time end as retryLimitExceeded")
    func transientUntilTheBudgetRunsOut() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        fake.script(.json(503, "{}"))
        let storage = Self.storage(fake, try Self.serviceAccount(fake)) { try $0.retry.setMaxOperationTime(.zero) }
        let error = await #expect(throws: StorageError.self) { try await Self.delete(storage) }
        #expect(error?.code == .retryLimitExceeded)
        #expect(error?.httpStatus == 503)
        #expect(error?.message.contains("the token endpoint \(fake.tokenURI)") == true)
    }

    @Test("a token endpoint on plain HTTP to another machine is never sent a secret")
    func plainHTTPTokenEndpoint() async throws {
        let context = TokenRequestContext(
            transport: URLSessionTransport.shared, requestTimeout: .seconds(1),
            retryBackoff: RetryBackoff(configuration: StorageConfiguration(), operation: .other))
        let error = await #expect(throws: StorageError.self) {
            try await TokenEndpoint.exchange(
                form: [("assertion", "secret")], at: URL(string: "http://192.0.2.1/token")!, grant: "the key",
                context: context)
        }
        #expect(error?.code == .unauthenticated)
        #expect(error?.message.hasPrefix("Refusing to send the key over plain HTTP to 192.0.2.1") == true)
    }

    @Test("a 200 without a token is a protocol violation, not a crash")
    func malformedTokenAnswer() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        fake.script(.json(200, #"{"expires_in":3600}"#))
        let error = await #expect(throws: StorageError.self) {
            try await Self.delete(Self.storage(fake, try Self.serviceAccount(fake)))
        }
        #expect(error?.code == .protocolViolation)
        #expect(
            error?.message == "The token endpoint \(fake.tokenURI) answered HTTP 200 without a usable access_token.")
    }

    @Test("no token, assertion, refresh token, client secret or key reaches a description or an error")
    func secretsNeverDescribed() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let user = try Self.authorizedUser(fake)
        let account = try Self.serviceAccount(fake)
        let userStorage = Self.storage(fake, user)
        let accountStorage = Self.storage(fake, account)
        try await Self.delete(userStorage)
        try await Self.delete(accountStorage)
        // Refused tokens (every token dies at once, including the refreshed one) fail the operation.
        fake.script(.token("ya29.refused-token"))
        fake.expireAllTokens()
        let refusal = await #expect(throws: StorageError.self) { try await Self.delete(accountStorage) }
        #expect(refusal?.code == .unauthenticated)
        fake.script(.json(400, #"{"error":"invalid_grant","error_description":"Token has been expired or revoked."}"#))
        fake.expireAllTokens()
        let revoked = await #expect(throws: StorageError.self) { try await Self.delete(userStorage) }
        #expect(revoked?.serverMessage == "Token has been expired or revoked.")

        let assertion = try #require(fake.requests(to: "/token").compactMap { $0.form["assertion"] }.first)
        let keyLine = String(try TestCredentials.text("service-account.key").split(separator: "\n")[2])
        let secrets = [
            "ya29.test-token", "ya29.refused-token", assertion, String(assertion.split(separator: ".")[2]),
            "TEST-ONLY-refresh-token", "TEST-ONLY-client-secret", keyLine,
        ]
        let bearer = StorageAuthorization.bearerToken("ya29.test-token-given")
        var texts: [String] = []
        for value in [user, account, bearer] {
            texts += [String(describing: value), String(reflecting: value), "\(value)", TokenCacheTests.dumped(value)]
        }
        // Not `dump(storage)`: it would walk into the live transport's locks and threads.
        for storage in [userStorage, accountStorage, Self.storage(fake, bearer)] {
            texts += [String(describing: storage), String(reflecting: storage)]
        }
        for error in [refusal, revoked].compactMap({ $0 }) {
            texts += [String(describing: error), String(reflecting: error), error.message, error.serverMessage ?? ""]
        }
        for text in texts {
            for secret in secrets {
                #expect(!text.contains(secret), "\(text) contains a secret")
            }
        }
        #expect(String(describing: bearer) == "StorageAuthorization.bearerToken(<redacted>)")
        #expect(String(describing: account) == "StorageAuthorization(service account \(TestKeyFiles.email))")
    }

    @Test("a signing identity: a key signs here; the metadata server names its account")
    func signingIdentity() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let context = TokenRequestContext(storage: Self.storage(fake, .none), operation: .other)
        guard
            case .serviceAccountKey(let email, _) = try await Self.serviceAccount(fake).signingIdentity(
                context: context)
        else {
            Issue.record("a key file should sign locally")
            return
        }
        #expect(email == TestKeyFiles.email)
        let metadata = StorageAuthorization.metadataServer(
            scopes: StorageAuthorization.defaultScopes, environment: ["GCE_METADATA_HOST": fake.metadataHost])
        guard case .metadataServer(let server, _) = try await metadata.signingIdentity(context: context) else {
            Issue.record("the metadata server signs through IAM")
            return
        }
        #expect(try await server.serviceAccountEmail(context: context) == TestKeyFiles.email)
        let refused = await #expect(throws: StorageError.self) {
            try await Self.authorizedUser(fake).signingIdentity(context: context)
        }
        #expect(refused?.code == .invalidArgument)
    }
}
