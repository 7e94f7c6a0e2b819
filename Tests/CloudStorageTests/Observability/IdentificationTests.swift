import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// What every request says about who sends it (`User-Agent`, `x-goog-api-client`,
/// `X-Firebase-Storage-Version`), read off the requests a loopback server received, through
/// both transports.
@Suite("Identification: User-Agent and x-goog-api-client on every request", .timeLimit(.minutes(10)))
struct IdentificationTests {
    static let version = StorageConfiguration.Identification.sdkVersion
    static let compiler = StorageConfiguration.Identification.compilerVersion

    static func configuration(_ transport: StorageTransportChoice, suffix: String?) throws -> StorageConfiguration {
        var configuration = StorageConfiguration()
        configuration.transport = transport
        try configuration.identification.setApplicationSuffix(suffix)
        return configuration
    }

    @Test(
        "storage and token requests name the SDK, the language and the application",
        arguments: [StorageTransportChoice.native, .urlSession])
    func gcsRequests(transport: StorageTransportChoice) async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let storage = Storage.gcsEmulator(
            bucket: "b", baseURL: fake.baseURL,
            authorization: try CredentialFlowTests.serviceAccount(fake),
            configuration: try Self.configuration(transport, suffix: "photo-sync/2.4.1 (build 7)"))
        try await storage.reference(withPath: "a").delete()
        let token = try #require(fake.requests(to: "/token").first)
        let delete = try #require(fake.requests(to: "/storage/v1/b/b/o/a").first)
        for request in [token, delete] {
            #expect(request.headers["User-Agent"] == "cloud-storage-swift/\(Self.version) photo-sync/2.4.1 (build 7)")
            #expect(request.headers["X-Firebase-Storage-Version"] == nil)
        }
        // Token requests name the SDK; storage requests the call and its attempt too.
        #expect(token.headers["x-goog-api-client"] == "gl-swift/\(Self.compiler) gccl/\(Self.version)")
        #expect(token.headers["x-goog-gcs-idempotency-token"] == nil)
        let client = try #require(delete.headers["x-goog-api-client"])
        let prefix = "gl-swift/\(Self.compiler) gccl/\(Self.version) gccl-invocation-id/"
        #expect(client.hasPrefix(prefix) && client.hasSuffix(" gccl-attempt-count/1"), "\(client)")
        let id = client.dropFirst(prefix.count).prefix { $0 != " " }
        #expect(UUID(uuidString: String(id)) != nil, "\(client)")
        #expect(delete.headers["x-goog-gcs-idempotency-token"] == String(id))
    }

    @Test("without a suffix the User-Agent names the SDK alone")
    func noSuffix() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let storage = Storage.gcsEmulator(
            bucket: "b", baseURL: fake.baseURL, authorization: try CredentialFlowTests.serviceAccount(fake),
            configuration: try Self.configuration(.native, suffix: nil))
        try await storage.reference(withPath: "a").delete()
        let delete = try #require(fake.requests(to: "/storage/v1/b/b/o/a").first)
        #expect(delete.headers["User-Agent"] == "cloud-storage-swift/\(Self.version)")
    }

    @Test(
        "Firebase requests name the SDK as the Firebase SDKs name themselves",
        arguments: [StorageTransportChoice.native, .urlSession])
    func firebaseRequests(transport: StorageTransportChoice) async throws {
        let server = try AuthTestServer { _ in AuthTestServer.Reply(status: 204) }
        defer { server.stop() }
        let storage = Storage(
            bucket: "b", endpoint: .firebase(server.baseURL),
            configuration: try Self.configuration(transport, suffix: "my-app/1"))
        try await storage.reference(withPath: "a").delete()
        let delete = try #require(server.requests.first)
        #expect(delete.headers["User-Agent"] == "cloud-storage-swift/\(Self.version) my-app/1")
        #expect(delete.headers["X-Firebase-Storage-Version"] == "swift/\(Self.version)")
        #expect(delete.headers["x-goog-api-client"] == nil)
    }

    @Test(
        "a suffix that could break the header line or is not printable ASCII is refused",
        arguments: [
            "app/1\r\nX-Injected: 1", "app/1\nx", "app\r", "app\u{0}", "app\tx", "äpp/1",
            String(repeating: "a", count: 257),
        ])
    func refusedSuffix(suffix: String) throws {
        var identification = StorageConfiguration.Identification()
        try identification.setApplicationSuffix("kept/1")
        #expect(throws: StorageError.self) { try identification.setApplicationSuffix(suffix) }
        do {
            try identification.setApplicationSuffix(suffix)
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("identification.applicationSuffix"))
            #expect(!error.message.contains("\r") && !error.message.contains("\n"))
        }
        #expect(identification.applicationSuffix == "kept/1")
        #expect(identification.userAgent == "cloud-storage-swift/\(Self.version) kept/1")
    }

    @Test("an empty suffix clears it")
    func emptySuffix() throws {
        var identification = StorageConfiguration.Identification()
        try identification.setApplicationSuffix("a/1")
        try identification.setApplicationSuffix("")
        #expect(identification.applicationSuffix == nil)
    }
}

extension IdentificationTests {
    @Test("the documented identification example sets the suffix it shows")
    func documentedExample() throws {
        // The example's own values; it runs offline (nothing is sent).
        try DocumentationSnippets.optionsAndObservabilityIdentification()
        var identification = StorageConfiguration.Identification()
        try identification.setApplicationSuffix("photo-sync/2.4.1")
        #expect(identification.userAgent == "cloud-storage-swift/0.1.0 photo-sync/2.4.1")
        #expect(Self.version == "0.1.0", "the documentation shows this version; update it with the constant")
    }
}
