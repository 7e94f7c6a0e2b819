import FakeGCSServer
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs the documentation's examples that are safe to run, and checks that
/// they do what the prose around them says.
///
/// The examples come from DocumentationSnippets.swift (so they are exactly the
/// documented code). Those that name no server run offline; those that take a
/// `Storage` run against fake-gcs-server, on each route (``TestRoute``; the
/// offline one and the Emulators article's plain-HTTP emulator on the plain
/// ones). Examples with fixed addresses, credentials or files outside the
/// test's control are only compiled.
@Suite("Documentation examples", .timeLimit(.minutes(10)))
struct DocumentationExampleTests {
    /// The bucket the Getting Started article uses.
    static let articleStorage = Storage(bucket: "my-project.appspot.com")

    @Test func referenceExamplesHoldTheirAssertions() throws {
        // These examples `assert` what their comments claim; debug builds check it.
        DocumentationSnippets.gettingStartedReferences(storage: Self.articleStorage)
        DocumentationSnippets.gettingStartedNavigation(
            spaceRef: Self.articleStorage.reference(withPath: "images/space.jpg")
        )
        try DocumentationSnippets.gettingStartedReferencesFromURLs(storage: Self.articleStorage)

        // And the claims of the prose around them.
        let spaceRef = Self.articleStorage.reference().child("images").child("space.jpg")
        #expect(spaceRef.fullPath == "images/space.jpg")
        #expect(spaceRef.name == "space.jpg")
        #expect(spaceRef.bucket == "my-project.appspot.com")
        #expect(spaceRef.description == "gs://my-project.appspot.com/images/space.jpg")
        #expect(Self.articleStorage.reference().child("/images//space.jpg/") == spaceRef)
        #expect(spaceRef.child("") == spaceRef)
        #expect(try Self.articleStorage.reference(forURL: spaceRef.description) == spaceRef)
        #expect(throws: StorageError.self) { try Self.articleStorage.reference(forURL: "gs://another-bucket/a") }
    }

    @Test(arguments: TestRoute.plain)
    func thePathRulesExampleFailsWithPathErrorBeforeAnyRequest(route: TestRoute) async {
        // Nothing listens at this address: a request would fail differently.
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        let offline = Storage(
            bucket: "b", endpoint: .gcs(URL(string: "http://127.0.0.1:9")!), configuration: configuration)
        await DocumentationSnippets.gettingStartedPathRules(storage: offline)
        let error = await #expect(throws: StorageError.self) {
            try await offline.reference(withPath: "notes/two\nlines.txt").putDataAsync(Data("hello".utf8))
        }
        #expect(error?.code == .pathError)
        for path in [String(repeating: "é", count: 512), "a#b[c]*?"] {
            // 1024 bytes and the discouraged characters are allowed: the upload
            // gets as far as the network, where nothing answers.
            let other = await #expect(throws: StorageError.self) {
                try await Self.quickFailing(offline).reference(withPath: path).putDataAsync(Data("x".utf8))
            }
            #expect(other?.code != .pathError)
        }
    }

    /// `storage` with retries cut short, so an unreachable server fails fast.
    static func quickFailing(_ storage: Storage) -> Storage {
        var configuration = storage.configuration
        configuration.applyForTest {
            try $0.retry.setMaxUploadTime(.milliseconds(1))
        }
        return Storage(bucket: storage.bucket, endpoint: storage.endpoint, configuration: configuration)
    }

    @Test(arguments: TestRoute.all)
    func theFirstUploadStoresWhatTheArticleSays(route: TestRoute) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "docs", route: route)
        try await DocumentationSnippets.gettingStartedFirstUpload(storage: storage)
        let stored = try StorageMetadata(
            objectResource: try await server.objectResource(bucket: storage.bucket, object: "greetings/hello.txt")
        )
        #expect(stored.size == 21)
        #expect(stored.contentType == "text/plain")
    }

    @Test(arguments: TestRoute.all)
    func uploadExamplesStoreTheirObjects(route: TestRoute) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "docs", route: route)
        let imageData = TestSupport.payload(size: 300 * .kibibyte, seed: 41)
        try await DocumentationSnippets.uploadingData(storage: storage, imageData: imageData)
        try await TestSupport.expectStored(imageData, at: "images/space.jpg", in: storage, server: server)

        try await DocumentationSnippets.uploadingWithMetadata(
            spaceRef: storage.reference(withPath: "images/with-metadata.jpg"),
            imageData: imageData
        )
        let resource = try StorageMetadata(
            objectResource: try await server.objectResource(bucket: storage.bucket, object: "images/with-metadata.jpg")
        )
        #expect(resource.contentType == "image/jpeg")
        #expect(resource.cacheControl == "public, max-age=3600")
        #expect(resource.customMetadata == ["camera": "X100V", "location": "Yosemite"])
    }

    @Test(arguments: TestRoute.all)
    func theProgressLoopsEndWhenTheUploadEnds(route: TestRoute) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "docs", route: route)
        let video = TestSupport.payload(size: 9 * .mebibyte, seed: 42)  // above the one-request threshold
        let videoURL = try TestSupport.file(named: "launch.mp4", containing: video)
        defer { try? FileManager.default.removeItem(at: videoURL.deletingLastPathComponent()) }
        await DocumentationSnippets.uploadingWatchProgress(storage: storage, videoURL: videoURL)
        // The loop returned, so the upload has ended: the object must be there.
        try await TestSupport.expectStored(video, at: "videos/launch.mp4", in: storage, server: server)
        await DocumentationSnippets.readmeProgress(storage: storage, videoURL: videoURL)
        let resource = try StorageMetadata(
            objectResource: try await server.objectResource(bucket: storage.bucket, object: "videos/launch.mp4")
        )
        #expect(resource.contentType == "video/mp4")
    }

    @Test(arguments: TestRoute.all)
    func contentTypesAreInferredAsTheArticleSays(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "docs", route: route)
        let archive = try TestSupport.file(named: "photos-2026.tar.gz", containing: Data("x".utf8))
        defer { try? FileManager.default.removeItem(at: archive.deletingLastPathComponent()) }
        let fromFile = try await storage.reference(withPath: "backups/photos-2026.tar.gz").putFileAsync(from: archive)
        #expect(fromFile.contentType == "application/gzip")
        // putData infers nothing, even from a telling object path.
        let fromData = try await storage.reference(withPath: "images/space.jpg").putDataAsync(Data("x".utf8))
        #expect(fromData.contentType == "application/octet-stream")
    }

    @Test(arguments: TestRoute.all)
    func theErrorHandlingExampleHandlesAMissingFile(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "docs", route: route)
        let missing = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/report.pdf")
        let ref = storage.reference(withPath: "reports/q3.pdf")
        // The example catches every error itself; it must return, not throw or hang.
        await DocumentationSnippets.uploadingHandleErrors(ref: ref, fileURL: missing)
        await DocumentationSnippets.readmeErrorHandling(storage: storage, reportURL: missing)
        let error = await #expect(throws: StorageError.self) { try await ref.putFileAsync(from: missing) }
        #expect(error?.code == .unreadableFile)
    }

    @Test(arguments: TestRoute.all)
    func anUploadAtMostTheThresholdHasNoSessionAndStillPausesAndResumes(route: TestRoute) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "docs", route: route)
        let payload = TestSupport.payload(size: Int(StorageConfiguration().uploads.multipartThreshold), seed: 43)
        let ref = storage.reference(withPath: "paused/threshold.bin")
        let task = ref.putData(payload)
        await task.pause()
        #expect(task.snapshot.status == .pause)
        await task.resume()
        _ = try await task.value
        try await TestSupport.expectStored(payload, at: ref.fullPath, in: storage, server: server)
    }

    // MARK: The Emulators article

    @Test func theEmulatorExamplesRunAsTheArticleSays() async throws {
        try await DocumentationSnippets.emulatorInTests()
        try await DocumentationSnippets.emulatorRandomFaults()
    }

    @Test(arguments: TestRoute.plain)
    func theConfiguredEmulatorWantsItsTokenAndKnownBucketsAndFailsOnce(route: TestRoute) async throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let emulator = try DocumentationSnippets.emulatorConfiguration(objectsDirectory: directory)
        defer { emulator.stop() }
        var settings = StorageConfiguration()
        try settings.retry.setInitialDelay(.milliseconds(10))
        route.apply(to: &settings)
        func upload(bucket: String, _ authorization: StorageAuthorization) async throws(StorageError) -> StorageMetadata
        {
            try await Storage.gcsEmulator(
                bucket: bucket, baseURL: emulator.baseURL, authorization: authorization, configuration: settings
            ).reference(withPath: "a.txt").putDataAsync(Data("abc".utf8), preconditions: .doesNotExist)
        }
        // The first request gets the planned 503 and, idempotent under its precondition, is retried.
        #expect(try await upload(bucket: "test-bucket", .bearerToken("s3cret")).size == 3)
        let anonymous = await #expect(throws: StorageError.self) { try await upload(bucket: "test-bucket", .none) }
        #expect(anonymous?.code == .unauthenticated)
        let unknown = await #expect(throws: StorageError.self) {
            try await upload(bucket: "unknown-bucket", .bearerToken("s3cret"))
        }
        #expect(unknown?.code == .bucketNotFound)
    }

    @Test func aPlanInstalledByIDAppliesOnlyToRequestsThatNameIt() async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        try emulator.createBucket("test-bucket")
        let request = try DocumentationSnippets.emulatorFaultPlanByID(emulator: emulator)
        let plain = URLRequest(url: request.url!)
        let (_, before) = try await URLSession.shared.data(for: plain)
        #expect((before as? HTTPURLResponse)?.statusCode == 200)
        // Requests that name the plan consume it in order, then pass; others are never affected.
        for expected in [429, 503, 200] {
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == expected)
            let (_, unaffected) = try await URLSession.shared.data(for: plain)
            #expect((unaffected as? HTTPURLResponse)?.statusCode == 200)
        }
        var unknown = plain
        unknown.setValue("plan-unknown", forHTTPHeaderField: "x-emulator-faults")
        let (_, refused) = try await URLSession.shared.data(for: unknown)
        #expect((refused as? HTTPURLResponse)?.statusCode == 400)
    }
}
