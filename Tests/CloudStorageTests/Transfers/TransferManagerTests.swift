import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage

/// The transfer manager against the emulator: exact trees both ways, server-side copies and
/// deletions of a prefix, its limits (held requests keep files in flight, a counting transport
/// records the most at once), pause, cancel, a failing file, and aggregated progress.
@Suite("Transfer manager", .timeLimit(.minutes(10)))
struct TransferManagerTests {
    static let bucket = "transfer-bucket"

    /// Runs `body` with an emulator (given `faults`) and a `Storage` whose requests a
    /// ``TestTransport`` counts.
    static func withStorage(
        faults: [String] = [], _ body: (Storage, TestTransport, StorageEmulator) async throws -> Void
    ) async throws {
        let route = TestRoute.nativeHTTP
        let emulator = try route.startEmulator { $0.faults = faults }
        defer { emulator.stop() }
        try emulator.createBucket(bucket)
        try emulator.createBucket(bucket + "-2")
        let endpoint = StorageEndpoint.gcs(emulator.baseURL)
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        try configuration.retry.setInitialDelay(.milliseconds(5))
        let counter = TestTransport(wrapping: route.makeTransport(for: endpoint))
        let storage = Storage(
            bucket: bucket, endpoint: endpoint, authorization: .none, configuration: configuration, transport: counter)
        try await body(storage, counter, emulator)
    }

    /// A tree of `count` small files (file 0 at the top, the others two levels down), with a
    /// link to a file and a link to a directory; the payloads by relative path.
    static func makeTree(count: Int, size: Int = 1000) throws -> (URL, [String: Data]) {
        let root = try TestSupport.temporaryDirectory()
        var files: [String: Data] = [:]
        for index in 0..<count {
            let relative = index == 0 ? "top.txt" : "d\(index % 3)/sub/f\(index).bin"
            let url = root.appendingPathComponent(relative)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let data = TestSupport.payload(size: size + index, seed: UInt64(index + 1))
            try data.write(to: url)
            files[relative] = data
        }
        return (root, files)
    }

    static func errorCode(_ outcome: StorageTransferOutcome) -> StorageErrorCode? {
        if case .failed(let error) = outcome.result { return error.code }
        return nil
    }

    static func stored(_ storage: Storage, prefix: String) async throws -> [String: Data] {
        var found: [String: Data] = [:]
        for try await entry in storage.objects(StorageObjectQuery(prefix: prefix)) {
            if case .object(let object, _) = entry {
                found[object.fullPath] = try await object.data(maxSize: 1 << 20)
            }
        }
        return found
    }

    @Test("a directory goes up and a prefix comes down with exact names and bytes; links as the walk rules say")
    func uploadAndDownload() async throws {
        try await Self.withStorage { storage, _, _ in
            let (root, files) = try Self.makeTree(count: 7)
            try FileManager.default.createSymbolicLink(
                atPath: root.appendingPathComponent("link.txt").path,
                withDestinationPath: root.appendingPathComponent("top.txt").path)
            try FileManager.default.createSymbolicLink(
                atPath: root.appendingPathComponent("dirlink").path,
                withDestinationPath: root.appendingPathComponent("d1").path)
            let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 3)
            let report = try await manager.uploadDirectory(root, to: "up/").value
            #expect(report.failed.isEmpty)
            #expect(report.succeeded.count == files.count + 1)
            #expect(report.skipped.map(\.item.object.fullPath) == ["up/dirlink"])
            var expected = Dictionary(uniqueKeysWithValues: files.map { ("up/" + $0.key, $0.value) })
            expected["up/link.txt"] = files["top.txt"]
            #expect(try await Self.stored(storage, prefix: "up/") == expected)

            // Exact names: a//b and a placeholder come down as a failure and a skip, never as other files.
            _ = try await storage.reference(objectName: "up/odd//name").putDataAsync(Data("x".utf8))
            _ = try await storage.reference(objectName: "up/folder/").putDataAsync(Data())
            _ = try await storage.reference(objectName: "upper.txt").putDataAsync(Data("not below up/".utf8))
            let target = try TestSupport.temporaryDirectory().appendingPathComponent("down")
            let down = try await manager.downloadObjects(withPrefix: "up/", to: target).value
            #expect(down.outcomes.count == expected.count + 2)
            #expect(down.failed.map(\.item.object.fullPath) == ["up/odd//name"])
            #expect(down.failed.first.flatMap(Self.errorCode) == .pathError)
            #expect(down.skipped.map(\.item.object.fullPath) == ["up/folder/"])
            for (name, data) in expected {
                let file = target.appendingPathComponent(String(name.dropFirst(3)))
                #expect(try Data(contentsOf: file) == data, "\(name)")
            }
            #expect(!FileManager.default.fileExists(atPath: target.appendingPathComponent("odd/name").path))
        }
    }

    @Test("a prefix is copied on the server to another bucket, and deleted exactly")
    func copyAndDelete() async throws {
        try await Self.withStorage { storage, _, _ in
            let names = ["p/a", "p/b/c", "p//d", "p/e/", "pq", "other"]
            for name in names { _ = try await storage.reference(objectName: name).putDataAsync(Data(name.utf8)) }
            let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 2)
            let other = storage.bucket(Self.bucket + "-2")
            let copied = try await manager.copyObjects(withPrefix: "p/", to: "q/", in: other).value
            #expect(copied.succeeded.count == 4)
            #expect(
                try await Self.stored(other, prefix: "")
                    == [
                        "q/a": Data("p/a".utf8), "q/b/c": Data("p/b/c".utf8), "q//d": Data("p//d".utf8),
                        "q/e/": Data("p/e/".utf8),
                    ])

            let deleted = try await manager.deleteObjects(withPrefix: "p//").value
            #expect(deleted.succeeded.map(\.item.object.fullPath) == ["p//d"])
            let rest = try await manager.deleteObjects(withPrefix: "p/").value
            #expect(rest.succeeded.map(\.item.object.fullPath) == ["p/a", "p/b/c", "p/e/"])
            #expect(try await Self.stored(storage, prefix: "").keys.sorted() == ["other", "pq"])
        }
    }

    /// Stores `count` objects under `prefix` one after the other (one request each, so that a
    /// fault plan can count them), by name.
    static func seed(_ storage: Storage, count: Int, size: Int = 1000, prefix: String) async throws -> [String: Data] {
        var objects: [String: Data] = [:]
        for index in 0..<count {
            let name = prefix + "d\(index % 3)/o\(index)"
            let data = TestSupport.payload(size: size + index, seed: UInt64(index + 7))
            _ = try await storage.reference(objectName: name).putDataAsync(data)
            objects[String(name.dropFirst(prefix.count))] = data
        }
        return objects
    }

    /// The fault plan that lets `seeded` uploads and one listing pass, then holds the next
    /// `held` requests (the first downloads) until the client closes them.
    static func holding(_ held: Int, after seeded: Int) -> [String] {
        Array(repeating: "pass", count: seeded + 1) + Array(repeating: "stall-after-0", count: held)
    }

    /// Waits until the emulator has received the requests that ``holding(_:after:)`` holds (the
    /// client counting a request as sent is not enough: a pause could cancel it before it arrives,
    /// and a later request would be held instead). The suite's time limit ends a wait that never ends.
    static func waitUntilHeld(_ held: Int, after seeded: Int, _ emulator: StorageEmulator) async throws {
        while emulator.requestsReceived < seeded + 1 + held { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test("at most maxConcurrentFiles run; pausing with files held in flight, then resuming, writes every file exactly")
    func concurrencyLimitAndPause() async throws {
        try await Self.withStorage(faults: Self.holding(3, after: 12)) { storage, counter, emulator in
            let objects = try await Self.seed(storage, count: 12, prefix: "c/")
            let target = try TestSupport.temporaryDirectory()
            let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 3)
            let task = manager.downloadObjects(withPrefix: "c/", to: target)
            try await Self.waitUntilHeld(3, after: 12, emulator)
            #expect(task.files.done == 0)
            await task.pause()
            #expect(task.snapshot.status == .pause)
            await task.resume()
            let report = try await task.value
            #expect(report.succeeded.count == objects.count)
            #expect(counter.highWater == 3, "at most 3 requests at once, and 3 were held")
            #expect(try TestSupport.files(below: target) == objects)
        }
    }

    @Test("the memory budget bounds the files in flight by their sizes")
    func memoryBudget() async throws {
        try await Self.withStorage(faults: Self.holding(2, after: 8)) { storage, counter, emulator in
            let objects = try await Self.seed(storage, count: 8, size: 4000, prefix: "m/")
            // Two objects fit in the budget, a third does not, whatever the concurrency allows.
            let target = try TestSupport.temporaryDirectory()
            let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 8, memoryBudget: 8100)
            let task = manager.downloadObjects(withPrefix: "m/", to: target)
            try await Self.waitUntilHeld(2, after: 8, emulator)
            await task.pause()
            await task.resume()
            let report = try await task.value
            #expect(report.succeeded.count == objects.count)
            #expect(counter.highWater == 2)
            #expect(try TestSupport.files(below: target) == objects)
        }
    }

    @Test("cancel with files in flight ends the task at once with cancelled and an outcome for each file that ran")
    func cancel() async throws {
        try await Self.withStorage(faults: Self.holding(2, after: 6)) { storage, _, emulator in
            _ = try await Self.seed(storage, count: 6, prefix: "x/")
            let target = try TestSupport.temporaryDirectory()
            let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 2)
            let task = manager.downloadObjects(withPrefix: "x/", to: target)
            let stream = task.transferSnapshots
            try await Self.waitUntilHeld(2, after: 6, emulator)
            await task.cancel()
            await #expect(throws: StorageError.self) { try await task.value }
            var last: StorageTransferSnapshot?
            for await snapshot in stream { last = snapshot }
            #expect(last?.status == .failure)
            #expect(last?.error?.code == .cancelled)
            #expect(task.outcomes.count == 2)
            #expect(task.outcomes.allSatisfy { $0.result == .failed(.cancelled()) })
            #expect(try TestSupport.files(below: target).isEmpty, "no file, partial or whole")
        }
    }

    @Test("one failing file leaves the others stored and the report names it; failFast stops the rest")
    func oneFailure() async throws {
        // One file at a time, in name order: the second request (the second file) is refused.
        try await Self.withStorage(faults: ["pass", "return-403"]) { storage, _, _ in
            let (root, files) = try Self.makeTree(count: 5)
            let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 1)
            let report = try await manager.uploadDirectory(root, to: "f/").value
            #expect(report.succeeded.count == files.count - 1)
            #expect(report.failed.count == 1)
            let failed = try #require(report.failed.first)
            #expect(
                failed.item.object.fullPath == "f/"
                    + files.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }[1])
            #expect(Self.errorCode(failed) == .unauthorized)
            #expect(try await Self.stored(storage, prefix: "f/").count == files.count - 1)
        }
        try await Self.withStorage(faults: ["pass", "return-403"]) { storage, _, _ in
            let (root, files) = try Self.makeTree(count: 5)
            let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 1, failFast: true)
            let report = try await manager.uploadDirectory(root, to: "f/").value
            #expect(report.succeeded.count == 1)
            #expect(report.failed.count == 1)
            #expect(report.skipped.count == files.count - 2)
        }
    }

    @Test("aggregated progress never goes back and ends at the total bytes and files")
    func progress() async throws {
        try await Self.withStorage { storage, _, _ in
            let (root, files) = try Self.makeTree(count: 9, size: 3000)
            let total = Int64(files.values.reduce(0) { $0 + $1.count })
            let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 4)
            let task = manager.uploadDirectory(root, to: "g/")
            var seen: [StorageTransferSnapshot] = []
            for await snapshot in task.transferSnapshots { seen.append(snapshot) }
            _ = try await task.value
            let bytes = seen.map(\.progress.completedUnitCount)
            #expect(bytes == bytes.sorted())
            #expect(seen.map(\.files.done) == seen.map(\.files.done).sorted())
            let last = try #require(seen.last)
            #expect(last.status == .success)
            #expect(last.progress == TaskProgress(completedUnitCount: total, totalUnitCount: total))
            #expect(last.files == StorageTransferFileCounts(total: files.count, succeeded: files.count))
        }
    }
}
