import FakeGCSServer
import Foundation
import HTTP1
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// References pinned to a generation, in a versioned bucket, against fake-gcs-server and the
/// built-in emulator: reads, metadata, deletes, copies, moves and composes of a noncurrent
/// generation, and what the SDK sends for them.
///
/// fake-gcs-server keeps noncurrent generations and serves `generation` on metadata and media
/// reads (404 for one that does not exist), but ignores `generation` on a DELETE, which then
/// deletes the live object: the scenarios that delete, patch, copy, move or compose a
/// generation, resume a download through a fault, or use a signed URL run only against the
/// emulator (a strict server).
@Suite("Generations", .timeLimit(.minutes(10)))
struct GenerationIntegrationTests {
    enum Server: String, Sendable, CustomTestStringConvertible {
        case fakeGCS, emulator
        var testDescription: String { rawValue }
    }

    enum Scenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case readsANoncurrentGenerationAsBytesStreamFileAndMetadata
        case aGenerationThatDoesNotExistIsNotFound
        // Strict servers only:
        case deletingANoncurrentGenerationLeavesTheLiveObject
        case patchesANoncurrentGenerationWithPreconditions
        case copiesMovesAndComposesFromANoncurrentGeneration
        case aResumedDownloadKeepsAskingForItsGeneration
        case aSignedURLServesItsGeneration

        var testDescription: String { rawValue }

        static let onFakeGCS: [Scenario] = [
            .readsANoncurrentGenerationAsBytesStreamFileAndMetadata, .aGenerationThatDoesNotExistIsNotFound,
        ]
    }

    struct Context {
        var storage: Storage
        /// Records every request; media downloads opt into a fault plan through its rewrites.
        var recorder: TestTransport
        var emulator: StorageEmulator?
    }

    static let signerEmail = SignedURLEmulatorTests.email

    static func withContext(_ server: Server, _ body: (Context) async throws -> Void) async throws {
        let route = TestRoute.nativeHTTP
        let bucket = TestSupport.bucketName("gen")
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        try configuration.retry.setInitialDelay(.milliseconds(5))
        let endpoint: StorageEndpoint
        var emulator: StorageEmulator?
        switch server {
        case .fakeGCS:
            endpoint = .gcs(try TestSupport.fakeGCSBaseURL(try await FakeGCSServer.shared(), route))
        case .emulator:
            // It knows the test account, so that signed URLs verify.
            let key = try TestCredentials.text("service-account.key")
            let started = try route.startEmulator { configuration in
                configuration.authentication = .init(serviceAccounts: [.init(email: signerEmail, privateKeyPEM: key)])
            }
            emulator = started
            endpoint = .gcs(started.baseURL)
        }
        defer { emulator?.stop() }
        let recorder = TestTransport(wrapping: route.makeTransport(for: endpoint))
        let storage = Storage(
            bucket: bucket, endpoint: endpoint, authorization: .none, configuration: configuration, transport: recorder)
        // A versioned bucket, made as the clients make one.
        var create = HTTPRequest(
            method: "POST", url: endpoint.baseURL.appendingPathComponent("storage/v1/b"),
            body: .data(Data(#"{"name": "\#(bucket)", "versioning": {"enabled": true}}"#.utf8)), isIdempotent: false)
        create.headers.add("Content-Type", "application/json")
        var executor = CallExecutor(storage: storage, operation: .other)
        _ = try await executor.execute(create, idempotency: .idempotent, accepting: [200], about: .bucket(bucket))
        try await body(Context(storage: storage, recorder: recorder, emulator: emulator))
    }

    @Test(arguments: Scenario.onFakeGCS)
    func onFakeGCS(scenario: Scenario) async throws {
        try await Self.withContext(.fakeGCS) { try await Self.run(scenario, $0) }
    }

    @Test(arguments: Scenario.allCases)
    func onEmulator(scenario: Scenario) async throws {
        try await Self.withContext(.emulator) { try await Self.run(scenario, $0) }
    }

    static func expectNotFound(
        _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let error = await #expect(throws: StorageError.self, sourceLocation: sourceLocation) { try await body() }
        #expect(error?.code == .objectNotFound, "\(String(describing: error))", sourceLocation: sourceLocation)
    }

    /// Expects `body` to be refused as a write to a pinned reference, before any request.
    static func expectRefusedWrite(
        _ context: Context, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let before = context.recorder.sent.count
        let error = await #expect(throws: StorageError.self, sourceLocation: sourceLocation) { try await body() }
        #expect(error?.code == .invalidArgument, sourceLocation: sourceLocation)
        #expect(error?.message.contains("generation") == true, sourceLocation: sourceLocation)
        #expect(context.recorder.sent.count == before, "refused before any request", sourceLocation: sourceLocation)
    }

    static func run(_ scenario: Scenario, _ context: Context) async throws {
        let storage = context.storage
        let ref = storage.reference(withPath: "notes/config.json")
        let one = TestSupport.payload(size: 70 * 1024 + 3, seed: 1)
        let two = TestSupport.payload(size: 1024, seed: 2)
        var metadata = StorageMetadata()
        metadata.customMetadata = ["version": "1"]
        let first = try #require(try await ref.putDataAsync(one, metadata: metadata).generation)
        let second = try #require(try await ref.putDataAsync(two).generation)
        #expect(first != second)
        let old = ref.atGeneration(first)

        switch scenario {
        case .readsANoncurrentGenerationAsBytesStreamFileAndMetadata:
            let read = try await old.getMetadata()
            #expect(read.generation == first && read.size == Int64(one.count))
            #expect(read.customMetadata == ["version": "1"])
            #expect(try await old.data(maxSize: 1 << 20) == one)
            #expect(try await old.data(maxSize: 1 << 20, range: 10..<20) == one[10..<20])
            var streamed = Data()
            for try await chunk in old.dataStream() { streamed += chunk }
            #expect(streamed == one)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("gen-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: file) }
            _ = try await old.writeAsync(toFile: file)
            #expect(try Data(contentsOf: file) == one)
            // The live object is untouched and still what an unpinned reference reads.
            #expect(try await ref.data(maxSize: 1 << 20) == two)
            #expect(try await ref.getMetadata().generation == second)
            let media = context.recorder.sent.filter {
                $0.url.absoluteString.contains("alt=media") && $0.url.absoluteString.contains("generation=")
            }
            #expect(media.count == 4 && media.allSatisfy { $0.url.absoluteString.contains("generation=\(first)") })

        case .deletingANoncurrentGenerationLeavesTheLiveObject:
            try await old.delete()
            await expectNotFound { _ = try await old.getMetadata() }
            await expectNotFound { _ = try await old.data(maxSize: 1 << 20) }
            #expect(try await ref.data(maxSize: 1 << 20) == two)
            #expect(
                context.recorder.sent.contains {
                    $0.method == "DELETE" && $0.url.absoluteString.contains("generation=\(first)")
                })

        case .aGenerationThatDoesNotExistIsNotFound:
            let missing = ref.atGeneration(max(first, second) + 1000)
            await expectNotFound { _ = try await missing.getMetadata() }
            await expectNotFound { _ = try await missing.data(maxSize: 1 << 20) }
            if context.emulator != nil {
                // fake-gcs-server ignores the generation of a DELETE and deletes the live object.
                await expectNotFound { try await missing.delete() }
            }
            #expect(try await ref.data(maxSize: 1 << 20) == two, "the live object is still there")
            #expect(try await old.data(maxSize: 1 << 20) == one)

        case .patchesANoncurrentGenerationWithPreconditions:
            var update = StorageMetadataUpdate()
            update.customMetadata["note"] = .set("old")
            let patched = try await old.updateMetadata(
                update, preconditions: StoragePreconditions(ifMetagenerationMatch: 1))
            #expect(patched.generation == first && patched.metageneration == 2)
            #expect(patched.customMetadata == ["version": "1", "note": "old"])
            // The condition is judged against the generation addressed, now at metageneration 2.
            let refused = await #expect(throws: StorageError.self) {
                try await old.updateMetadata(update, preconditions: StoragePreconditions(ifMetagenerationMatch: 1))
            }
            #expect(refused?.code == .preconditionFailed)
            let live = try await ref.getMetadata()
            #expect(live.metageneration == 1 && live.customMetadata.isEmpty)

        case .copiesMovesAndComposesFromANoncurrentGeneration:
            let copy = storage.reference(withPath: "copy.json")
            let copied = try await old.copy(to: copy)
            #expect(copied.size == Int64(one.count))
            #expect(try await copy.data(maxSize: 1 << 20) == one)
            #expect(
                context.recorder.sent.contains {
                    $0.url.absoluteString.contains("/rewriteTo/")
                        && $0.url.absoluteString.contains("sourceGeneration=\(first)")
                })
            let whole = storage.reference(withPath: "whole.bin")
            _ = try await whole.compose(from: [old, ref])
            #expect(try await whole.data(maxSize: 1 << 20) == one + two)
            let moved = storage.reference(withPath: "moved.json")
            _ = try await old.move(to: moved)
            #expect(try await moved.data(maxSize: 1 << 20) == one)
            await expectNotFound { _ = try await old.getMetadata() }
            #expect(try await ref.data(maxSize: 1 << 20) == two, "moving a noncurrent generation leaves the live one")
            // Writing to a pinned reference would need an old generation to be written again.
            let pinned = ref.atGeneration(second)
            await expectRefusedWrite(context) { _ = try await copy.copy(to: pinned) }
            await expectRefusedWrite(context) { _ = try await pinned.putDataAsync(one) }
            await expectRefusedWrite(context) { _ = try await pinned.compose(from: [copy]) }
            await expectRefusedWrite(context) { _ = try await copy.move(to: pinned) }

        case .aResumedDownloadKeepsAskingForItsGeneration:
            let emulator = try #require(context.emulator)
            let plan = try emulator.installFaultPlan(["reset-after-16K", "pass"])
            // Media downloads from now on opt into the plan.
            context.recorder.rewrite { request in
                if request.url.query?.contains("alt=media") == true { request.headers.set("x-emulator-faults", plan) }
            }
            #expect(try await old.data(maxSize: 1 << 20) == one)
            let media = context.recorder.sent.filter { $0.url.absoluteString.contains("alt=media") }
            #expect(media.count == 2, "\(media)")
            #expect(
                media.allSatisfy {
                    $0.url.absoluteString.contains("generation=\(first)")
                        && !$0.url.absoluteString.contains("ifGeneration")
                })
            #expect(
                media.last?.header("Range")?.hasPrefix("bytes=") == true && media.last?.header("Range") != "bytes=0-")

        case .aSignedURLServesItsGeneration:
            let signer = try SignedURLEmulatorTests.keySigner()
            let url = try await old.signedURL(expiresIn: .seconds(600), signer: signer)
            #expect(url.query?.contains("generation=\(first)") == true)
            let served = try await TestSupport.send("GET", url)
            #expect(served.status == 200 && served.body == one)
            let missing = try await ref.atGeneration(second + 1000).signedURL(expiresIn: .seconds(600), signer: signer)
            #expect(
                try await TestSupport.send("GET", missing).status == 404, "never the live object instead")
        }
    }
}
