import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage

/// The SDK's native transport over `https://` against the emulator serving
/// TLS: the first end-to-end route over TLS (both wire protocols, uploads in
/// one request and resumable, downloads, metadata), and a server whose
/// certificate is not trusted refused before anything reaches it.
@Suite("HTTPS end to end", .timeLimit(.minutes(10)))
struct HTTPSEndToEndTests {
    static func storage(_ emulator: StorageEmulator, wire: Reliability.Wire, trustingTestCA: Bool) -> Storage {
        var configuration = StorageConfiguration()
        TestRoute.nativeHTTPS.apply(to: &configuration)
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(10))
        }
        if !trustingTestCA {
            configuration.tls.additionalTrustRoots = []
        }
        return Storage(
            bucket: Reliability.bucket, endpoint: wire.endpoint(emulator.baseURL),
            authorization: wire == .firebase ? .emulatorOwner : .none, configuration: configuration)
    }

    @Test(arguments: Reliability.Wire.allCases)
    func uploadsAndDownloadsRoundTripOverTLS(wire: Reliability.Wire) async throws {
        let emulator = try TestRoute.nativeHTTPS.startEmulator()
        defer { emulator.stop() }
        #expect(emulator.baseURL.scheme == "https")
        let storage = Self.storage(emulator, wire: wire, trustingTestCA: true)

        let large = TestSupport.payload(size: 9 * .mebibyte + 3, seed: 41)  // resumable
        let small = TestSupport.payload(size: 300_000, seed: 42)  // one request
        let file = try TestSupport.file(containing: large)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }

        let fromFile = try await storage.reference(withPath: "tls/large.bin").putFileAsync(from: file)
        #expect(fromFile.size == Int64(large.count))
        let fromData = try await storage.reference(withPath: "tls/small.bin").putDataAsync(small)
        #expect(fromData.size == Int64(small.count))
        #expect(try Reliability.stored("tls/large.bin", in: emulator) == large)
        #expect(try Reliability.stored("tls/small.bin", in: emulator) == small)

        #expect(try await storage.reference(withPath: "tls/large.bin").data(maxSize: Int64(large.count)) == large)
        let metadata = try await storage.reference(withPath: "tls/small.bin").getMetadata()
        #expect(metadata.size == Int64(small.count))
    }

    @Test(arguments: Reliability.Wire.allCases)
    func anUntrustedServerIsRefusedBeforeAnythingReachesIt(wire: Reliability.Wire) async throws {
        let emulator = try TestRoute.nativeHTTPS.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator, wire: wire, trustingTestCA: false)
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "tls/refused.bin").putDataAsync(Data("secret bytes".utf8))
        }
        #expect(error?.code == .tlsFailure)
        #expect(Reliability.record("tls/refused.bin", in: emulator) == nil, "nothing was stored")
    }
}
