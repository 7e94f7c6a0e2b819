import Foundation
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage

/// The Firebase SDK's spellings: `reference(for:)`, the async methods'
/// `onProgress:` closures, and `updateMetadata` with a `StorageMetadata`, on each route.
@Suite("Firebase spellings", .timeLimit(.minutes(10)))
struct FirebaseSpellingsTests {
    /// Progress values seen by a callback, in order.
    final class Seen: Sendable {
        private let values = Mutex<[TaskProgress]>([])
        func append(_ progress: TaskProgress) { values.withLock { $0.append(progress) } }
        var all: [TaskProgress] { values.withLock { $0 } }
    }

    @Test func referenceForAURLIsReferenceForURL() throws {
        let storage = Storage(bucket: "my-bucket")
        let url = URL(string: "gs://my-bucket/images/stars.jpg")!
        #expect(try storage.reference(for: url) == storage.reference(forURL: url))
        #expect(try storage.reference(for: url).fullPath == "images/stars.jpg")
        #expect(throws: StorageError.self) { try storage.reference(for: URL(string: "gs://other/x")!) }
    }

    @Test(arguments: TestRoute.all, [false, true])
    func asyncMethodsReportProgressUpToTheLastByteBeforeReturning(route: TestRoute, firebase: Bool) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = ObjectOperationsTests.storage(
            emulator, firebase: firebase, bucket: TestSupport.bucketName("fb"), route: route)
        let payload = TestSupport.payload(size: 9 * .mebibyte + 5, seed: 3)  // resumable, above the multipart limit
        let ref = storage.reference(withPath: "progress.bin")

        let uploaded = Seen()
        _ = try await ref.putDataAsync(payload, onProgress: uploaded.append)
        #expect(uploaded.all.first?.completedUnitCount == 0)
        #expect(
            uploaded.all.last
                == TaskProgress(completedUnitCount: Int64(payload.count), totalUnitCount: Int64(payload.count)))
        #expect(
            zip(uploaded.all, uploaded.all.dropFirst()).allSatisfy { $0.completedUnitCount <= $1.completedUnitCount })

        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try TestSupport.file(containing: payload)
        let fromFile = Seen()
        _ = try await ref.putFileAsync(from: file, onProgress: fromFile.append)
        #expect(fromFile.all.last?.completedUnitCount == Int64(payload.count))

        let downloaded = Seen()
        let target = try await ref.writeAsync(
            toFile: directory.appendingPathComponent("copy.bin"), onProgress: downloaded.append)
        #expect(try Data(contentsOf: target) == payload)
        #expect(
            downloaded.all.last
                == TaskProgress(completedUnitCount: Int64(payload.count), totalUnitCount: Int64(payload.count)))
    }

    @Test(arguments: TestRoute.all, [false, true])
    func updateMetadataWithStorageMetadataSetsOnlyWhatItNames(route: TestRoute, firebase: Bool) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = ObjectOperationsTests.storage(
            emulator, firebase: firebase, bucket: TestSupport.bucketName("fb"), route: route)
        let ref = storage.reference(withPath: "meta.txt")
        var initial = StorageMetadata()
        initial.contentType = "text/plain"
        initial.contentLanguage = "en"
        initial.customMetadata = ["keep": "1", "change": "old"]
        _ = try await ref.putDataAsync(Data("hi".utf8), metadata: initial)

        var changes = StorageMetadata()
        changes.cacheControl = "no-cache"
        changes.customMetadata = ["change": "new", "add": "2"]
        let updated = try await ref.updateMetadata(changes)
        #expect(updated.cacheControl == "no-cache")
        #expect(updated.contentType == "text/plain", "a nil field is left as it is")
        #expect(updated.contentLanguage == "en")
        #expect(updated.customMetadata == ["keep": "1", "change": "new", "add": "2"])
    }
}
