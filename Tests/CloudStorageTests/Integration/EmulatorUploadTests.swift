import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Uploads through `Storage` to our own emulator (which implements the
/// protocols exactly, faults included), on each route (``TestRoute``).
@Suite("Uploads to the built-in emulator", .timeLimit(.minutes(10)))
struct EmulatorUploadTests {
    static func storage(
        _ emulator: StorageEmulator, _ route: TestRoute, firebase: Bool = false
    ) -> Storage {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(20))
            try $0.retry.setMaxUploadTime(.seconds(30))
        }
        let bucket = TestSupport.bucketName("emu")
        return Storage(
            bucket: bucket,
            endpoint: firebase ? .firebase(emulator.baseURL) : .gcs(emulator.baseURL),
            authorization: firebase ? .emulatorOwner : .none,
            configuration: configuration)
    }

    /// The stored bytes, read back with a transport of its own.
    static func stored(_ emulator: StorageEmulator, _ storage: Storage, _ name: String) async throws -> Data {
        let url = URL(string: "\(emulator.baseURL)/storage/v1/b/\(storage.bucket)/o/\(name)?alt=media")!
        let response = try await TestRoute.reader.execute(HTTPRequest(method: "GET", url: url), progress: nil)
        #expect(response.status == 200)
        return response.body
    }

    @Test(arguments: TestRoute.all, [false, true])
    func putFileStoresEveryByte(route: TestRoute, firebase: Bool) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator, route, firebase: firebase)
        // Larger than the overlap threshold: its checksum is computed while it sends.
        let payload = TestSupport.payload(size: Int(PreparedSource.overlapThreshold) + 3 * .mebibyte + 5, seed: 21)
        let file = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let metadata = try await storage.reference(withPath: "big.bin").putFileAsync(from: file)
        #expect(metadata.size == Int64(payload.count))
        #expect(metadata.crc32cValue == CRC32C.checksum(payload))
        #expect(try await Self.stored(emulator, storage, "big.bin") == payload)
    }

    @Test(arguments: TestRoute.all)
    func putDataStoresEveryByte(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator, route)
        for size in [0, 1, 5 * .mebibyte] {
            let payload = TestSupport.payload(size: size, seed: UInt64(size))
            let metadata = try await storage.reference(withPath: "d\(size)").putDataAsync(payload)
            #expect(metadata.size == Int64(size))
            #expect(try await Self.stored(emulator, storage, "d\(size)") == payload)
        }
    }

    @Test(arguments: TestRoute.all)
    func anUploadRecoversFromResetsErrorsAndLostAnswers(route: TestRoute) async throws {
        let emulator = try route.startEmulator {
            // Start, then the body (reset midway), then queries that fail before one passes.
            $0.faults = ["pass", "reset-after-3M", "return-503-after-1M", "drop-response"]
        }
        defer { emulator.stop() }
        let storage = Self.storage(emulator, route)
        let payload = TestSupport.payload(size: 12 * .mebibyte + 3, seed: 22)
        let file = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let task = storage.reference(withPath: "faulty.bin").putFile(from: file)
        let snapshots = TestSupport.observe(task)
        let metadata = try await task.value
        #expect(metadata.size == Int64(payload.count))
        #expect(try await Self.stored(emulator, storage, "faulty.bin") == payload)
        let seen = await snapshots.value
        #expect(seen.last?.status == .success)
    }
}
