import FakeGCSServer
import Foundation
import HTTP1
import HTTPTestServers
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage

/// Downloads into memory and into files, against the emulator (both
/// protocols), fake-gcs-server, and scripted servers that break connections
/// and lie about checksums, on each route (``TestRoute``).
@Suite("Downloads", .timeLimit(.minutes(10)))
struct DownloadTests {
    static func storage(
        _ emulator: StorageEmulator, firebase: Bool, route: TestRoute
    ) -> Storage {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(20))
            try $0.retry.setMaxUploadTime(.seconds(30))
        }
        return Storage(
            bucket: TestSupport.bucketName("dl"),
            endpoint: firebase ? .firebase(emulator.baseURL) : .gcs(emulator.baseURL),
            authorization: firebase ? .emulatorOwner : .none,
            configuration: configuration)
    }

    /// Files in a directory, hidden ones (temporary downloads) included.
    static func contents(of directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    @Test(arguments: TestRoute.all, [false, true])
    func dataAndFileRoundTrip(route: TestRoute, firebase: Bool) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator, firebase: firebase, route: route)
        let payload = TestSupport.payload(size: 3 * .mebibyte + 17, seed: 8)
        let ref = storage.reference(withPath: "dir/object.bin")
        _ = try await ref.putDataAsync(payload)

        let data = try await ref.data(maxSize: Int64(payload.count))
        #expect(data == payload)

        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("copy.bin")
        let task = ref.write(toFile: target)
        let snapshots = await TestSupport.collect(task.snapshots)
        #expect(try await task.value == target)
        #expect(try Data(contentsOf: target) == payload)
        #expect(try Self.contents(of: directory) == ["copy.bin"], "no temporary file is left")
        #expect(snapshots.first?.status == .resume)
        #expect(snapshots.last?.status == .success)
        #expect(snapshots.last?.progress.completedUnitCount == Int64(payload.count))
        #expect(snapshots.contains { $0.status == .progress && $0.progress.totalUnitCount == Int64(payload.count) })

        // An empty object downloads as empty.
        let empty = storage.reference(withPath: "empty")
        _ = try await empty.putDataAsync(Data())
        #expect(try await empty.data(maxSize: 0).isEmpty)
    }

    @Test(arguments: TestRoute.all)
    func fakeGCSRoundTrip(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "dl", route: route)
        let payload = TestSupport.payload(size: 300 * .kibibyte, seed: 4)
        let ref = storage.reference(withPath: "f/g.bin")
        _ = try await ref.putDataAsync(payload)
        #expect(try await ref.data(maxSize: 1 << 30) == payload)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("g.bin")
        #expect(try await ref.writeAsync(toFile: target) == target)
        #expect(try Data(contentsOf: target) == payload)
    }

    @Test(arguments: TestRoute.all, [false, true])
    func maxSizeIsEnforcedBeforeReadingPastIt(route: TestRoute, firebase: Bool) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator, firebase: firebase, route: route)
        let payload = TestSupport.payload(size: 1000, seed: 1)
        let ref = storage.reference(withPath: "sized")
        _ = try await ref.putDataAsync(payload)
        #expect(try await ref.data(maxSize: 1000) == payload, "exactly maxSize is allowed")
        let error = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 999) }
        #expect(error?.code == .downloadSizeExceeded)
        let task = ref.getData(maxSize: 10)
        let terminal = await TestSupport.collect(task.snapshots).last
        #expect(terminal?.status == .failure)
        #expect(terminal?.error?.code == .downloadSizeExceeded)
        #expect(terminal?.progress.completedUnitCount == 0, "not a byte was taken")
    }

    @Test(arguments: TestRoute.all, [false, true])
    func missingObjectsAndTheRootFailWithoutLeavingFiles(route: TestRoute, firebase: Bool) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator, firebase: firebase, route: route)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("never.bin")

        let missing = storage.reference(withPath: "no/such/object")
        var error = await #expect(throws: StorageError.self) { try await missing.data(maxSize: 100) }
        #expect(error?.code == .objectNotFound)
        error = await #expect(throws: StorageError.self) { try await missing.writeAsync(toFile: target) }
        #expect(error?.code == .objectNotFound)

        error = await #expect(throws: StorageError.self) { try await storage.reference().data(maxSize: 100) }
        #expect(error?.code == .invalidArgument)
        error = await #expect(throws: StorageError.self) { try await storage.reference().writeAsync(toFile: target) }
        #expect(error?.code == .invalidArgument)
        #expect(try Self.contents(of: directory).isEmpty)
    }

    @Test(arguments: TestRoute.all)
    func pauseAndResumeContinueWithARangeAndGiveTheSameBytes(route: TestRoute) async throws {
        let payload = TestSupport.payload(size: 1 * .mebibyte + 5, seed: 9)
        let ranges = RangeLog()
        // The first answer stops after 300,000 bytes and hangs until the client lets go.
        let server = try Self.cuttingServer(
            payload, cut: 300_000, crc32c: CRC32C.checksum(payload), ranges: ranges, stall: true, scheme: route.scheme)
        defer { server.stop() }
        let storage = Self.scriptedStorage(server, route)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("big.bin")

        let task = storage.reference(withPath: "o").write(toFile: target)
        for await snapshot in task.snapshots
        where snapshot.status == .progress && snapshot.progress.completedUnitCount > 0 {
            await task.pause()
            break
        }
        #expect(task.snapshot.status == .pause)
        #expect(!FileManager.default.fileExists(atPath: target.path), "nothing at the target until complete")
        await task.resume()
        #expect(try await task.value == target)
        #expect(try Data(contentsOf: target) == payload)
        #expect(try Self.contents(of: directory) == ["big.bin"])
        let seen = ranges.values.withLock { $0 }
        #expect(seen.count == 2)
        #expect(seen.last??.hasPrefix("bytes=") == true, "the resumed request asks for the rest only")
        #expect(seen.last != .some("bytes=0-"))
    }

    @Test(arguments: TestRoute.all)
    func cancelRemovesTheTemporaryFileAndLeavesTheTargetAlone(route: TestRoute) async throws {
        let payload = TestSupport.payload(size: 1 * .mebibyte, seed: 10)
        let server = try Self.cuttingServer(
            payload, cut: 300_000, crc32c: CRC32C.checksum(payload), ranges: RangeLog(), stall: true,
            scheme: route.scheme)
        defer { server.stop() }
        let storage = Self.scriptedStorage(server, route)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("existing.bin")
        try Data("keep me".utf8).write(to: target)

        let task = storage.reference(withPath: "o").write(toFile: target)
        for await snapshot in task.snapshots
        where snapshot.status == .progress && snapshot.progress.completedUnitCount > 0 {
            await task.cancel()
            break
        }
        let error = await #expect(throws: StorageError.self) { try await task.value }
        #expect(error?.code == .cancelled)
        #expect(try Self.contents(of: directory) == ["existing.bin"], "the temporary file is gone")
        #expect(try Data(contentsOf: target) == Data("keep me".utf8))
    }

    // MARK: Scripted servers

    /// A server that serves `payload` as object `o` in bucket `b`: the first
    /// GET gets a 200 cut off after `cut` bytes (then a reset, or with `stall`
    /// a wait until the client closes); later GETs must ask for a `Range` and
    /// get a 206 of the rest. `crc32c` is what it claims. With `resetWhen`,
    /// the reset waits for that signal (the client saw bytes arrive), since a
    /// reset can take unread bytes with it.
    static func cuttingServer(
        _ payload: Data, cut: Int, crc32c: UInt32, ranges: RangeLog, stall: Bool = false,
        resetWhen: DispatchSemaphore? = nil, scheme: TestRoute.Scheme
    ) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer(scheme: scheme) { connection, index in
            guard let (head, _) = connection.readRequest() else { return }
            let range = head.headers["Range"]
            ranges.values.withLock { $0.append(range) }
            let hash = "x-goog-hash: crc32c=\(CRC32CEncoding.base64(crc32c))\r\nx-goog-generation: 7\r\n"
            if let range, range.hasPrefix("bytes="), let start = Int(range.dropFirst(6).dropLast()) {
                connection.write(
                    "HTTP/1.1 206 Partial Content\r\nContent-Length: \(payload.count - start)\r\n"
                        + "Content-Range: bytes \(start)-\(payload.count - 1)/\(payload.count)\r\n\(hash)\r\n")
                connection.write([UInt8](payload[start...]))
            } else {
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(payload.count)\r\n\(hash)\r\n")
                connection.write([UInt8](payload.prefix(cut)))
                if stall {
                    connection.drainUntilClosed()
                } else if let resetWhen {
                    // A hang guard: the bound only matters once the test has failed.
                    _ = resetWhen.wait(timeout: .now() + 300)
                    connection.reset()
                } else {
                    Thread.sleep(forTimeInterval: 0.05)
                    connection.reset()
                }
            }
        }
    }

    /// The `Range` fields of the requests a scripted server received.
    final class RangeLog: Sendable {
        let values = Mutex<[String?]>([])
    }

    static func scriptedStorage(_ server: ScriptedHTTPServer, _ route: TestRoute) -> Storage {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(10))
            try $0.retry.setMaxUploadTime(.seconds(20))
        }
        return Storage(bucket: "b", endpoint: .gcs(server.baseURL), configuration: configuration)
    }

    @Test(arguments: TestRoute.all)
    func aBrokenDownloadResumesWithARangeFromTheLastByte(route: TestRoute) async throws {
        let payload = TestSupport.payload(size: 2 * .mebibyte + 3, seed: 12)
        let ranges = RangeLog()
        // The reset comes once the task has reported bytes, not after a sleep that a loaded
        // machine can outlast before the client reads anything.
        let received = DispatchSemaphore(value: 0)
        let server = try Self.cuttingServer(
            payload, cut: 700_001, crc32c: CRC32C.checksum(payload), ranges: ranges, resetWhen: received,
            scheme: route.scheme)
        defer { server.stop() }
        defer { received.signal() }
        let storage = Self.scriptedStorage(server, route)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("o.bin")
        let task = storage.reference(withPath: "o").write(toFile: target)
        for await snapshot in task.snapshots where snapshot.progress.completedUnitCount > 0 {
            received.signal()
            break
        }
        _ = try await task.value
        #expect(try Data(contentsOf: target) == payload)
        let seen = ranges.values.withLock { $0 }
        #expect(seen.first == .some(nil))
        #expect(seen.count == 2)
        if let resumed = seen.last ?? nil {
            // URLSession may hand over fewer bytes than arrived before the reset; never more.
            let start = Int(resumed.dropFirst("bytes=".count).dropLast()) ?? -1
            #expect(start > 0 && start <= 700_001)
        } else {
            Issue.record("the second request had no Range")
        }
    }

    @Test(arguments: TestRoute.all)
    func aChecksumMismatchFailsAndLeavesNoFile(route: TestRoute) async throws {
        let payload = TestSupport.payload(size: 100_000, seed: 13)
        let ranges = RangeLog()
        let server = try Self.cuttingServer(
            payload, cut: 50_000, crc32c: CRC32C.checksum(payload) ^ 1, ranges: ranges, scheme: route.scheme)
        defer { server.stop() }
        let storage = Self.scriptedStorage(server, route)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("o.bin")
        var error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").writeAsync(toFile: target)
        }
        #expect(error?.code == .nonMatchingChecksum)
        error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").data(maxSize: 1 << 20)
        }
        #expect(error?.code == .nonMatchingChecksum)
        #expect(try Self.contents(of: directory).isEmpty)
    }
}
