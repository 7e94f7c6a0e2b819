import Foundation
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Uploads through every credential kind to the emulator with its authentication servers
/// on and tokens required: the token endpoint verifies the SDK's JWTs and refresh tokens, the
/// metadata server answers its probe and token requests, and every storage request needs a
/// live token the emulator issued.
@Suite("Credentials end to end, against the emulator's token endpoint and metadata server", .timeLimit(.minutes(10)))
struct CredentialEndToEndTests {
    static func emulator() throws -> StorageEmulator {
        var configuration = StorageEmulator.Configuration()
        configuration.authentication = .init(
            serviceAccounts: [
                .init(
                    email: TestKeyFiles.email, privateKeyPEM: try TestCredentials.text("service-account.key"),
                    keyID: "0123456789abcdef0123456789abcdef01234567")
            ],
            authorizedUsers: [
                .init(
                    clientID: "test-client.apps.googleusercontent.com", clientSecret: "TEST-ONLY-client-secret",
                    refreshToken: "TEST-ONLY-refresh-token")
            ],
            metadataServerAccount: .init(email: TestKeyFiles.email, projectID: "cloudstorage-test"),
            requiresToken: true)
        return try StorageEmulator.start(configuration)
    }

    static func storage(
        _ emulator: StorageEmulator, _ authorization: StorageAuthorization,
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        var configuration = StorageConfiguration()
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(1))
            try configure(&$0)
        }
        return Storage.gcsEmulator(
            bucket: "auth", baseURL: emulator.baseURL, authorization: authorization, configuration: configuration)
    }

    enum Kind: String, CaseIterable, Sendable {
        case serviceAccountKey, authorizedUser, metadataServer
        case adcServiceAccount, adcAuthorizedUser, adcMetadataServer
    }

    /// The authorization of `kind`, its files in `directory`.
    static func authorization(
        _ kind: Kind, _ emulator: StorageEmulator, in directory: URL
    ) throws -> StorageAuthorization {
        let tokenURI = emulator.baseURL.absoluteString + "/token"
        let metadataHost = "127.0.0.1:\(emulator.port)"
        let home = directory.appendingPathComponent("home")
        let wellKnown = home.appendingPathComponent(".config/gcloud/application_default_credentials.json")
        // Where no metadata server answers (a refused loopback port), for the ADC file kinds.
        let noMetadata = "127.0.0.1:\(try TestSupport.closedPort())"
        func adc(_ variables: [String: String]) -> StorageAuthorization {
            .applicationDefault(
                environment: ApplicationDefaultCredentials.Environment(variables: variables, homeDirectory: home.path))
        }
        switch kind {
        case .serviceAccountKey:
            return try .serviceAccount(keyJSON: try TestKeyFiles.serviceAccountJSON(tokenURI: tokenURI))
        case .authorizedUser:
            return try .authorizedUser(json: try TestKeyFiles.authorizedUserJSON(tokenURI: tokenURI))
        case .metadataServer:
            return .metadataServer(
                scopes: StorageAuthorization.defaultScopes, environment: ["GCE_METADATA_HOST": metadataHost])
        case .adcServiceAccount:
            let key = directory.appendingPathComponent("key.json")
            try TestKeyFiles.serviceAccountJSON(tokenURI: tokenURI).write(to: key)
            return adc(["GOOGLE_APPLICATION_CREDENTIALS": key.path, "GCE_METADATA_HOST": noMetadata])
        case .adcAuthorizedUser:
            try FileManager.default.createDirectory(
                at: wellKnown.deletingLastPathComponent(), withIntermediateDirectories: true)
            try TestKeyFiles.authorizedUserJSON(tokenURI: tokenURI).write(to: wellKnown)
            return adc(["GCE_METADATA_HOST": noMetadata])
        case .adcMetadataServer:
            return adc(["GCE_METADATA_HOST": metadataHost])
        }
    }

    @Test("an upload and a download through each credential kind", arguments: Kind.allCases)
    func uploadThrough(kind: Kind) async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = Self.storage(emulator, try Self.authorization(kind, emulator, in: directory))
        let data = TestSupport.payload(size: 100_000, seed: 3)
        let reference = storage.reference(withPath: "kinds/\(kind.rawValue).bin")
        let metadata = try await reference.putDataAsync(data)
        #expect(metadata.size == Int64(data.count))
        #expect(try await reference.getData(maxSize: 1 << 20).value == data)
        #expect(emulator.tokenGrantCount == 1)

        // Without a credential the emulator refuses: the token above is what let the upload in.
        let anonymous = Self.storage(emulator, .none).reference(withPath: "kinds/anonymous.bin")
        let refused = await #expect(throws: StorageError.self) { try await anonymous.putDataAsync(data) }
        #expect(refused?.code == .unauthenticated)
    }

    @Test("a token that expires between two chunks is refreshed after the 401, and the upload goes on")
    func tokenExpiresMidUpload() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let authorization = try StorageAuthorization.serviceAccount(
            keyJSON: try TestKeyFiles.serviceAccountJSON(tokenURI: emulator.baseURL.absoluteString + "/token"))
        var configuration = StorageConfiguration()
        try configuration.uploads.setChunkSize(256 * 1024)
        configuration.uploads.multipartThreshold = 0
        let endpoint = StorageEndpoint.gcs(emulator.baseURL)
        let transport = TestTransport(
            wrapping: configuration.transport.transport(for: endpoint, configuration: configuration))
        // After the first answer to a request of the upload session (a chunk the server
        // accepted), every token the emulator issued expires, once.
        let expired = Atomic(false)
        transport.inspect { request, response in
            if request.method == "PUT", response.status == 308,
                expired.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
            {
                emulator.expireAllTokens()
            }
        }
        let storage = Storage(
            bucket: "auth", endpoint: endpoint, authorization: authorization, configuration: configuration,
            transport: transport)
        let data = TestSupport.payload(size: 1024 * 1024 + 17, seed: 5)
        let reference = storage.reference(withPath: "mid-upload.bin")
        let metadata = try await reference.putDataAsync(data)
        #expect(metadata.size == Int64(data.count))
        let didExpire = expired.load(ordering: .relaxed)
        #expect(didExpire)
        #expect(transport.sent.filter { $0.status == 401 }.count == 1)
        #expect(emulator.tokenGrantCount == 2)
        #expect(try await reference.getData(maxSize: 2 << 20).value == data)
    }

    @Test("1,000 concurrent small uploads through one credential share one token exchange")
    func burstSharesOneExchange() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let storage = Self.storage(
            emulator,
            try .serviceAccount(
                keyJSON: try TestKeyFiles.serviceAccountJSON(tokenURI: emulator.baseURL.absoluteString + "/token")))
        let data = Data("small object".utf8)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<1000 {
                group.addTask { _ = try await storage.reference(withPath: "burst/\(index)").putDataAsync(data) }
            }
            try await group.waitForAll()
        }
        #expect(emulator.tokenGrantCount == 1)
        #expect(try await storage.reference(withPath: "burst/999").getData(maxSize: 100).value == data)
    }
}
