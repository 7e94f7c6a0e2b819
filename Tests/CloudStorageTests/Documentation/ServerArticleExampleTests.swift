import Foundation
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage

/// Runs the examples of "Using CloudStorage in a server" against the emulator and checks what
/// the article says of them: the status codes, the bytes served, a counter that concurrent
/// writers never lose an increment of, and an upload finished by a "restarted process" (a
/// fresh ``Storage``).
@Suite("Documentation examples: Using CloudStorage in a server", .timeLimit(.minutes(10)))
struct ServerArticleExampleTests {
    static let route = TestRoute.nativeHTTP

    static func withStorage(
        chunkSize: Int64? = nil, _ body: (Storage, StorageEmulator) async throws -> Void
    ) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        var storage = DownloadTests.storage(emulator, firebase: false, route: route)
        if let chunkSize {
            var configuration = storage.configuration
            try configuration.uploads.setChunkSize(chunkSize)
            configuration.uploads.multipartThreshold = chunkSize
            storage = Storage(bucket: storage.bucket, endpoint: storage.endpoint, configuration: configuration)
        }
        try await body(storage, emulator)
    }

    static func body(_ parts: [Data], failing: Bool = false) -> AsyncThrowingStream<Data, any Error> {
        AsyncThrowingStream { continuation in
            for part in parts { continuation.yield(part) }
            continuation.finish(throwing: failing ? CancellationError() : nil)
        }
    }

    @Test func storeUploadAnswersWithTheArticlesStatusCodes() async throws {
        try await Self.withStorage { storage, _ in
            let payload = TestSupport.payload(size: 600_000, seed: 61)
            let halves = [payload.prefix(250_000), payload.dropFirst(250_000)]
            let created = await DocumentationSnippets.serverStoreUpload(
                storage: storage, id: "a", body: Self.body(halves), contentLength: Int64(payload.count),
                contentType: "image/png")
            #expect(created == 201)
            // The same id again: refused, and the first object stays as it was.
            let taken = await DocumentationSnippets.serverStoreUpload(
                storage: storage, id: "a", body: Self.body([Data("other".utf8)]), contentLength: nil,
                contentType: nil)
            #expect(taken == 409)
            let ref = storage.reference(withPath: "uploads/a")
            let stored = try await ref.data(maxSize: 1 << 20)
            let metadata = try await ref.getMetadata()
            #expect(stored == payload && metadata.contentType == "image/png")

            // A body that breaks off, and one shorter than its length: 400, nothing stored.
            let broken = await DocumentationSnippets.serverStoreUpload(
                storage: storage, id: "b", body: Self.body(halves, failing: true), contentLength: nil,
                contentType: nil)
            let short = await DocumentationSnippets.serverStoreUpload(
                storage: storage, id: "c", body: Self.body(halves), contentLength: Int64(payload.count + 1),
                contentType: nil)
            #expect(broken == 400 && short == 400)
            for id in ["b", "c"] {
                await #expect(throws: StorageError.self) {
                    try await storage.reference(withPath: "uploads/\(id)").getMetadata()
                }
            }
        }
    }

    @Test func serveUploadSendsTheObjectInOrder() async throws {
        try await Self.withStorage { storage, _ in
            let payload = TestSupport.payload(size: 3 * 1024 * 1024 + 5, seed: 62)
            _ = try await storage.reference(withPath: "uploads/served").putDataAsync(payload)
            let sent = Mutex(Data())
            try await DocumentationSnippets.serverServeUpload(storage: storage, id: "served") { chunk in
                sent.withLock { $0.append(chunk) }
            }
            #expect(sent.withLock { $0 } == payload)
        }
    }

    @Test func concurrentIncrementsLoseNone() async throws {
        try await Self.withStorage { storage, _ in
            let writers = 8
            let results = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<writers {
                    group.addTask { try await DocumentationSnippets.serverIncrement(storage: storage, counter: "hits") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Each writer saw a different value: no increment overwrote another.
            #expect(results.sorted() == Array(1...writers))
            let stored = try await storage.reference(withPath: "counters/hits").data(maxSize: 64)
            #expect(String(decoding: stored, as: UTF8.self) == String(writers))
        }
    }

    @Test func anUploadInterruptedByARestartIsFinishedAtStartUp() async throws {
        let chunk: Int64 = 256 * 1024
        try await Self.withStorage(chunkSize: chunk) { storage, emulator in
            let records = FileManager.default.temporaryDirectory
                .appendingPathComponent("server-article-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: records, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: records) }
            let upload = DocumentationSnippets.serverUploadThenResume(storage: storage).upload

            // Uninterrupted: the object is stored and its record is gone.
            let payload = TestSupport.payload(size: Int(5 * chunk + 9), seed: 63)
            let file = try TestSupport.file(named: "server-article.bin", containing: payload)
            defer { try? FileManager.default.removeItem(at: file) }
            _ = try await upload(file, "whole.bin", records)
            #expect(try FileManager.default.contentsOfDirectory(atPath: records.path).isEmpty)

            // Interrupted: a first process saved its record after the first chunk, then stopped
            // (a paused task sends nothing more, as a dead process would).
            let first = storage.reference(withPath: "restarted.bin").putFile(from: file)
            for await snapshot in first.snapshots where snapshot.progress.completedUnitCount >= chunk {
                await first.pause()
                break
            }
            let session = try #require(await first.waitForResumableSession())
            let record = records.appendingPathComponent("first.session")
            try session.write(to: record)
            let attributes = try FileManager.default.attributesOfItem(atPath: record.path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let receivedBefore = emulator.bytesReceived

            // The "restarted process": a fresh Storage on the same endpoint.
            let restarted = Storage(
                bucket: storage.bucket, endpoint: storage.endpoint, configuration: storage.configuration)
            await DocumentationSnippets.serverUploadThenResume(storage: restarted).resume(records)
            let finished = try await restarted.reference(withPath: "restarted.bin").data(maxSize: 1 << 22)
            #expect(finished == payload)
            #expect(try FileManager.default.contentsOfDirectory(atPath: records.path).isEmpty)
            // Only what the server had not kept went out again.
            #expect(emulator.bytesReceived - receivedBefore <= Int64(payload.count) - chunk)
        }
    }
}
