import Foundation
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import CloudStorageCLI
@testable import HTTPClient

/// Per-request options (``StorageRequestOptions``) against the built-in emulator, which checks
/// each as Cloud Storage does: requester pays, customer-supplied keys, KMS keys, storage classes,
/// predefined ACLs, extra headers, per-call retry rules, and Firebase App Check.
@Suite("Request options", .timeLimit(.minutes(10)))
struct RequestOptionsTests {
    /// Every request a `Storage` sends, as it went out.
    final class Captured: Sendable {
        let requests = Mutex<[HTTPRequest]>([])
        var all: [HTTPRequest] { requests.withLock { $0 } }
    }

    /// A `Storage` on `emulator` whose requests are recorded in `captured`.
    static func storage(
        _ emulator: StorageEmulator, firebase: Bool = false, captured: Captured = Captured(),
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        let endpoint: StorageEndpoint = firebase ? .firebase(emulator.baseURL) : .gcs(emulator.baseURL)
        var configuration = StorageConfiguration()
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(20))
            try configure(&$0)
        }
        let inner = configuration.transport.transport(for: endpoint, configuration: configuration)
        let recorder = TestTransport(wrapping: inner)
        recorder.rewrite { request in
            captured.requests.withLock { $0.append(request) }
        }
        return Storage(
            bucket: TestSupport.bucketName("opts"), endpoint: endpoint,
            authorization: firebase ? .emulatorOwner : .none, configuration: configuration, transport: recorder)
    }

    static let key = testKey(first: 0)
    static let otherKey = testKey(first: 100)

    /// A key of 32 consecutive byte values from `first`.
    static func testKey(first: UInt8) -> StorageEncryptionKey {
        do {
            return try StorageEncryptionKey(bytes: (0..<32).map { first &+ UInt8($0) })
        } catch {
            preconditionFailure("32 bytes make a key: \(error)")
        }
    }

    /// A payload of `count` bytes that is not all one value.
    static func payload(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }) }

    // MARK: The options value

    @Test func overridesWinFieldByFieldAndHeadersMergeByName() throws {
        let defaults = StorageRequestOptions(
            userProject: "billing", kmsKeyName: "k1", headers: ["X-Trace": "a", "X-Keep": "b"])
        let merged = defaults.merging(.init(kmsKeyName: "k2", headers: ["x-trace": "c"]))
        #expect(merged.userProject == "billing")
        #expect(merged.kmsKeyName == "k2")
        #expect(merged.headers == ["x-trace": "c", "X-Keep": "b"])
        let storage = Storage(bucket: "b").with(defaults)
        var quick = StorageConfiguration.Retry()
        try quick.setMaxOperationTime(.seconds(3))
        let reference = storage.reference(withPath: "a").with(.init(retry: quick))
        #expect(reference.storage.options.userProject == "billing")
        #expect(reference.storage.configuration.retry == quick)
        #expect(storage.configuration.retry == StorageConfiguration.Retry(), "the original handle is unchanged")
        #expect(storage.bucket("other").options.userProject == "billing", "another bucket keeps the options")
    }

    @Test func aKeyMustHave32Bytes() throws {
        for count in [0, 16, 31, 33, 64] {
            do {
                _ = try StorageEncryptionKey(bytes: [UInt8](repeating: 1, count: count))
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains("32 bytes"))
                continue
            }
            Issue.record("a key of \(count) bytes was accepted")
        }
        #expect((try? StorageEncryptionKey(base64: "not base64!")) == nil)
        #expect(try StorageEncryptionKey(base64: Self.key.base64) == Self.key)
    }

    @Test func keyMaterialNeverShows() throws {
        let secret = Self.key.base64
        let options = StorageRequestOptions(encryptionKey: Self.key, headers: ["X-Secret": "header-value"])
        let storage = Storage(bucket: "b").with(options)
        var dumped = ""
        dump(storage, to: &dumped)
        var dumpedKey = ""
        dump(Self.key, to: &dumpedKey)
        let texts = [
            "\(Self.key)", String(reflecting: Self.key), "\(options)", String(reflecting: options), dumped, dumpedKey,
            "\(storage.reference(withPath: "x").with(options))",
        ]
        for text in texts {
            #expect(!text.contains(secret), "\(text)")
            #expect(!text.contains("header-value"), "\(text)")
        }
        #expect("\(Self.key)".contains(Self.key.sha256))
        #expect(dumped.contains(Self.key.sha256))
        // The transport shows by its type: its live state (connections, locks) is never walked,
        // which would race with its threads (it once crashed this test).
        #expect(dumped.contains("transport: \"") && !dumped.contains("Mutex"), "\(dumped)")
    }

    @Test func reservedAndMalformedExtraHeadersAreRefusedBeforeAnythingIsSent() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let captured = Captured()
        let ref = Self.storage(emulator, captured: captured).reference(withPath: "h.txt")
        for headers in [
            ["Authorization": "Bearer stolen"], ["host": "elsewhere"], ["Content-Length": "1"],
            ["Transfer-Encoding": "chunked"], ["x-goog-encryption-key": "AAAA"], ["X-Firebase-AppCheck": "t"],
            ["Bad Name": "v"], ["X-Split": "a\r\nInjected: yes"],
        ] {
            await #expect(throws: StorageError.self) { _ = try await ref.with(.init(headers: headers)).getMetadata() }
            do {
                _ = try await ref.with(.init(headers: headers)).getMetadata()
            } catch {
                #expect(error.code == .invalidArgument, "\(headers.keys)")
            }
        }
        #expect(captured.all.isEmpty)
    }

    // MARK: userProject and requester pays

    @Test func aRequesterPaysBucketNeedsUserProjectOnEveryCall() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let captured = Captured()
        let storage = Self.storage(emulator, captured: captured) {
            $0.uploads.multipartThreshold = 256 * 1024
            try $0.uploads.setChunkSize(256 * 1024)
        }
        // The bucket exists once something is stored in it; then it becomes requester-pays.
        _ = try await storage.reference(withPath: "seed").putDataAsync(Data("seed".utf8))
        try await Self.setRequesterPays(storage, emulator)
        let plain = storage.reference(withPath: "seed")
        do {
            _ = try await plain.getMetadata()
            Issue.record("a requester-pays bucket answered without userProject")
        } catch {
            #expect(error.httpStatus == 400)
            #expect(error.serverMessage?.contains("requester pays") == true)
        }
        let billed = storage.with(.init(userProject: "my-billing-project"))
        captured.requests.withLock { $0.removeAll() }
        let big = Self.payload(600 * 1024)
        let object = billed.reference(withPath: "dir/big.bin")
        _ = try await object.putDataAsync(big)
        _ = try await billed.reference(withPath: "dir/small.txt").putDataAsync(Data("small".utf8))
        #expect(try await object.data(maxSize: 1 << 20) == big)
        #expect(try await object.getMetadata().size == Int64(big.count))
        var update = StorageMetadataUpdate()
        update.customMetadata = ["k": .set("v")]
        _ = try await object.updateMetadata(update)
        #expect(try await billed.reference(withPath: "dir").listAll().items.count == 2)
        let copy = billed.reference(withPath: "copy.bin")
        _ = try await object.copy(to: copy)
        _ = try await billed.reference(withPath: "composed.bin").compose(from: [object, copy])
        try await copy.delete()
        // Every request to the API named the project; session requests go to the URL the start got.
        let apiRequests = captured.all.filter { !$0.url.absoluteString.contains("upload_id=") }
        #expect(apiRequests.count >= 9)
        for request in apiRequests {
            #expect(
                URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems?
                    .contains(URLQueryItem(name: "userProject", value: "my-billing-project")) == true,
                "\(request.method) \(request.url.path)")
        }
        #expect(captured.all.contains { $0.url.absoluteString.contains("upload_id=") }, "a chunked session ran")

        // A copy into the requester-pays bucket from another needs the project too: the
        // destination's, when the source names none.
        let elsewhere = storage.bucket(TestSupport.bucketName("free")).reference(withPath: "free.txt")
        _ = try await elsewhere.putDataAsync(Data("free".utf8))
        do {
            _ = try await elsewhere.copy(to: storage.reference(withPath: "in.txt"))
            Issue.record("a copy into a requester-pays bucket went without userProject")
        } catch {
            #expect(error.httpStatus == 400)
        }
        _ = try await elsewhere.copy(to: billed.reference(withPath: "in.txt"))
        #expect(try await billed.reference(withPath: "in.txt").data(maxSize: 100) == Data("free".utf8))
    }

    /// Marks the storage's bucket requester-pays through the JSON API's `buckets.patch`.
    static func setRequesterPays(_ storage: Storage, _ emulator: StorageEmulator) async throws {
        var request = HTTPRequest(
            method: "PATCH", url: emulator.baseURL.appendingPathComponent("storage/v1/b/\(storage.bucket)"),
            body: .data(Data(#"{"billing":{"requesterPays":true}}"#.utf8)), isIdempotent: false)
        request.headers.set("Content-Type", "application/json")
        let response = try await storage.transport.execute(request, progress: nil)
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self).contains("requesterPays"))
    }

    // MARK: Customer-supplied encryption keys

    @Test(arguments: [100, 700 * 1024])
    func aCSEKObjectIsReadableOnlyWithItsKey(size: Int) async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let captured = Captured()
        let storage = Self.storage(emulator, captured: captured) {
            $0.uploads.multipartThreshold = 256 * 1024
            try $0.uploads.setChunkSize(256 * 1024)
        }
        let payload = Self.payload(size)
        let plain = storage.reference(withPath: "vault/secret.bin")
        let keyed = plain.with(.init(encryptionKey: Self.key))
        let stored = try await keyed.putDataAsync(payload)
        #expect(stored.customerEncryption?.keySHA256 == Self.key.sha256)
        #expect(stored.customerEncryption?.encryptionAlgorithm == "AES256")
        // Every request of the upload carried the key (each chunk too), and its digest.
        let uploads = captured.all.filter { $0.url.path.hasPrefix("/upload/") }
        #expect(!uploads.isEmpty)
        for request in uploads {
            #expect(request.headers["x-goog-encryption-key"] == Self.key.base64)
            #expect(request.headers["x-goog-encryption-key-sha256"] == Self.key.sha256)
            #expect(request.headers["x-goog-encryption-algorithm"] == "AES256")
        }
        #expect(try await keyed.data(maxSize: 1 << 20) == payload)
        let metadata = try await keyed.getMetadata()
        #expect(metadata.crc32c != nil)
        #expect(metadata.customerEncryption?.keySHA256 == Self.key.sha256)

        // Without the key: no bytes, and metadata without the hashes.
        do {
            _ = try await plain.data(maxSize: 1 << 20)
            Issue.record("a CSEK object was served without its key")
        } catch {
            #expect(error.httpStatus == 400)
            #expect(error.serverMessage?.contains("customer-supplied encryption key") == true)
        }
        let withoutKey = try await plain.getMetadata()
        #expect(withoutKey.customerEncryption?.keySHA256 == Self.key.sha256)
        #expect(withoutKey.crc32c == nil && withoutKey.md5Hash == nil)

        // With the wrong key: refused, and no key shows in the error.
        do {
            _ = try await plain.with(.init(encryptionKey: Self.otherKey)).data(maxSize: 1 << 20)
            Issue.record("a CSEK object was served with the wrong key")
        } catch {
            #expect(error.httpStatus == 400)
            #expect(error.serverMessage?.contains("incorrect") == true)
            let text = "\(error) \(String(reflecting: error))"
            #expect(!text.contains(Self.key.base64) && !text.contains(Self.otherKey.base64))
        }
    }

    @Test func aCopyReadsWithTheSourceKeyAndWritesWithTheDestinationKey() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let storage = Self.storage(emulator)
        let payload = Self.payload(3000)
        let source = storage.reference(withPath: "a.bin").with(.init(encryptionKey: Self.key))
        _ = try await source.putDataAsync(payload)
        let destination = storage.reference(withPath: "b.bin").with(.init(encryptionKey: Self.otherKey))
        // The source's key is the copy's source key: without it the copy is refused.
        do {
            _ = try await storage.reference(withPath: "a.bin").copy(to: destination)
            Issue.record("a CSEK source was copied without its key")
        } catch {
            #expect(error.httpStatus == 400)
        }
        let copied = try await source.copy(to: destination)
        #expect(copied.customerEncryption?.keySHA256 == Self.otherKey.sha256)
        #expect(try await destination.data(maxSize: 1 << 20) == payload)
        await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "b.bin").with(.init(encryptionKey: Self.key)).data(
                maxSize: 1 << 20)
        }
        // Rotated to no key at all: readable without one.
        let decrypted = try await source.copy(to: storage.reference(withPath: "c.bin"))
        #expect(decrypted.customerEncryption == nil)
        #expect(try await storage.reference(withPath: "c.bin").data(maxSize: 1 << 20) == payload)
        // A compose needs every source encrypted with the composite's key.
        let composed = try await destination.compose(from: [destination, destination])
        #expect(composed.customerEncryption?.keySHA256 == Self.otherKey.sha256)
        #expect(try await destination.data(maxSize: 1 << 20) == payload + payload)
    }

    @Test func anUploadResumedFromItsSessionCarriesTheKeyOfTheStorageItIsResumedOn() async throws {
        let chunk = 256 * 1024
        let route = Reliability.Route(wire: .gcs, via: .nativeHTTP)
        // The start and two chunks pass; the third chunk's 503 ends an upload with no retry time.
        try await Reliability.withEmulator(for: route.via, faults: ["pass", "pass", "pass", "return-503"]) {
            emulator in
            let payload = TestSupport.payload(size: 4 * chunk + 5, seed: 21)
            let file = try TestSupport.file(containing: payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let storage = Reliability.storage(route, emulator) {
                $0.uploads.multipartThreshold = -1
                try $0.uploads.setChunkSize(Int64(chunk))
                try $0.retry.setMaxUploadTime(.zero)
            }
            let keyed = StorageRequestOptions(encryptionKey: Self.key)
            let task = storage.reference(withPath: "kept/secret.bin").with(keyed).putFile(from: file)
            if case .success = await task.result() { Issue.record("the upload outlived its 503") }
            let session = try #require(task.resumableSession)
            // Resumed on a storage with the key, each chunk carries it (the emulator refuses a
            // chunk without it with 400, a final error that would delete the session).
            let plain = Reliability.storage(route, emulator)
            let metadata = try await plain.with(keyed).resumeUpload(session, from: file).value
            #expect(metadata.customerEncryption?.keySHA256 == Self.key.sha256)
            let read = try await plain.reference(withPath: "kept/secret.bin").with(keyed).data(maxSize: 1 << 21)
            #expect(read == payload)
        }
    }

    // MARK: KMS key, storage class, predefined ACL

    @Test func newObjectsKeepTheirKMSKeyAndStorageClass() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let storage = Self.storage(emulator) {
            $0.uploads.multipartThreshold = 256 * 1024
        }
        let kms = "projects/p/locations/us/keyRings/r/cryptoKeys/k"
        let options = StorageRequestOptions(kmsKeyName: kms, predefinedACL: .publicRead, storageClass: "NEARLINE")
        for size in [10, 300 * 1024] {
            let ref = storage.reference(withPath: "cold-\(size).bin").with(options)
            let stored = try await ref.putDataAsync(Self.payload(size))
            #expect(stored.kmsKeyName == kms)
            #expect(stored.storageClass == "NEARLINE")
            let read = try await ref.getMetadata()
            #expect(read.kmsKeyName == kms)
            #expect(read.storageClass == "NEARLINE")
        }
        // Metadata that names a class wins over the option.
        var metadata = StorageMetadata()
        metadata.storageClass = "COLDLINE"
        let explicit = try await storage.reference(withPath: "explicit.bin").with(options)
            .putDataAsync(Data("x".utf8), metadata: metadata)
        #expect(explicit.storageClass == "COLDLINE")
        // The destination of a copy takes the destination reference's KMS key.
        let copied = try await storage.reference(withPath: "cold-10.bin")
            .copy(to: storage.reference(withPath: "copied.bin").with(.init(kmsKeyName: kms + "2")))
        #expect(copied.kmsKeyName == kms + "2")
    }

    @Test func anUnknownPredefinedACLOrStorageClassIsRefused() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let ref = Self.storage(emulator).reference(withPath: "x.bin")
        for options in [
            StorageRequestOptions(predefinedACL: StoragePredefinedACL(rawValue: "everyone")),
            StorageRequestOptions(storageClass: "LUKEWARM"),
            StorageRequestOptions(encryptionKey: Self.key, kmsKeyName: "projects/p/keys/k"),
        ] {
            do {
                _ = try await ref.with(options).putDataAsync(Data("x".utf8))
                Issue.record("\(options) was accepted")
            } catch {
                #expect(error.httpStatus == 400, "\(error)")
            }
        }
        for acl: StoragePredefinedACL in [.private, .projectPrivate, .bucketOwnerRead, .authenticatedRead] {
            _ = try await ref.with(.init(predefinedACL: acl)).putDataAsync(Data("x".utf8))
        }
        // Copies and composes name the ACL of what they create `destinationPredefinedAcl`.
        let bogus = StorageRequestOptions(predefinedACL: StoragePredefinedACL(rawValue: "everyone"))
        let target = ref.storage.reference(withPath: "y.bin").with(bogus)
        for attempt in 0..<2 {
            do {
                _ = try await attempt == 0 ? ref.copy(to: target) : target.compose(from: [ref])
                Issue.record("a \(attempt == 0 ? "copy" : "compose") with an unknown ACL was accepted")
            } catch {
                #expect(error.httpStatus == 400, "\(error)")
            }
        }
    }

    // MARK: Extra headers, per-call retry, App Check

    @Test func extraHeadersGoWithEveryRequestButNeverReplaceTheSDKs() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let captured = Captured()
        let storage = Self.storage(emulator, captured: captured) {
            $0.uploads.multipartThreshold = 256 * 1024
            try $0.uploads.setChunkSize(256 * 1024)
        }
        let ref = storage.with(.init(headers: ["X-Request-Reason": "test", "Content-Type": "text/evil"]))
            .reference(withPath: "headers.bin")
        let payload = Self.payload(600 * 1024)
        _ = try await ref.putDataAsync(payload)
        #expect(try await ref.data(maxSize: 1 << 20) == payload)
        #expect(captured.all.count >= 5)
        for request in captured.all {
            #expect(request.headers["X-Request-Reason"] == "test", "\(request.method) \(request.url.path)")
        }
        // The session's start keeps its own content type: an extra header adds, never replaces.
        let start = captured.all.first { $0.url.query?.contains("uploadType=resumable") == true }
        #expect(start?.headers["Content-Type"] == "application/json; charset=UTF-8")
    }

    @Test func aPerCallRetryRuleReplacesTheStoragesForThatCallOnly() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let captured = Captured()
        let storage = Self.storage(emulator, captured: captured) { try $0.retry.setMaxOperationTime(.seconds(600)) }
        let ref = storage.reference(withPath: "flaky.bin")
        _ = try await ref.putDataAsync(Data("x".utf8))
        // Three 503s, then answers (a plan the extra header selects): the storage's retry time
        // outlasts them, a per-call one whose first back-off (at least its initial delay) already
        // passes its end does not.
        var quick = StorageConfiguration.Retry()
        try quick.setMaxOperationTime(.milliseconds(1))
        try quick.setInitialDelay(.milliseconds(10))
        let failures = ["return-503", "return-503", "return-503"]
        let plan = try emulator.installFaultPlan(failures)
        do {
            _ = try await ref.with(.init(retry: quick, headers: ["x-emulator-faults": plan])).getMetadata()
            Issue.record("the call outlived its retry time")
        } catch {
            #expect(error.code == .retryLimitExceeded, "\(error)")
        }
        #expect(captured.all.filter { $0.method == "GET" }.count == 1)
        let again = try emulator.installFaultPlan(failures)
        let metadata = try await ref.with(.init(headers: ["x-emulator-faults": again])).getMetadata()
        #expect(metadata.size == 1)
        #expect(captured.all.filter { $0.method == "GET" }.count == 1 + 4)
    }

    @Test(arguments: [false, true])
    func compressionAndRawDownloadsArePerCallOptions(firebase: Bool) async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let storage = Self.storage(emulator, firebase: firebase)
        let original = Data((0..<20_000).map { "line \($0)\n" }.joined().utf8)
        let ref = storage.reference(withPath: "logs/today.txt")
        let gzip = StorageRequestOptions(compression: .gzip)
        let stored = try await ref.with(gzip).putDataAsync(original)
        #expect(stored.contentEncoding == "gzip" && stored.size < Int64(original.count) / 2)
        #expect(try await ref.data(maxSize: 1 << 20) == original, "downloads decompress by default")
        let raw = try await ref.with(.init(decompressesDownloads: false)).data(maxSize: 1 << 20)
        #expect(Int64(raw.count) == stored.size && raw.starts(with: [0x1F, 0x8B]), "the stored gzip bytes")
        #expect(try await ref.data(maxSize: 1 << 20) == original, "the option held for that call only")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("opts-\(UUID().uuidString).txt")
        try original.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try await storage.reference(withPath: "logs/file.txt").with(gzip).putFileAsync(from: file)
        #expect(fromFile.contentEncoding == "gzip" && fromFile.contentType == "text/plain")
        #expect(try await storage.reference(withPath: "logs/file.txt").data(maxSize: 1 << 20) == original)

        let stream = AsyncStream<Data> { continuation in
            continuation.yield(original)
            continuation.finish()
        }
        let error = await #expect(throws: StorageError.self, "a stream is not compressed behind the caller's back") {
            _ = try await storage.reference(withPath: "logs/stream.txt").with(gzip).putStreamAsync(stream)
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test func aPerCallChunkSizeBoundsEachRequestOfThatUpload() async throws {
        let emulator = try StorageEmulator.start(.init())
        defer { emulator.stop() }
        let captured = Captured()
        let storage = Self.storage(emulator, captured: captured) { $0.uploads.multipartThreshold = 1024 }
        let payload = Self.payload(600 * 1024)
        let ref = storage.reference(withPath: "chunked.bin")
        _ = try await ref.putDataAsync(payload)
        let uploads = { captured.all.filter { $0.method == "PUT" }.count }
        #expect(uploads() == 1, "one request by default")
        _ = try await ref.with(.init(chunkSize: 256 * 1024)).putDataAsync(payload)
        #expect(uploads() == 1 + 3, "256 KiB, 256 KiB and the rest")
        #expect(try await ref.data(maxSize: 1 << 20) == payload)
        let before = captured.all.count
        let error = await #expect(throws: StorageError.self) {
            _ = try await ref.with(.init(chunkSize: 1000)).putDataAsync(payload)
        }
        #expect(error?.code == .invalidArgument && error?.message.contains("chunkSize") == true)
        #expect(captured.all.count == before, "refused before any request")
    }

    @Test func appCheckTokensAreSentAndCheckedOnFirebaseRoutes() async throws {
        var configuration = StorageEmulator.Configuration()
        configuration.appCheckToken = "app-check-ok"
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let captured = Captured()
        let storage = Self.storage(emulator, firebase: true, captured: captured)
        let ref = storage.reference(withPath: "app/check.txt")
        do {
            _ = try await ref.putDataAsync(Data("x".utf8))
            Issue.record("the emulator took a Firebase upload without App Check")
        } catch {
            #expect(error.httpStatus == 401)
        }
        let wrong = ref.with(.init(appCheckToken: { "forged" }))
        await #expect(throws: StorageError.self) { _ = try await wrong.putDataAsync(Data("x".utf8)) }
        let calls = Atomic(0)
        let checked = ref.with(
            .init(appCheckToken: {
                calls.add(1, ordering: .relaxed)
                return "app-check-ok"
            }))
        _ = try await checked.putDataAsync(Data("hello".utf8))
        #expect(try await checked.data(maxSize: 100) == Data("hello".utf8))
        #expect(calls.load(ordering: .relaxed) >= 2)
        #expect(captured.all.last?.headers["X-Firebase-AppCheck"] == "app-check-ok")

        struct NoToken: Error {}
        do {
            _ = try await ref.with(.init(appCheckToken: { throw NoToken() })).getMetadata()
            Issue.record("a failed App Check provider did not fail the call")
        } catch {
            #expect(error.code == .unauthenticated)
            #expect(error.underlyingError is NoToken)
        }
    }

    @Test func theEmulatorCommandTakesAnAppCheckToken() throws {
        #expect(try EmulatorCommand(["--app-check-token", "tok"]).configuration.appCheckToken == "tok")
        #expect(try EmulatorCommand([]).configuration.appCheckToken == nil)
    }

    @Test func optionsAnEndpointDoesNotHaveAreRefused() async throws {
        let firebase = Storage(bucket: "b", endpoint: .firebase(URL(string: "http://127.0.0.1:9")!))
        for options in [
            StorageRequestOptions(userProject: "p"), StorageRequestOptions(encryptionKey: Self.key),
            StorageRequestOptions(kmsKeyName: "k"), StorageRequestOptions(storageClass: "NEARLINE"),
        ] {
            do {
                _ = try await firebase.reference(withPath: "x").with(options).getMetadata()
                Issue.record("\(options) went to a Firebase endpoint")
            } catch {
                #expect(error.code == .invalidArgument)
            }
        }
        let gcs = Storage(bucket: "b", endpoint: .gcs(URL(string: "http://127.0.0.1:9")!))
        do {
            _ = try await gcs.reference(withPath: "x").with(.init(appCheckToken: { "t" })).getMetadata()
            Issue.record("an App Check token went to a JSON API endpoint")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }
}
