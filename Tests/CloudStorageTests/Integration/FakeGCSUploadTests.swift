import FakeGCSServer
import Foundation
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage

/// Uploads against fake-gcs-server, a third-party implementation of the GCS
/// JSON API. It finalizes an upload on any status query, so only flows that
/// tolerate that are meaningful here; the strict flows run against our own
/// emulator.
@Suite("Uploads to fake-gcs-server", .timeLimit(.minutes(10)))
struct FakeGCSUploadTests {
    static let sizes = [0, 1, 300 * .kibibyte, 20 * .mebibyte, 100 * .mebibyte]
    @Test("putData stores every byte", arguments: TestRoute.all, sizes)
    func putData(route: TestRoute, size: Int) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "data", route: route)
        let payload = TestSupport.payload(size: size, seed: UInt64(size))
        let ref = storage.reference().child("uploads/data-\(size).bin")
        let metadata = try await ref.putDataAsync(payload)
        #expect(metadata.size == Int64(size))
        #expect(metadata.path == "uploads/data-\(size).bin")
        #expect(metadata.name == "data-\(size).bin")
        #expect(metadata.bucket == storage.bucket)
        #expect(metadata.contentType == "application/octet-stream")
        #expect(metadata.crc32cValue == CRC32C.checksum(payload))
        try await TestSupport.expectStored(payload, at: ref.fullPath, in: storage, server: server)
    }

    @Test("putFile stores every byte", arguments: TestRoute.all, sizes)
    func putFile(route: TestRoute, size: Int) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "file", route: route)
        let payload = TestSupport.payload(size: size, seed: UInt64(size) + 7)
        let file = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let ref = storage.reference(withPath: "uploads/file-\(size).bin")
        let task = ref.putFile(from: file)
        let snapshots = TestSupport.observe(task)
        let metadata = try await task.value
        #expect(metadata.size == Int64(size))
        try await TestSupport.expectStored(payload, at: ref.fullPath, in: storage, server: server)

        let seen = await snapshots.value
        #expect(seen.first?.status == .resume || seen.first?.status == .progress, "the latest snapshot comes first")
        #expect(seen.last?.status == .success)
        #expect(seen.last?.metadata?.size == Int64(size))
        #expect(seen.last?.progress.completedUnitCount == Int64(size))
        #expect(seen.filter { $0.status.isTerminal }.count == 1)
        let completed = seen.filter { $0.status == .progress }.map(\.progress.completedUnitCount)
        #expect(completed == completed.sorted(), "progress never goes back in an upload without failures")
        #expect(completed.allSatisfy { $0 <= Int64(size) })
    }

    @Test(
        "chunked uploads send bounded requests",
        arguments: TestRoute.all, [(5 * .mebibyte + 3, .mebibyte), (20 * .mebibyte, 4 * .mebibyte)])
    func chunked(route: TestRoute, sizes: (size: Int, chunk: Int)) async throws {
        let (size, chunk) = sizes
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "chunk", route: route) {
            try $0.uploads.setChunkSize(Int64(chunk))
            $0.uploads.multipartThreshold = 0
        }
        let payload = TestSupport.payload(size: size, seed: 99)
        let file = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let fileRef = storage.reference(withPath: "chunked/file")
        _ = try await fileRef.putFileAsync(from: file)
        try await TestSupport.expectStored(payload, at: fileRef.fullPath, in: storage, server: server)
        let dataRef = storage.reference(withPath: "chunked/data")
        _ = try await dataRef.putDataAsync(payload)
        try await TestSupport.expectStored(payload, at: dataRef.fullPath, in: storage, server: server)
    }

    @Test(arguments: TestRoute.all)
    func customMetadataRoundTrips(route: TestRoute) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "meta", route: route)
        var metadata = StorageMetadata()
        metadata.contentType = "text/plain"
        metadata.cacheControl = "public, max-age=60"
        metadata.contentDisposition = "attachment; filename=\"notes.txt\""
        metadata.contentLanguage = "en"
        metadata.customMetadata = ["owner": "ada", "purpose": "test ✓"]
        let ref = storage.reference(withPath: "notes/today.txt")
        let stored = try await ref.putDataAsync(Data("hello".utf8), metadata: metadata)
        #expect(stored.contentType == "text/plain")
        #expect(stored.customMetadata == ["owner": "ada", "purpose": "test ✓"])
        let resource = try StorageMetadata(
            objectResource: try await server.objectResource(bucket: storage.bucket, object: ref.fullPath))
        #expect(resource.contentType == "text/plain")
        #expect(resource.cacheControl == "public, max-age=60")
        #expect(resource.contentDisposition == "attachment; filename=\"notes.txt\"")
        #expect(resource.contentLanguage == "en")
        #expect(resource.customMetadata == ["owner": "ada", "purpose": "test ✓"])
    }

    @Test(
        arguments: TestRoute.all,
        [
            ("photo.PNG", "image/png"), ("report.pdf", "application/pdf"), ("clip.mp4", "video/mp4"),
            ("data.unknownext", "application/octet-stream"), ("README", "application/octet-stream"),
        ])
    func contentTypeIsInferredFromTheFileExtension(
        route: TestRoute, file: (name: String, expected: String)
    ) async throws {
        let (fileName, expected) = file
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "ctype", route: route)
        let file = try TestSupport.file(named: fileName, containing: Data("x".utf8))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let ref = storage.reference(withPath: "typed/\(fileName)")
        let stored = try await ref.putFileAsync(from: file)
        #expect(stored.contentType == expected)
        let resource = try StorageMetadata(
            objectResource: try await server.objectResource(bucket: storage.bucket, object: ref.fullPath))
        #expect(resource.contentType == expected)
    }

    @Test(arguments: TestRoute.all)
    func anExplicitContentTypeWinsOverTheExtension(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "ctype", route: route)
        let file = try TestSupport.file(named: "photo.png", containing: Data("x".utf8))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        var metadata = StorageMetadata()
        metadata.contentType = "application/x-custom"
        let stored = try await storage.reference(withPath: "typed/explicit.png").putFileAsync(
            from: file, metadata: metadata)
        #expect(stored.contentType == "application/x-custom")
    }

    @Test(arguments: TestRoute.all)
    func manyConcurrentUploads(route: TestRoute) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "many", route: route) {
            $0.uploads.multipartThreshold = 256 * 1024
        }
        let payloads = (0..<40).map {
            TestSupport.payload(size: $0 % 4 == 0 ? 600 * .kibibyte : 64 * .kibibyte, seed: UInt64($0))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, payload) in payloads.enumerated() {
                group.addTask {
                    let metadata = try await storage.reference(withPath: "many/\(index)").putDataAsync(payload)
                    #expect(metadata.size == Int64(payload.count))
                }
            }
            try await group.waitForAll()
        }
        for (index, payload) in payloads.enumerated() {
            try await TestSupport.expectStored(payload, at: "many/\(index)", in: storage, server: server)
        }
    }

    @Test(arguments: TestRoute.all)
    func aBearerTokenIsSentToLoopbackAndTheProviderIsAsked(route: TestRoute) async throws {
        let calls = CallCounter()
        let (storage, server) = try await TestSupport.fakeGCSStorage(
            label: "auth",
            authorization: .tokenProvider { _ in
                calls.increment()
                return "token-\(calls.value)"
            },
            route: route
        )
        let payload = TestSupport.payload(size: 10 * .mebibyte, seed: 5)
        _ = try await storage.reference(withPath: "auth/a").putDataAsync(payload)
        #expect(calls.value >= 1)
        try await TestSupport.expectStored(payload, at: "auth/a", in: storage, server: server)
    }
}

/// A thread-safe counter for closures called from anywhere.
final class CallCounter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}
