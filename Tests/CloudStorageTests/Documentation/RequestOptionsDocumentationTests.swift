import Foundation
import StorageEmulator
import Testing

@testable import CloudStorage

/// The examples of "Per-request options" (the Options and observability article and the README),
/// compiled and run against the emulator: each region equals its documentation block (see
/// ``DocumentationSnippetTests``).
@Suite("Request options documentation", .timeLimit(.minutes(10)))
struct RequestOptionsDocumentationTests {
    @Test func theExamplesRun() async throws {
        var configuration = StorageEmulator.Configuration()
        configuration.appCheckToken = "app-check-token"
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let storage = Storage.gcsEmulator(bucket: "datasets", baseURL: emulator.baseURL)
        _ = try await storage.reference(withPath: "2024/report.csv").putDataAsync(Data("a,b\n".utf8))
        let keyText = Data(repeating: 9, count: 32).base64EncodedString()

        try await billed(storage)
        try await encrypted(storage, keyText: keyText, report: Data("report".utf8))
        try await archived(storage, data: Data("cold".utf8))
        try await perCall(storage)
        let firebase = try Storage.firebaseEmulator(bucket: "app", port: emulator.baseURL.port ?? 0)
        try await appCheck(firebase, appCheckToken: { "app-check-token" })
    }

    func billed(_ storage: Storage) async throws {
        // snippet: README.md#15, DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#1
        // One handle for a requester-pays bucket: every call names the project billed.
        let billed = storage.with(.init(userProject: "my-billing-project"))
        let report = billed.reference(withPath: "2024/report.csv")
        let bytes = try await report.data(maxSize: 10 << 20)
        // end snippet
        #expect(bytes == Data("a,b\n".utf8))
    }

    func encrypted(_ storage: Storage, keyText: String, report: Data) async throws {
        // snippet: README.md#16, DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#2
        let key = try StorageEncryptionKey(base64: keyText)  // 32 bytes, standard base64
        let secret = storage.reference(withPath: "vault/report.pdf").with(.init(encryptionKey: key))
        let stored = try await secret.putDataAsync(report)
        assert(stored.customerEncryption?.keySHA256 == key.sha256)
        let again = try await secret.data(maxSize: 10 << 20)  // without the key: HTTP 400
        print(key)  // StorageEncryptionKey(sha256: …): never the key itself
        // end snippet
        #expect(again == report)
    }

    func archived(_ storage: Storage, data: Data) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#3
        let archive = storage.with(
            .init(
                kmsKeyName: "projects/p/locations/us/keyRings/r/cryptoKeys/archive",
                predefinedACL: .bucketOwnerFullControl,
                storageClass: "ARCHIVE"))
        let stored = try await archive.reference(withPath: "2024/backup.tar").putDataAsync(data)
        // end snippet
        #expect(stored.storageClass == "ARCHIVE")
    }

    func perCall(_ storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#4
        var quick = StorageConfiguration.Retry()
        try quick.setMaxOperationTime(.seconds(5))
        var timeouts = StorageConfiguration.Timeouts()
        try timeouts.setRequest(.seconds(2))
        let probe = storage.reference(withPath: "2024/report.csv")
            .with(.init(retry: quick, timeouts: timeouts, headers: ["X-Request-Reason": "health-check"]))
        let metadata = try await probe.getMetadata()
        // end snippet
        #expect(metadata.size == 4)
    }

    func appCheck(_ storage: Storage, appCheckToken: @escaping @Sendable () async throws -> String) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#5
        // Firebase: the provider is asked before every request; return a cached token.
        let app = storage.with(.init(appCheckToken: { try await appCheckToken() }))
        _ = try await app.reference(withPath: "avatars/me.png").putDataAsync(Data([0x89, 0x50]))
        // end snippet
    }
}
