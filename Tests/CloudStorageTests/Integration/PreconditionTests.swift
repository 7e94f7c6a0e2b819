import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

/// ``StoragePreconditions`` on uploads, metadata updates, deletes and downloads
/// against the emulator (strict like Cloud Storage): each condition that holds
/// lets the request through, each that fails ends it with
/// ``StorageErrorCode/preconditionFailed`` and leaves the object as it was.
/// Requests are seen through a transport that records them (and can act just
/// before one goes out, to play another writer at an exact moment).
@Suite("Preconditions", .timeLimit(.minutes(10)))
struct PreconditionTests {
    static let bucket = "preconditions"

    static func storage(
        _ emulator: StorageEmulator, _ route: TestRoute, _ transport: TestTransport? = nil,
        firebase: Bool = false, configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(5))
            try $0.retry.setMaxDelay(.milliseconds(40))
            try configure(&$0)
        }
        let endpoint: StorageEndpoint = firebase ? .firebase(emulator.baseURL) : .gcs(emulator.baseURL)
        return Storage(
            bucket: bucket, endpoint: endpoint, authorization: firebase ? .emulatorOwner : .none,
            configuration: configuration, transport: transport ?? route.makeTransport(for: endpoint))
    }

    static func withEmulator(
        _ route: TestRoute, faults: [String] = [], _ body: (StorageEmulator) async throws -> Void
    ) async throws {
        let emulator = try route.startEmulator { $0.faults = faults }
        defer { emulator.stop() }
        try emulator.createBucket(bucket)
        try await body(emulator)
    }

    // MARK: Uploads

    @Test(arguments: TestRoute.all, [false, true])
    func createOnlyIfAbsentSucceedsOnceThenFails(route: TestRoute, resumable: Bool) async throws {
        try await Self.withEmulator(route) { emulator in
            let storage = Self.storage(emulator, route) { configuration in
                if resumable { configuration.uploads.multipartThreshold = 0 }
            }
            let ref = storage.reference(withPath: "once.txt")
            let first = Data("first".utf8)
            let created = try await ref.putDataAsync(first, preconditions: .doesNotExist)
            #expect(created.generation != nil)

            let error = await #expect(throws: StorageError.self) {
                try await ref.putDataAsync(Data("second".utf8), preconditions: .doesNotExist)
            }
            #expect(error?.code == .preconditionFailed)
            #expect(error?.httpStatus == 412)
            #expect(try await ref.data(maxSize: 100) == first, "the object keeps the first bytes")
            #expect(try await ref.getMetadata().generation == created.generation)

            // Replacing the generation one has seen works; a stale one no longer does.
            let replaced = try await ref.putDataAsync(
                Data("third".utf8), preconditions: StoragePreconditions(ifGenerationMatch: created.generation))
            #expect(replaced.generation != created.generation)
            let stale = await #expect(throws: StorageError.self) {
                try await ref.putDataAsync(
                    Data("fourth".utf8), preconditions: StoragePreconditions(ifGenerationMatch: created.generation))
            }
            #expect(stale?.code == .preconditionFailed)
            #expect(try await ref.data(maxSize: 100) == Data("third".utf8))
        }
    }

    @Test(arguments: TestRoute.all)
    func aFailureOnTheFinalChunkEndsTheUploadWithoutARetry(route: TestRoute) async throws {
        try await Self.withEmulator(route) { emulator in
            let other = Self.storage(emulator, route).reference(withPath: "race.bin")
            let theirs = Data("another writer".utf8)
            let payload = TestSupport.payload(size: 600 * 1024, seed: 41)
            // Just before the request that finalizes goes out, another writer creates the object:
            // the session started while it was absent, so only the final check can catch it.
            let recorder = TestTransport(wrapping: route.makeTransport(for: .gcs(emulator.baseURL)))
            recorder.rewrite { request in
                guard request.method == "PUT", let range = request.headers["Content-Range"],
                    range.hasSuffix("/\(payload.count)")
                else { return }
                _ = try? await other.putDataAsync(theirs)
            }
            let storage = Self.storage(emulator, route, recorder) { configuration in
                configuration.uploads.multipartThreshold = 0
                try? configuration.uploads.setChunkSize(256 * 1024)
            }
            let error = await #expect(throws: StorageError.self) {
                try await storage.reference(withPath: "race.bin").putDataAsync(payload, preconditions: .doesNotExist)
            }
            #expect(error?.code == .preconditionFailed)
            let sent = recorder.sent
            let finals = sent.filter {
                $0.method == "PUT" && $0.header("Content-Range")?.hasSuffix("/\(payload.count)") == true
            }
            #expect(finals.count == 1, "the refused final request is not sent again")
            #expect(finals.first?.status == 412)
            let puts = sent.filter { $0.method == "PUT" }
            #expect(puts.count == 3, "two 256 KiB chunks and the final one: \(sent.map(\.description))")
            #expect(
                sent.first?.url.absoluteString.contains("ifGenerationMatch=0") == true, "the session start carries it")
            let kept = try await other.data(maxSize: 100)
            #expect(kept == theirs, "the other writer's object stays")
        }
    }

    // MARK: Metadata updates and deletes

    @Test(arguments: TestRoute.all)
    func aMetadataUpdateWithAStaleMetagenerationFails(route: TestRoute) async throws {
        try await Self.withEmulator(route) { emulator in
            let ref = Self.storage(emulator, route).reference(withPath: "meta.txt")
            let stored = try await ref.putDataAsync(Data("m".utf8))
            let seen = try #require(stored.metageneration)
            var update = StorageMetadataUpdate()
            update.cacheControl = .set("no-store")
            let updated = try await ref.updateMetadata(
                update, preconditions: StoragePreconditions(ifMetagenerationMatch: seen))
            #expect(updated.metageneration == seen + 1)
            #expect(updated.cacheControl == "no-store")

            update.cacheControl = .set("public")
            let error = await #expect(throws: StorageError.self) {
                try await ref.updateMetadata(update, preconditions: StoragePreconditions(ifMetagenerationMatch: seen))
            }
            #expect(error?.code == .preconditionFailed)
            let now = try await ref.getMetadata()
            #expect(now.cacheControl == "no-store", "the refused update changed nothing")
            #expect(now.metageneration == seen + 1)

            // An update naming nothing checks the conditions without a PATCH (which would bump it).
            let empty = await #expect(throws: StorageError.self) {
                try await ref.updateMetadata(
                    StorageMetadataUpdate(), preconditions: StoragePreconditions(ifMetagenerationMatch: seen))
            }
            #expect(empty?.code == .preconditionFailed)
            let unchanged = try await ref.updateMetadata(
                StorageMetadataUpdate(), preconditions: StoragePreconditions(ifMetagenerationMatch: seen + 1))
            #expect(unchanged.metageneration == seen + 1)

            let notMatch = await #expect(throws: StorageError.self) {
                try await ref.updateMetadata(
                    update, preconditions: StoragePreconditions(ifMetagenerationNotMatch: seen + 1))
            }
            #expect(notMatch?.code == .preconditionFailed)
            let wrongGeneration = await #expect(throws: StorageError.self) {
                try await ref.updateMetadata(
                    update, preconditions: StoragePreconditions(ifGenerationMatch: (stored.generation ?? 0) + 1))
            }
            #expect(wrongGeneration?.code == .preconditionFailed)
        }
    }

    @Test(arguments: TestRoute.all)
    func aDeleteWithAWrongGenerationFailsAndTheObjectStays(route: TestRoute) async throws {
        try await Self.withEmulator(route) { emulator in
            let ref = Self.storage(emulator, route).reference(withPath: "keep.txt")
            let stored = try await ref.putDataAsync(Data("keep".utf8))
            let generation = try #require(stored.generation)
            for wrong in [
                StoragePreconditions(ifGenerationMatch: generation + 1),
                StoragePreconditions(ifGenerationNotMatch: generation),
                StoragePreconditions(ifMetagenerationMatch: 2),
            ] {
                let error = await #expect(throws: StorageError.self) { try await ref.delete(preconditions: wrong) }
                #expect(error?.code == .preconditionFailed, "\(wrong)")
                #expect(try await ref.data(maxSize: 100) == Data("keep".utf8), "the object stays")
            }
            try await ref.delete(preconditions: StoragePreconditions(ifGenerationMatch: generation))
            let gone = await #expect(throws: StorageError.self) { try await ref.getMetadata() }
            #expect(gone?.code == .objectNotFound)
        }
    }

    // MARK: Downloads

    @Test(arguments: TestRoute.all)
    func aDownloadWithAWrongGenerationFails(route: TestRoute) async throws {
        try await Self.withEmulator(route) { emulator in
            let ref = Self.storage(emulator, route).reference(withPath: "read.txt")
            let stored = try await ref.putDataAsync(Data("read me".utf8))
            let generation = try #require(stored.generation)
            #expect(
                try await ref.data(maxSize: 100, preconditions: StoragePreconditions(ifGenerationMatch: generation))
                    == Data("read me".utf8))
            let wrong = await #expect(throws: StorageError.self) {
                try await ref.data(maxSize: 100, preconditions: StoragePreconditions(ifGenerationMatch: generation + 1))
            }
            #expect(wrong?.code == .preconditionFailed)
            #expect(wrong?.httpStatus == 412)
            // Cloud Storage answers a read whose "not match" fails with 304 Not Modified.
            let unchanged = await #expect(throws: StorageError.self) {
                try await ref.data(maxSize: 100, preconditions: StoragePreconditions(ifGenerationNotMatch: generation))
            }
            #expect(unchanged?.code == .preconditionFailed)
            #expect(unchanged?.httpStatus == 304)

            let directory = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let target = directory.appendingPathComponent("read.txt")
            let file = await #expect(throws: StorageError.self) {
                try await ref.writeAsync(
                    toFile: target, preconditions: StoragePreconditions(ifMetagenerationMatch: 7))
            }
            #expect(file?.code == .preconditionFailed)
            #expect(!FileManager.default.fileExists(atPath: target.path))
        }
    }

    /// Streams and ranged reads take the same conditions: the right generation reads, a wrong
    /// one fails with `preconditionFailed` before any byte is handed on.
    @Test(arguments: TestRoute.all)
    func streamsAndRangedReadsHonourPreconditions(route: TestRoute) async throws {
        try await Self.withEmulator(route) { emulator in
            let ref = Self.storage(emulator, route).reference(withPath: "streamed.txt")
            let stored = try await ref.putDataAsync(Data("stream me".utf8))
            let generation = try #require(stored.generation)
            let right = StoragePreconditions(ifGenerationMatch: generation)
            let wrong = StoragePreconditions(ifGenerationMatch: generation + 1)

            var streamed = Data()
            for try await chunk in ref.dataStream(preconditions: right) { streamed.append(chunk) }
            #expect(streamed == Data("stream me".utf8))
            let ranged = try await ref.data(maxSize: 100, range: 7..., preconditions: right)
            #expect(ranged == Data("me".utf8))

            var handedOn = 0
            let fromStream = await #expect(throws: StorageError.self) {
                for try await chunk in ref.dataStream(preconditions: wrong) { handedOn += chunk.count }
            }
            #expect(fromStream?.code == .preconditionFailed)
            #expect(handedOn == 0)
            let fromRangedStream = await #expect(throws: StorageError.self) {
                for try await _ in ref.dataStream(range: 0..<4, preconditions: wrong) {}
            }
            #expect(fromRangedStream?.code == .preconditionFailed)
            let fromRangedRead = await #expect(throws: StorageError.self) {
                try await ref.data(maxSize: 100, range: 0..<4, preconditions: wrong)
            }
            #expect(fromRangedRead?.code == .preconditionFailed)
        }
    }

    /// A download paused mid-body continues with a `Range` pinned to the generation it
    /// started with; when the object was replaced meanwhile, the server refuses the pinned
    /// request and the download starts over with the new object, never mixing the two.
    @Test(arguments: TestRoute.all)
    func aResumedDownloadIsPinnedToTheGenerationItStartedWith(route: TestRoute) async throws {
        // The upload passes; the first GET sends 300,000 bytes, then holds until the client lets go.
        try await Self.withEmulator(route, faults: ["pass", "stall-after-300000"]) { emulator in
            let recorder = TestTransport(wrapping: route.makeTransport(for: .gcs(emulator.baseURL)))
            let storage = Self.storage(emulator, route, recorder)
            let ref = storage.reference(withPath: "moving.bin")
            let old = TestSupport.payload(size: 1 * .mebibyte, seed: 42)
            let new = TestSupport.payload(size: 700_000, seed: 43)
            let first = try await ref.putDataAsync(old)
            let generation = try #require(first.generation)

            let task = ref.getData(maxSize: 2 * 1024 * 1024)
            for await snapshot in task.snapshots
            where snapshot.status == .progress && snapshot.progress.completedUnitCount > 0 {
                await task.pause()
                break
            }
            _ = try await ref.putDataAsync(new)
            await task.resume()
            #expect(try await task.value == new, "the new object, whole, not the old one's head on its tail")

            let gets = recorder.sent.filter { $0.method == "GET" }
            let resumed = try #require(gets.first { $0.header("Range") != nil }, "the resumed request asks for a range")
            #expect(resumed.url.absoluteString.contains("ifGenerationMatch=\(generation)"), "\(resumed.url)")
            #expect(resumed.status == 412)
            #expect(gets.last?.header("Range") == nil, "after the refusal it starts over from the first byte")
        }
    }

    // MARK: fake-gcs-server

    /// fake-gcs-server (the version the tests install) checks `ifGenerationMatch` and
    /// `ifGenerationNotMatch` on multipart uploads only (it ignores them on media and
    /// resumable uploads, PATCH, DELETE and GET), so only create-only-if-absent of a small
    /// object, which the SDK sends as one multipart request, is compared with it.
    @Test(arguments: TestRoute.all)
    func fakeGCSServerRefusesASecondCreateOnlyIfAbsent(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "pre", route: route)
        let ref = storage.reference(withPath: "once.txt")
        let created = try await ref.putDataAsync(Data("first".utf8), preconditions: .doesNotExist)
        let error = await #expect(throws: StorageError.self) {
            try await ref.putDataAsync(Data("second".utf8), preconditions: .doesNotExist)
        }
        #expect(error?.code == .preconditionFailed)
        #expect(try await ref.data(maxSize: 100) == Data("first".utf8))
        let replaced = try await ref.putDataAsync(
            Data("third".utf8), preconditions: StoragePreconditions(ifGenerationMatch: created.generation))
        #expect(replaced.size == 5)
        #expect(try await ref.data(maxSize: 100) == Data("third".utf8))
    }

    // MARK: Firebase

    @Test(arguments: TestRoute.plain)
    func firebaseRefusesPreconditionsBeforeAnyRequest(route: TestRoute) async throws {
        try await Self.withEmulator(route) { emulator in
            let recorder = TestTransport(wrapping: route.makeTransport(for: .firebase(emulator.baseURL)))
            let storage = Self.storage(emulator, route, recorder, firebase: true)
            let ref = storage.reference(withPath: "fb.txt")
            let conditions = StoragePreconditions(ifGenerationMatch: 1)
            var errors: [StorageError?] = []
            errors.append(
                await #expect(throws: StorageError.self) {
                    try await ref.putDataAsync(Data("x".utf8), preconditions: .doesNotExist)
                })
            errors.append(
                await #expect(throws: StorageError.self) {
                    try await ref.updateMetadata(StorageMetadataUpdate(), preconditions: conditions)
                })
            errors.append(await #expect(throws: StorageError.self) { try await ref.delete(preconditions: conditions) })
            errors.append(
                await #expect(throws: StorageError.self) { try await ref.data(maxSize: 10, preconditions: conditions) })
            #expect(errors.allSatisfy { $0?.code == .invalidArgument }, "\(errors)")
            #expect(recorder.sent.isEmpty, "nothing was sent: \(recorder.sent.map(\.description))")
        }
    }

    @Test func everyConditionalGCSRequestCarriesTheFourQueryParameters() {
        let gcs = GCSJSONProtocol(baseURL: URL(string: "https://example.test")!)
        let conditions = StoragePreconditions(
            ifGenerationMatch: 0, ifGenerationNotMatch: 12, ifMetagenerationMatch: 3, ifMetagenerationNotMatch: 4)
        var upload = UploadDescription(
            bucket: "b", objectName: "o", metadata: StorageMetadata(), contentType: "text/plain", size: 1, crc32c: nil)
        upload.preconditions = conditions
        let requests = [
            gcs.singleRequestUpload(upload, body: .data(Data("x".utf8))), gcs.startSession(upload),
            gcs.updateMetadata(bucket: "b", name: "o", StorageMetadataUpdate(), preconditions: conditions),
            gcs.delete(bucket: "b", name: "o", preconditions: conditions),
            gcs.media(bucket: "b", name: "o", MediaRead(offset: 5), preconditions: conditions),
        ]
        for request in requests {
            let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let query = Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
            #expect(query["ifGenerationMatch"] == "0", "\(request.method) \(request.url)")
            #expect(query["ifGenerationNotMatch"] == "12")
            #expect(query["ifMetagenerationMatch"] == "3")
            #expect(query["ifMetagenerationNotMatch"] == "4")
        }
        // Without conditions, nothing is added.
        #expect(!gcs.delete(bucket: "b", name: "o").url.absoluteString.contains("if"))
    }

    @Test func negativeNumbersAreRefusedBeforeAnyRequest() async throws {
        let endpoint = StorageEndpoint.gcs(URL(string: "http://127.0.0.1:9")!)
        let recorder = TestTransport(wrapping: TestRoute.nativeHTTP.makeTransport(for: endpoint))
        let storage = Storage(
            bucket: "b", endpoint: endpoint, authorization: .none, configuration: StorageConfiguration(),
            transport: recorder)
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").delete(
                preconditions: StoragePreconditions(ifGenerationMatch: -1))
        }
        #expect(error?.code == .invalidArgument)
        #expect(recorder.sent.isEmpty)
    }
}
