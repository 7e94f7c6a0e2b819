import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Random interleavings of pause, resume and cancel against downloads in
/// flight: downloads run on the same task core as uploads, and their
/// resources (a temporary file, bytes in memory) must follow every path. On the
/// native transport, over plain HTTP and over TLS (where a cancel also ends a TLS stream
/// mid-record).
@Suite("Download task stress", .timeLimit(.minutes(10)))
struct DownloadTaskStressTests {
    static let size = 3 * 1024 * 1024 + 77

    static let routes: [TestRoute] = [.nativeHTTP, .nativeHTTPS]

    static func storage(_ emulator: StorageEmulator, _ route: TestRoute) -> Storage {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.applyForTest { try $0.retry.setInitialDelay(.milliseconds(10)) }
        return Storage(bucket: "stress", endpoint: .gcs(emulator.baseURL), configuration: configuration)
    }

    @Test(arguments: routes, 0..<40)
    func randomControlsEndExactlyOnceAndLeaveOnlyAWholeFile(route: TestRoute, seed: Int) async throws {
        var generator = SeededGenerator(seed: UInt64(seed) &* 104_729)
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator, route)
        let payload = TestSupport.payload(size: Self.size, seed: UInt64(seed))
        let ref = storage.reference(withPath: "stress/\(seed)")
        _ = try await ref.putDataAsync(payload)

        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("object.bin")
        let toFile = seed % 2 == 0
        let task: any StorageTask
        let value: Task<Data, any Error>
        if toFile {
            let download = ref.write(toFile: target)
            task = download
            value = Task { try Data(contentsOf: try await download.value) }
        } else {
            let download = ref.getData(maxSize: Int64(Self.size))
            task = download
            value = Task { try await download.value }
        }
        let observers = (0..<2).map { _ in task.snapshots }.map { stream in Task { await TestSupport.collect(stream) } }

        try await TestSupport.applyRandomControls(to: task, maxCount: 10, maxWait: .milliseconds(3), using: &generator)

        switch await value.result {
        case .success(let data):
            #expect(data == payload)
            if toFile { #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["object.bin"]) }
        case .failure(let error):
            #expect(
                (error as? StorageError)?.code == .cancelled, "only cancellation can fail these downloads: \(error)")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty,
                "a cancelled download leaves neither the file nor its temporary file")
        }
        for observer in observers {
            let seen = await observer.value
            #expect(seen.filter { $0.status.isTerminal }.count == 1)
            #expect(seen.last?.status.isTerminal == true)
        }
    }

    /// A cancel that comes while a paused worker may still be unwinding is
    /// carried out by a worker of its own, after the paused one stopped.
    @Test(arguments: routes, 0..<20)
    func pauseThenCancelDiscardsWhatThePausedDownloadKept(route: TestRoute, seed: Int) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator, route)
        let ref = storage.reference(withPath: "paused/\(seed)")
        _ = try await ref.putDataAsync(TestSupport.payload(size: Self.size, seed: UInt64(seed)))
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }

        let task = ref.write(toFile: directory.appendingPathComponent("object.bin"))
        // Pause once bytes have arrived (or the download is already done).
        for await snapshot in task.snapshots where snapshot.status == .progress || snapshot.status.isTerminal {
            break
        }
        await task.pause()
        if seed % 2 == 0 { await Task.yield() }
        await task.cancel()
        switch await task.result() {
        case .success:
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["object.bin"])
        case .failure(let error):
            #expect(error.code == .cancelled)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
        #expect(task.snapshot.status.isTerminal)
    }
}
