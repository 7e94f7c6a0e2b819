import FakeGCSServer
import Foundation
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage

/// Copies, composes and moves, within a bucket and across two handles of one `Storage`, against
/// fake-gcs-server and the built-in emulator, on each route (``TestRoute``).
///
/// fake-gcs-server copies in one rewrite call, ignores preconditions on copies and composes, and
/// has no `moveTo` (moves there take the copy-then-delete path), so the scenarios that need a
/// strict server run only against the emulator.
@Suite("Server-side copies", .timeLimit(.minutes(10)))
struct ServerSideCopyIntegrationTests {
    enum Server: String, Sendable, CustomTestStringConvertible {
        case fakeGCS, emulator
        var testDescription: String { rawValue }
    }

    /// What one scenario gets: a handle for a fresh bucket, one for a second bucket of the same
    /// server made with ``Storage/bucket(_:)``, and the requests they sent.
    struct Context {
        var storage: Storage
        var other: Storage
        var recorder: TestTransport
        var server: Server
    }

    static func withContext(
        _ server: Server, _ route: TestRoute, _ body: (Context) async throws -> Void
    ) async throws {
        let first = TestSupport.bucketName("copy")
        let second = TestSupport.bucketName("copy2")
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        try configuration.retry.setInitialDelay(.milliseconds(20))
        let endpoint: StorageEndpoint
        var emulator: StorageEmulator?
        switch server {
        case .fakeGCS:
            let fake = try await FakeGCSServer.shared()
            try await fake.createBucket(first)
            try await fake.createBucket(second)
            endpoint = .gcs(try TestSupport.fakeGCSBaseURL(fake, route))
        case .emulator:
            let started = try route.startEmulator()
            try started.createBucket(first)
            try started.createBucket(second)
            emulator = started
            endpoint = .gcs(started.baseURL)
        }
        defer { emulator?.stop() }
        let recorder = TestTransport(wrapping: route.makeTransport(for: endpoint))
        let storage = Storage(
            bucket: first, endpoint: endpoint, authorization: .none, configuration: configuration, transport: recorder)
        try await body(Context(storage: storage, other: storage.bucket(second), recorder: recorder, server: server))
    }

    enum Scenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case copyWithinABucketKeepsBytesAndMetadata
        case copyToAnotherBucketWithNewMetadata
        case composeConcatenatesInOneRequest
        case moveWithinABucket
        case moveToAnotherBucket
        // Strict servers only:
        case copyInSeveralCallsReportsProgress
        case aCopyContinuesFromARewriteToken
        case preconditionsOnBothSidesOfACopy
        case composeHonoursItsPreconditions
        case atomicMoveIsOneRequest

        var testDescription: String { rawValue }

        /// The scenarios fake-gcs-server can judge.
        static let onFakeGCS: [Scenario] = [
            .copyWithinABucketKeepsBytesAndMetadata, .copyToAnotherBucketWithNewMetadata,
            .composeConcatenatesInOneRequest, .moveWithinABucket, .moveToAnotherBucket,
        ]
    }

    @Test(arguments: Scenario.onFakeGCS, TestRoute.all)
    func onFakeGCS(scenario: Scenario, route: TestRoute) async throws {
        try await Self.withContext(.fakeGCS, route) { try await Self.run(scenario, $0) }
    }

    @Test(arguments: Scenario.allCases, TestRoute.all)
    func onEmulator(scenario: Scenario, route: TestRoute) async throws {
        try await Self.withContext(.emulator, route) { try await Self.run(scenario, $0) }
    }

    static func upload(
        _ data: Data, to reference: StorageReference, contentType: String = "application/octet-stream",
        custom: [String: String] = [:]
    ) async throws -> StorageMetadata {
        var metadata = StorageMetadata()
        metadata.contentType = contentType
        metadata.customMetadata = custom
        return try await reference.putDataAsync(data, metadata: metadata)
    }

    static func expectGone(_ reference: StorageReference, sourceLocation: SourceLocation = #_sourceLocation) async {
        let error = await #expect(throws: StorageError.self, sourceLocation: sourceLocation) {
            try await reference.getMetadata()
        }
        #expect(error?.code == .objectNotFound, sourceLocation: sourceLocation)
    }

    static func run(_ scenario: Scenario, _ context: Context) async throws {
        let storage = context.storage
        let payload = TestSupport.payload(size: 300 * 1024 + 7, seed: 19)
        switch scenario {
        case .copyWithinABucketKeepsBytesAndMetadata:
            let source = storage.reference(withPath: "a/source.bin")
            let stored = try await upload(payload, to: source, contentType: "image/png", custom: ["k": "v"])
            let reports = Mutex<[TaskProgress]>([])
            let copied = try await source.copy(to: storage.reference(withPath: "b/copy.bin")) { progress in
                reports.withLock { $0.append(progress) }
            }
            #expect(copied.path == "b/copy.bin" && copied.bucket == storage.bucket)
            #expect(copied.size == Int64(payload.count))
            #expect(copied.crc32cValue == CRC32C.checksum(payload))
            #expect(copied.contentType == "image/png" && copied.customMetadata == ["k": "v"])
            #expect(copied.generation != nil)
            #expect(
                reports.withLock { $0.last }
                    == TaskProgress(completedUnitCount: Int64(payload.count), totalUnitCount: Int64(payload.count)))
            #expect(try await storage.reference(withPath: "b/copy.bin").data(maxSize: 1 << 20) == payload)
            #expect(try await source.getMetadata().generation == stored.generation, "the source stays")

        case .copyToAnotherBucketWithNewMetadata:
            let source = storage.reference(withPath: "report.pdf")
            _ = try await upload(payload, to: source, contentType: "application/pdf", custom: ["draft": "yes"])
            var metadata = StorageMetadata()
            metadata.contentType = "application/x-archived-pdf"
            metadata.customMetadata = ["archived": "2024"]
            let destination = context.other.reference(withPath: "2024/report.pdf")
            let copied = try await source.copy(to: destination, metadata: metadata)
            #expect(copied.bucket == context.other.bucket && copied.path == "2024/report.pdf")
            #expect(copied.contentType == "application/x-archived-pdf")
            #expect(copied.customMetadata["archived"] == "2024")
            if context.server == .emulator {
                // Cloud Storage replaces the metadata; fake-gcs-server keeps fields the body leaves out.
                #expect(copied.customMetadata == ["archived": "2024"])
            }
            #expect(try await destination.data(maxSize: 1 << 20) == payload)
            let rewrites = context.recorder.sent.filter { $0.url.absoluteString.contains("/rewriteTo/") }
            #expect(rewrites.count == 1)
            #expect(
                rewrites.first?.url.absoluteString.contains("/rewriteTo/b/\(context.other.bucket)/o/2024%2Freport.pdf")
                    == true)

        case .composeConcatenatesInOneRequest:
            let parts = (0..<3).map { TestSupport.payload(size: 1000 * ($0 + 1) + $0, seed: UInt64(40 + $0)) }
            let references = (0..<3).map { storage.reference(withPath: "parts/\($0)") }
            for (part, reference) in zip(parts, references) { _ = try await upload(part, to: reference) }
            var metadata = StorageMetadata()
            metadata.contentType = "text/plain"
            // A source may repeat: the first part is also the last.
            let sources = references + [references[0]]
            let whole = parts.reduce(Data(), +) + parts[0]
            let destination = storage.reference(withPath: "whole.txt")
            let before = context.recorder.sent.count
            let composed = try await destination.compose(from: sources, metadata: metadata)
            let sent = context.recorder.sent.dropFirst(before)
            #expect(
                sent.count == 1 && sent.first?.url.absoluteString.contains("/o/whole.txt/compose") == true, "\(sent)")
            #expect(composed.size == Int64(whole.count))
            #expect(composed.crc32cValue == CRC32C.checksum(whole))
            #expect(composed.contentType == "text/plain")
            if context.server == .emulator { #expect(composed.componentCount == 4) }
            #expect(try await destination.data(maxSize: 1 << 20) == whole)

        case .moveWithinABucket:
            let source = storage.reference(withPath: "inbox/scan.pdf")
            _ = try await upload(payload, to: source, contentType: "application/pdf")
            let destination = storage.reference(withPath: "done/scan.pdf")
            let moved = try await source.move(to: destination, preconditions: .doesNotExist)
            #expect(moved.path == "done/scan.pdf" && moved.contentType == "application/pdf")
            #expect(try await destination.data(maxSize: 1 << 20) == payload)
            await expectGone(source)

        case .moveToAnotherBucket:
            let source = storage.reference(withPath: "outgoing.bin")
            let stored = try await upload(payload, to: source)
            let destination = context.other.reference(withPath: "incoming.bin")
            let moved = try await source.move(to: destination)
            #expect(moved.bucket == context.other.bucket && moved.size == Int64(payload.count))
            #expect(try await destination.data(maxSize: 1 << 20) == payload)
            await expectGone(source)
            let sent = context.recorder.sent
            #expect(!sent.contains { $0.url.absoluteString.contains("/moveTo/") }, "moveTo stays within a bucket")
            #expect(
                sent.contains {
                    $0.method == "DELETE"
                        && $0.url.absoluteString.contains("ifGenerationMatch=\(stored.generation ?? -1)")
                }, "the delete is pinned to the generation copied")

        case .copyInSeveralCallsReportsProgress:
            let big = TestSupport.payload(size: 3 * .mebibyte + 5, seed: 7)
            let source = storage.reference(withPath: "big.bin")
            _ = try await upload(big, to: source)
            let reports = Mutex<[Int64]>([])
            let copy = ServerSideCopy(
                sourceBucket: storage.bucket, sourceName: "big.bin", destinationBucket: context.other.bucket,
                destinationName: "big.bin", maxBytesRewrittenPerCall: Int64(Int.mebibyte))
            let copied = try await source.rewrite(copy) { progress in
                reports.withLock { $0.append(progress.completedUnitCount) }
            }
            let seen = reports.withLock { $0 }
            #expect(seen.count >= 4, "a call per MiB at most: \(seen)")
            #expect(seen == seen.sorted() && seen.last == Int64(big.count))
            #expect(copied.crc32cValue == CRC32C.checksum(big))
            #expect(try await context.other.reference(withPath: "big.bin").data(maxSize: 4 << 20) == big)

        case .aCopyContinuesFromARewriteToken:
            let big = TestSupport.payload(size: 3 * .mebibyte + 5, seed: 8)
            let source = storage.reference(withPath: "big.bin")
            _ = try await upload(big, to: source)
            let destination = context.other.reference(withPath: "copy.bin")
            let first = try await source.rewrite(
                to: destination, preconditions: .doesNotExist, maxBytesRewrittenPerCall: Int64(Int.mebibyte))
            let token = try #require(first.rewriteToken)
            #expect(
                !first.isDone && first.bytesRewritten == Int64(Int.mebibyte) && first.objectSize == Int64(big.count))
            let second = try await source.rewrite(
                to: destination, preconditions: .doesNotExist, rewriteToken: token,
                maxBytesRewrittenPerCall: Int64(Int.mebibyte))
            #expect(second.bytesRewritten == 2 * Int64(Int.mebibyte) && second.rewriteToken != nil)
            await #expect(throws: StorageError.self, "nothing is written before the last call") {
                _ = try await destination.getMetadata()
            }
            // Another handle, as another process would be, continues from the token alone.
            let before = context.recorder.sent.count
            let copied = try await storage.bucket(storage.bucket).reference(withPath: "big.bin").copy(
                to: destination, preconditions: .doesNotExist, rewriteToken: second.rewriteToken)
            let sent = context.recorder.sent.dropFirst(before)
            #expect(sent.count == 1 && sent.first?.url.absoluteString.contains("rewriteToken=") == true, "\(sent)")
            #expect(copied.crc32cValue == CRC32C.checksum(big))
            #expect(try await destination.data(maxSize: 4 << 20) == big)
            let refused = await #expect(throws: StorageError.self, "a token names its copy") {
                _ = try await source.copy(
                    to: context.other.reference(withPath: "elsewhere.bin"), rewriteToken: token)
            }
            #expect(refused?.code == .invalidArgument)

        case .preconditionsOnBothSidesOfACopy:
            let source = storage.reference(withPath: "s.bin")
            let stored = try await upload(payload, to: source)
            let generation = try #require(stored.generation)
            let destination = storage.reference(withPath: "d.bin")
            let stale = await #expect(throws: StorageError.self) {
                try await source.copy(
                    to: destination, sourcePreconditions: StoragePreconditions(ifGenerationMatch: generation + 1))
            }
            #expect(stale?.code == .preconditionFailed)
            await expectGone(destination)
            _ = try await source.copy(
                to: destination, preconditions: .doesNotExist,
                sourcePreconditions: StoragePreconditions(ifGenerationMatch: generation))
            let again = await #expect(throws: StorageError.self) {
                try await source.copy(to: destination, preconditions: .doesNotExist)
            }
            #expect(again?.code == .preconditionFailed, "the destination exists now")

        case .composeHonoursItsPreconditions:
            let part = storage.reference(withPath: "p")
            _ = try await upload(payload, to: part)
            let destination = storage.reference(withPath: "w")
            let first = try await destination.compose(from: [part], preconditions: .doesNotExist)
            let error = await #expect(throws: StorageError.self) {
                try await destination.compose(from: [part, part], preconditions: .doesNotExist)
            }
            #expect(error?.code == .preconditionFailed)
            #expect(try await destination.getMetadata().generation == first.generation, "nothing was written")

        case .atomicMoveIsOneRequest:
            let source = storage.reference(withPath: "from.bin")
            _ = try await upload(payload, to: source)
            let before = context.recorder.sent.count
            _ = try await source.move(to: storage.reference(withPath: "to.bin"))
            let sent = context.recorder.sent.dropFirst(before)
            #expect(sent.count == 1 && sent.first?.url.absoluteString.contains("/moveTo/o/to.bin") == true, "\(sent)")
            #expect(sent.first?.status == 200)
            await expectGone(source)
        }
    }

    /// Two handles of one `Storage` share its transport and its credentials' token cache: uploads
    /// to two buckets with one service-account credential exchange one token.
    @Test func bucketHandlesShareTheConnectionPoolAndTheTokenCache() async throws {
        let emulator = try CredentialEndToEndTests.emulator()
        defer { emulator.stop() }
        let storage = CredentialEndToEndTests.storage(
            emulator,
            try .serviceAccount(
                keyJSON: try TestKeyFiles.serviceAccountJSON(tokenURI: emulator.baseURL.absoluteString + "/token")))
        let other = storage.bucket("auth-other")
        #expect(other.bucket == "auth-other" && storage.bucket == "auth")
        let sharedTransport =
            ObjectIdentifier(other.transport as AnyObject) == ObjectIdentifier(storage.transport as AnyObject)
        #expect(sharedTransport, "one connection pool")
        #expect(other.endpoint == storage.endpoint)
        let data = Data("one token for both".utf8)
        _ = try await storage.reference(withPath: "a").putDataAsync(data)
        _ = try await other.reference(withPath: "b").putDataAsync(data)
        #expect(try await other.reference(withPath: "b").data(maxSize: 100) == data)
        #expect(emulator.tokenGrantCount == 1)
    }
}
