// The Swift code blocks of README.md and DocsCatalog, compiled with the tests.
//
// Each block lives here, verbatim, between `// snippet: <file>#<n>` and
// `// end snippet`, where <file> is the Markdown file's path from the package
// root and <n> counts its swift blocks from 1 (a block shown in several files
// lists each `<file>#<n>`, separated by commas). DocumentationSnippetTests checks
// that every block equals its region, so an example that stops compiling
// fails the build and one that drifts from this file fails the tests.
//
// Nothing here runs: the functions only have to compile. Their parameters
// stand for the values the prose says the reader already has; code after a
// region only keeps the compiler from warning about values the block leaves
// unused.
//
// swift-format would un-align the examples' end-of-line comments, which the
// Markdown keeps aligned for readers, and the two must stay identical.
// swift-format-ignore-file

// snippet: README.md#1
import CloudStorage
import Foundation

func uploadGreeting() async throws {
    let storage = Storage(
        bucket: "test-bucket",
        endpoint: .gcs(URL(string: "http://127.0.0.1:4443")!)  // an emulator; omit for Google Cloud Storage
    )
    let ref = storage.reference(withPath: "greetings/hello.txt")
    let metadata = try await ref.putDataAsync(Data("Hello, Cloud Storage!".utf8))
    print("stored \(metadata.size) bytes at \(ref)")  // … at gs://test-bucket/greetings/hello.txt
}
// end snippet

// Below README.md#1, which has to start the file with its own imports.
import StorageEmulator
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the examples call `tokens`: the reader's own source of OAuth 2 access tokens.
protocol AccessTokenSource: Sendable {
    func accessToken(forceRefresh: Bool) async throws -> String
}

/// What the examples call `user`: the reader's signed-in Firebase user.
protocol FirebaseUser: Sendable {
    func idToken(forceRefresh: Bool) async throws -> String
}

/// One function per code block; none is ever called.
enum DocumentationSnippets {

    static func readmeTokenProvider(tokens: some AccessTokenSource) {
        // snippet: README.md#2
        let storage = Storage(
            bucket: "my-project.appspot.com",
            authorization: .tokenProvider { forceRefresh in
                try await tokens.accessToken(forceRefresh: forceRefresh)
            }
        )
        // end snippet
        _ = storage
    }

    static func readmeProgress(storage: Storage, videoURL: URL) async {
        // snippet: README.md#3
        let task = storage.reference(withPath: "videos/launch.mp4").putFile(from: videoURL)
        for await snapshot in task.snapshots {
            switch snapshot.status {
            case .progress:
                print("\(Int(snapshot.progress.fractionCompleted * 100))% of \(snapshot.progress.totalUnitCount) bytes")
            case .success:
                print("done: \(snapshot.metadata?.md5Hash ?? "")")
            case .failure:
                print("failed: \(snapshot.error?.description ?? "")")
            case .resume, .pause:
                print(snapshot.status)
            }
        }
        // end snippet
    }

    static func readmePauseResumeCancel(storage: Storage, archiveURL: URL) async {
        // snippet: README.md#4
        let task = storage.reference(withPath: "backups/photos.tar").putFile(from: archiveURL)
        await task.pause()   // aborts the request in flight; the server keeps the upload session
        await task.resume()  // asks the server what it committed and continues from there
        await task.cancel()  // aborts, deletes the session, ends in failure with code .cancelled
        // end snippet
    }

    static func readmeErrorHandling(storage: Storage, reportURL: URL) async {
        // snippet: README.md#5
        do {
            _ = try await storage.reference(withPath: "reports/q3.pdf").putFileAsync(from: reportURL)
        } catch {
            switch error.code {
            case .unreadableFile, .fileChanged:
                print("the file could not be read as it was: \(error.message)")
            case .retryLimitExceeded, .quotaExceeded:
                print("the server is unavailable; try later")
            case .cancelled:
                break
            default:
                print(error)  // code, message, HTTP status and server message
            }
        }
        // end snippet
    }

    static func readmeConfiguration() throws {
        // snippet: README.md#6
        var configuration = StorageConfiguration()
        try configuration.uploads.setChunkSize(16 << 20)         // bound each request (a multiple of 256 KiB); default: one request
        try configuration.retry.setMaxUploadTime(.seconds(120))  // how long to keep retrying; default 600 s
        try configuration.timeouts.setRequest(.seconds(30))      // fail a request that makes no progress; default 60 s
        configuration.verifiesChecksums = true                   // CRC32C check of every upload; the default
        let configured = Storage(bucket: "my-bucket", configuration: configuration)
        // end snippet
        _ = configured
    }

    static func readmeEmulatorsFromCode() throws {
        // snippet: README.md#10
        // fake-gcs-server, `cloud-storage emulator`, or any server of the JSON API:
        let gcs = Storage.gcsEmulator(bucket: "test-bucket", baseURL: URL(string: "http://127.0.0.1:4443")!)

        // The Firebase emulator (127.0.0.1:9199 unless told otherwise), as its administrator:
        let firebase = try Storage.firebaseEmulator(bucket: "demo-project.appspot.com")

        // FIREBASE_STORAGE_EMULATOR_HOST or STORAGE_EMULATOR_HOST if set, else production:
        let endpoint = try StorageEndpoint.fromEnvironment() ?? .googleCloudStorage
        let storage = Storage(bucket: "test-bucket", endpoint: endpoint)
        // end snippet
        _ = (gcs, firebase, storage)
    }

    static func readmeFirebase(user: some FirebaseUser) {
        // snippet: README.md#11, DocsCatalog/CloudStorage.docc/Authenticating.md#6
        let storage = Storage(
            bucket: "my-app.appspot.com",
            endpoint: .firebaseStorage,
            authorization: .tokenProvider { forceRefresh in
                try await user.idToken(forceRefresh: forceRefresh)  // a Firebase ID token
            }
        )
        // end snippet
        _ = storage
    }

    static func landingPageOverview(videoURL: URL) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/CloudStorage.md#1
        let storage = Storage(bucket: "my-bucket", endpoint: .gcs(URL(string: "http://127.0.0.1:4443")!))
        let task = storage.reference(withPath: "videos/launch.mp4").putFile(from: videoURL)
        for await snapshot in task.snapshots where snapshot.status == .progress {
            print(snapshot.progress)
        }
        let metadata = try await task.value
        // end snippet
        _ = metadata
    }

    static func gettingStartedTokenProvider(tokens: some AccessTokenSource) {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#1
        let storage = Storage(
            bucket: "my-project.appspot.com",
            authorization: .tokenProvider { forceRefresh in
                try await tokens.accessToken(forceRefresh: forceRefresh)
            }
        )
        // end snippet
        _ = storage
    }

    static func gettingStartedEmulator() {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#3
        let emulator = Storage(
            bucket: "test-bucket",
            endpoint: .gcs(URL(string: "http://127.0.0.1:4443")!)
        )
        // end snippet
        _ = emulator
    }

    static func gettingStartedFirebase(user: some FirebaseUser) {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#2
        let storage = Storage(
            bucket: "my-app.appspot.com",
            endpoint: .firebaseStorage,
            authorization: .tokenProvider { forceRefresh in
                try await user.idToken(forceRefresh: forceRefresh)
            }
        )
        // end snippet
        _ = storage
    }

    static func gettingStartedFirebaseEmulator() throws {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#4
        let local = try Storage.firebaseEmulator(bucket: "demo-project.appspot.com")  // http://127.0.0.1:9199
        let asUser = try Storage.firebaseEmulator(
            bucket: "demo-project.appspot.com",
            port: 9199,
            authorization: .bearerToken(idTokenFromTheAuthEmulator)
        )
        // end snippet
        _ = (local, asUser)
    }

    /// What the Getting Started article calls `idTokenFromTheAuthEmulator`.
    static let idTokenFromTheAuthEmulator = "eyJhbGciOiJub25lIn0.e30."

    static func gettingStartedEmulatorFromEnvironment() throws {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#5
        let endpoint = try StorageEndpoint.fromEnvironment() ?? .googleCloudStorage
        let storage = Storage(bucket: "test-bucket", endpoint: endpoint)
        // end snippet
        _ = storage
    }

    static func gettingStartedReferences(storage: Storage) {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#6
        let imagesRef = storage.reference().child("images")
        let spaceRef = imagesRef.child("space.jpg")
        print(spaceRef.fullPath)  // images/space.jpg
        print(spaceRef.name)      // space.jpg
        print(spaceRef.bucket)    // my-project.appspot.com
        print(spaceRef)           // gs://my-project.appspot.com/images/space.jpg

        let sameRef = storage.reference(withPath: "images/space.jpg")
        assert(sameRef == spaceRef)
        // end snippet
    }

    static func gettingStartedNavigation(spaceRef: StorageReference) {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#7
        let parentRef = spaceRef.parent()         // images
        let rootRef = spaceRef.root()             // the bucket's root
        assert(parentRef?.parent() == rootRef)
        assert(rootRef.fullPath.isEmpty && rootRef.parent() == nil)
        // end snippet
    }

    static func gettingStartedReferencesFromURLs(storage: Storage) throws {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#8
        let fromGS = try storage.reference(forURL: "gs://my-project.appspot.com/images/space.jpg")
        let fromDownloadURL = try storage.reference(
            forURL: "https://firebasestorage.googleapis.com/v0/b/my-project.appspot.com/o/images%2Fspace.jpg?alt=media"
        )
        let fromPathStyle = try storage.reference(
            forURL: "https://storage.googleapis.com/my-project.appspot.com/images/space.jpg"
        )
        assert(fromGS == fromDownloadURL && fromGS == fromPathStyle)
        // end snippet
    }

    static func gettingStartedPathRules(storage: Storage) async {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#9
        let badRef = storage.reference(withPath: "notes/two\nlines.txt")  // no error yet
        do {
            _ = try await badRef.putDataAsync(Data("hello".utf8))
        } catch {
            print(error.code)  // pathError
        }
        // end snippet
    }

    static func gettingStartedFirstUpload(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/GettingStarted.md#10
        let greetingRef = storage.reference(withPath: "greetings/hello.txt")
        var metadata = StorageMetadata()
        metadata.contentType = "text/plain"
        let stored = try await greetingRef.putDataAsync(Data("Hello, Cloud Storage!".utf8), metadata: metadata)
        print(stored.path ?? "", stored.size, stored.generation ?? 0)  // greetings/hello.txt 21 …
        // end snippet
    }

    static func uploadingData(storage: Storage, imageData: Data) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#1
        let task = storage.reference(withPath: "images/space.jpg").putData(imageData)
        let metadata = try await task.value
        print(metadata.size, metadata.md5Hash ?? "")
        // end snippet
    }

    static func uploadingFiles(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#2
        let fileURL = URL(fileURLWithPath: "/var/backups/photos-2026.tar.gz")
        let stored = try await storage.reference(withPath: "backups/photos-2026.tar.gz")
            .putFileAsync(from: fileURL)
        print(stored.contentType ?? "")  // application/gzip
        // end snippet
    }

    static func uploadingWithMetadata(spaceRef: StorageReference, imageData: Data) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#3
        var metadata = StorageMetadata()
        metadata.contentType = "image/jpeg"
        metadata.cacheControl = "public, max-age=3600"
        metadata.contentDisposition = "inline; filename=\"space.jpg\""
        metadata.customMetadata = ["camera": "X100V", "location": "Yosemite"]
        let stored = try await spaceRef.putDataAsync(imageData, metadata: metadata)
        print(stored.customMetadata["camera"] ?? "")  // X100V
        // end snippet
    }

    static func uploadingWatchProgress(storage: Storage, videoURL: URL) async {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#4
        let task = storage.reference(withPath: "videos/launch.mp4").putFile(from: videoURL)
        for await snapshot in task.snapshots {
            switch snapshot.status {
            case .resume:
                print("uploading")
            case .progress:
                let percent = Int(snapshot.progress.fractionCompleted * 100)
                print("\(percent)% (\(snapshot.progress))")
            case .pause:
                print("paused")
            case .success:
                print("stored \(snapshot.metadata?.size ?? 0) bytes")
            case .failure:
                print("failed: \(snapshot.error?.description ?? "")")
            }
        }
        // The loop ends right after the success or failure snapshot.
        // end snippet
    }

    static func uploadingPauseResumeCancel(storage: Storage, videoURL: URL) async {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#5
        let task = storage.reference(withPath: "videos/launch.mp4").putFile(from: videoURL)
        await task.pause()
        // … later, for example when the network is back:
        await task.resume()
        // … or give up:
        await task.cancel()
        // end snippet
    }

    static func uploadingAwaitValue(ref: StorageReference, fileURL: URL) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#6
        let task = ref.putFile(from: fileURL)
        let metadata = try await task.value  // cancelling this caller leaves the upload running
        // end snippet
        _ = metadata
    }

    static func uploadingCancelWithCaller(ref: StorageReference, fileURL: URL) {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#7
        let upload = Task {
            try await ref.putFileAsync(from: fileURL)
        }
        upload.cancel()  // cancels the upload too
        // end snippet
    }

    static func uploadingAsyncProgress(ref: StorageReference, fileURL: URL) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#8
        let metadata = try await ref.putFileAsync(from: fileURL) { progress in
            print("\(Int(progress.fractionCompleted * 100))%")
        }
        // end snippet
        _ = metadata
    }

    static func uploadingChunkSize() throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#9
        var configuration = StorageConfiguration()
        try configuration.uploads.setChunkSize(32 * StorageConfiguration.Uploads.chunkGranularity)  // 8 MiB per request
        let chunkedStorage = Storage(bucket: "my-bucket", configuration: configuration)
        // end snippet
        _ = chunkedStorage
    }

    static func uploadingRetries() throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#10
        var configuration = StorageConfiguration()
        try configuration.retry.setMaxUploadTime(.seconds(120))
        try configuration.retry.setInitialDelay(.milliseconds(500))
        try configuration.timeouts.setRequest(.seconds(30))
        let patientStorage = Storage(bucket: "my-bucket", configuration: configuration)
        // end snippet
        _ = patientStorage
    }

    static func uploadingPreconditions(ref: StorageReference, report: Data) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#11
        do {
            let created = try await ref.putDataAsync(report, preconditions: .doesNotExist)
            print("created generation \(created.generation ?? 0)")
        } catch {
            guard error.code == .preconditionFailed else { throw error }
            print("it exists already: left as it is")
        }

        // Replace the object only if it is still the version read here.
        let current = try await ref.getMetadata()
        _ = try await ref.putDataAsync(report, preconditions: StoragePreconditions(ifGenerationMatch: current.generation))
        // end snippet
    }

    static func uploadingHandleErrors(ref: StorageReference, fileURL: URL) async {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#12
        do {
            let metadata = try await ref.putFileAsync(from: fileURL)
            print("stored \(metadata.size) bytes")
        } catch {
            switch error.code {
            case .cancelled:
                break  // the user asked for it
            case .unreadableFile, .fileChanged:
                print("check the file: \(error.message)")
            case .unauthenticated, .unauthorized:
                print("sign in again: \(error.serverMessage ?? error.message)")
            case .retryLimitExceeded, .quotaExceeded:
                print("try again later: \(error)")
            default:
                print("upload failed: \(error)")
            }
        }
        // end snippet
    }

    static func uploadingResumeAfterRestart(
        storage: Storage, ref: StorageReference, fileURL: URL, recordURL: URL
    ) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#13
        // First process: save the description as soon as the session is open.
        let task = ref.putFile(from: fileURL)
        if let session = await task.waitForResumableSession() {
            try session.write(to: recordURL)  // 0600, atomically
        }
        _ = try await task.value
        try? FileManager.default.removeItem(at: recordURL)

        // After a restart: continue from the bytes the server kept.
        let saved = try StorageUploadSession(contentsOf: recordURL)
        let metadata = try await storage.resumeUpload(saved, from: fileURL).value
        // end snippet
        _ = metadata
    }

    static func uploadingSaveAfterRetriesRanOut(task: StorageUploadTask, recordURL: URL) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UploadingFiles.md#14
        do {
            _ = try await task.value
        } catch {
            if error.code == .retryLimitExceeded || error.code == .quotaExceeded {
                // The network or the server may come back: resume later from what was committed.
                try task.resumableSession?.write(to: recordURL)
            }
            throw error
        }
        // end snippet
    }

    static func copyingAcrossBuckets(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/CopyingAndMovingObjects.md#1
        let archive = storage.bucket("archive")
        var metadata = StorageMetadata()
        metadata.storageClass = "COLDLINE"
        metadata.contentType = "application/pdf"
        let source = storage.reference(withPath: "2024/report.pdf")
        let current = try await source.getMetadata()
        let copied = try await source.copy(
            to: archive.reference(withPath: "2024/report.pdf"),
            metadata: metadata,  // replaces the source's metadata, as Cloud Storage does
            preconditions: .doesNotExist,  // never replace an archived copy
            sourcePreconditions: StoragePreconditions(ifGenerationMatch: current.generation)  // exactly this version
        ) { progress in
            print("\(progress.completedUnitCount) of \(progress.totalUnitCount) bytes")
        }
        print(copied.generation ?? 0)
        // end snippet
    }

    static func continuingACopyFromItsToken(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/CopyingAndMovingObjects.md#2
        let source = storage.reference(withPath: "exports/2024.tar")
        let destination = storage.bucket("archive").reference(withPath: "2024.tar")
        let step = try await source.rewrite(to: destination, preconditions: .doesNotExist)
        if let token = step.rewriteToken {
            // Later, perhaps in another process:
            let copied = try await source.copy(to: destination, preconditions: .doesNotExist, rewriteToken: token)
            print(copied.generation ?? 0)
        }
        // end snippet
    }

    static func composingParts(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/CopyingAndMovingObjects.md#3
        let parts = (0..<3).map { storage.reference(withPath: "upload/part-\($0)") }
        var metadata = StorageMetadata()
        metadata.contentType = "video/mp4"
        let whole = try await storage.reference(withPath: "videos/full.mp4")
            .compose(from: parts, metadata: metadata, preconditions: .doesNotExist)
        print(whole.size, whole.componentCount ?? 0)
        for part in parts { try await part.delete() }
        // end snippet
    }

    static func movingWithinABucket(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/CopyingAndMovingObjects.md#4
        let moved = try await storage.reference(withPath: "inbox/scan.pdf")
            .move(to: storage.reference(withPath: "done/scan.pdf"), preconditions: .doesNotExist)
        print(moved.path ?? "")  // "done/scan.pdf"
        // end snippet
    }

    static func generationsReadCopyDelete(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ObjectGenerations.md#1
        let ref = storage.reference(withPath: "config.json")
        let first = try await ref.putDataAsync(Data("{\"v\":1}".utf8))
        _ = try await ref.putDataAsync(Data("{\"v\":2}".utf8))  // first is now noncurrent
        let old = ref.atGeneration(first.generation)
        print(old)  // gs://my-bucket/config.json#1712345678901234
        let bytes = try await old.data(maxSize: 1024)  // {"v":1}
        _ = try await old.copy(to: ref)  // restores it as the live object
        try await old.delete()  // only that generation goes
        print(bytes.count)
        // end snippet
    }

    static func emulatorInTests() async throws {
        // snippet: DocsCatalog/CloudStorage.docc/Emulators.md#1
        let emulator = try StorageEmulator.start()  // in memory, on a free loopback port
        defer { emulator.stop() }
        let storage = Storage.gcsEmulator(bucket: "test-bucket", baseURL: emulator.baseURL)
        let metadata = try await storage.reference(withPath: "hello.txt").putDataAsync(Data("hi".utf8))
        #expect(metadata.size == 2)
        // end snippet
    }

    static func emulatorConfiguration(objectsDirectory: URL) throws -> StorageEmulator {
        // snippet: DocsCatalog/CloudStorage.docc/Emulators.md#2
        var configuration = StorageEmulator.Configuration()
        configuration.backing = .directory(objectsDirectory)  // or .memory (the default), .discard
        configuration.requiredToken = "s3cret"                // 401 for requests without it
        configuration.acceptsOwner = true                     // and `owner` (emulatorOwner) is let in too
        configuration.autoCreateBuckets = false               // uploads into unknown buckets get 404
        configuration.uploadSessionLifetime = .seconds(3600)  // upload sessions expire after an hour
        configuration.maxUploadSessions = 100                 // and at most 100 exist at once
        configuration.faults = ["return-503", "pass"]         // the first request fails, then all pass
        let emulator = try StorageEmulator.start(configuration)
        try emulator.createBucket("test-bucket")
        // end snippet
        return emulator
    }

    static func emulatorAuthentication(testKeyFileURL: URL) throws {
        // snippet: DocsCatalog/CloudStorage.docc/Emulators.md#3
        var configuration = StorageEmulator.Configuration()
        configuration.authentication = .init(
            serviceAccounts: [try .init(keyFile: Data(contentsOf: testKeyFileURL))],  // a key made for tests only
            authorizedUsers: [.init(clientID: "test-client", clientSecret: "test-secret", refreshToken: "test-refresh")],
            metadataServerAccount: .init(email: "vm@demo.iam.gserviceaccount.com", projectID: "demo"),
            tokenLifetime: .seconds(600),
            requiresToken: true
        )
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        print(emulator.baseURL.absoluteString + "/token", "127.0.0.1:\(emulator.port)")  // token_uri, GCE_METADATA_HOST
        // end snippet
    }

    static func emulatorRandomFaults() async throws {
        // snippet: DocsCatalog/CloudStorage.docc/Emulators.md#4
        var configuration = StorageEmulator.Configuration()
        configuration.faults = ["random:seed=42,rate=0.2"]  // a fifth of the requests fail, the same way every run
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        var settings = StorageConfiguration()
        try settings.retry.setInitialDelay(.milliseconds(10))
        let storage = Storage.gcsEmulator(bucket: "flaky", baseURL: emulator.baseURL, configuration: settings)
        let payload = Data(repeating: 7, count: 1024 * 1024)
        let metadata = try await storage.reference(withPath: "payload.bin").putDataAsync(payload)
        #expect(metadata.size == Int64(payload.count))
        // end snippet
    }

    static func emulatorFaultPlanByID(emulator: StorageEmulator) throws -> URLRequest {
        // snippet: DocsCatalog/CloudStorage.docc/Emulators.md#5
        let plan = try emulator.installFaultPlan(["return-429", "return-503-after-256K"])
        var request = URLRequest(url: emulator.baseURL.appendingPathComponent("storage/v1/b/test-bucket/o"))
        request.setValue(plan, forHTTPHeaderField: "x-emulator-faults")
        // end snippet
        return request
    }

    // MARK: Using CloudStorage in a server

    static func serverStorage() -> Storage {
        // snippet: DocsCatalog/CloudStorage.docc/UsingCloudStorageInAServer.md#1
        // At start-up: Application Default Credentials find the service account's key
        // file, a gcloud login or, on Google Cloud, the metadata server.
        let storage = Storage(bucket: "uploads.example.com", authorization: .applicationDefault)
        // end snippet
        return storage
    }

    static func serverStoreUpload(
        storage: Storage, id: String, body: some AsyncSequence<Data, any Error> & Sendable,
        contentLength: Int64?, contentType: String?
    ) async -> Int {
        // snippet: DocsCatalog/CloudStorage.docc/UsingCloudStorageInAServer.md#2
        /// Stores an upload request's body as `uploads/<id>` and returns the HTTP status to answer.
        func storeUpload(
            id: String, body: some AsyncSequence<Data, any Error> & Sendable,
            contentLength: Int64?, contentType: String?
        ) async -> Int {
            var metadata = StorageMetadata()
            metadata.contentType = contentType
            do {
                _ = try await storage.reference(withPath: "uploads/\(id)")
                    .putStreamAsync(body, size: contentLength, metadata: metadata, preconditions: .doesNotExist)
                return 201
            } catch {
                switch error.code {
                case .preconditionFailed: return 409  // that id is taken: nothing was overwritten
                case .unreadableFile: return 400      // the client's body broke off
                case .invalidArgument: return 400     // longer or shorter than its Content-Length
                case .cancelled: return 499           // the client went away
                default: return 503
                }
            }
        }
        // end snippet
        return await storeUpload(id: id, body: body, contentLength: contentLength, contentType: contentType)
    }

    static func serverServeUpload(storage: Storage, id: String, send: (Data) async throws -> Void) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/UsingCloudStorageInAServer.md#3
        /// Sends `uploads/<id>` to a client; `send` returns once the client took the bytes.
        func serveUpload(id: String, send: (Data) async throws -> Void) async throws {
            for try await chunk in storage.reference(withPath: "uploads/\(id)").dataStream() {
                try await send(chunk)  // the next chunk is read from the bucket only after this
            }
        }
        // end snippet
        try await serveUpload(id: id, send: send)
    }

    static func serverIncrement(storage: Storage, counter name: String) async throws -> Int {
        // snippet: DocsCatalog/CloudStorage.docc/UsingCloudStorageInAServer.md#4
        /// Adds one to the number in `counters/<name>`, however many servers do so at once.
        func increment(counter name: String) async throws -> Int {
            let ref = storage.reference(withPath: "counters/\(name)")
            while true {
                var generation: Int64 = 0  // "no object yet"
                var value = 0
                do {
                    let metadata = try await ref.getMetadata()
                    generation = metadata.generation ?? 0
                    // Read exactly that generation, not a newer one written in between.
                    let text = try await ref.data(maxSize: 64, preconditions: StoragePreconditions(ifGenerationMatch: generation))
                    value = Int(String(decoding: text, as: UTF8.self)) ?? 0
                } catch {
                    if error.code == .preconditionFailed { continue }  // replaced in between: read again
                    guard error.code == .objectNotFound else { throw error }
                }
                do {
                    _ = try await ref.putDataAsync(
                        Data(String(value + 1).utf8), preconditions: StoragePreconditions(ifGenerationMatch: generation))
                    return value + 1
                } catch {
                    guard error.code == .preconditionFailed else { throw error }
                    // Another server wrote first: read its value and try again.
                }
            }
        }
        // end snippet
        return try await increment(counter: name)
    }

    static func serverUploadThenResume(
        storage: Storage
    ) -> (
        upload: (URL, String, URL) async throws -> StorageMetadata, resume: (URL) async -> Void
    ) {
        // snippet: DocsCatalog/CloudStorage.docc/UsingCloudStorageInAServer.md#5
        /// Uploads `file`, keeping a record that lets a restarted process finish the upload.
        func upload(_ file: URL, to path: String, records: URL) async throws -> StorageMetadata {
            let record = records.appendingPathComponent(UUID().uuidString + ".session")
            let task = storage.reference(withPath: path).putFile(from: file)
            if let session = await task.waitForResumableSession() {
                do {
                    try session.write(to: record)  // owner-only (0600): the session URL is a bearer capability
                } catch {
                    await task.cancel()
                    throw error
                }
            }
            defer { try? FileManager.default.removeItem(at: record) }
            return try await task.value
        }

        /// At start-up: finishes the uploads the previous process left behind.
        func resumeInterruptedUploads(records: URL) async {
            let saved = (try? FileManager.default.contentsOfDirectory(at: records, includingPropertiesForKeys: nil)) ?? []
            for record in saved where record.pathExtension == "session" {
                do {
                    let session = try StorageUploadSession(contentsOf: record)
                    let file = URL(fileURLWithPath: session.source.path)
                    let metadata = try await storage.resumeUpload(session, from: file).value
                    print("finished gs://\(session.bucket)/\(session.objectPath): \(metadata.size) bytes")
                } catch {
                    // fileChanged, uploadSessionExpired, ...: upload the file again from the start.
                    print("\(record.lastPathComponent): \(error)")
                }
                try? FileManager.default.removeItem(at: record)
            }
        }
        // end snippet
        return (upload, resumeInterruptedUploads)
    }
}

/// Downloads, metadata, deleting and listing.
extension DocumentationSnippets {
    static func readmeDownloadsMetadataListings(storage: Storage) async throws {
        // snippet: README.md#7
        let ref = storage.reference(withPath: "images/space.jpg")
        let bytes = try await ref.data(maxSize: 10 * 1024 * 1024)              // into memory, size-capped
        let file = try await ref.writeAsync(toFile: URL(fileURLWithPath: "/tmp/space.jpg"))  // streamed, verified, resumable
        var update = StorageMetadataUpdate()
        update.customMetadata["reviewed"] = .set("yes")                        // only named fields change
        let metadata = try await ref.updateMetadata(update)
        for try await page in storage.reference(withPath: "images").pages() {   // one request per page
            print(page.items.map(\.name))
        }
        let url = try await ref.downloadURL()
        try await ref.delete()
        print(bytes.count, file.path, metadata.customMetadata, url)
        // end snippet
    }

    static func readmeCopiesListingsGenerations(storage: Storage) async throws {
        // snippet: README.md#8
        let report = storage.reference(withPath: "reports/2024.pdf")
        _ = try await report.copy(to: storage.bucket("archive").reference(withPath: "2024.pdf"))  // on the server
        _ = try await report.move(to: storage.reference(withPath: "reports/old/2024.pdf"))
        let versions = StorageObjectQuery(prefix: "logs/2024-", includesVersions: true)  // any prefix, no folders
        for try await case .object(let object, let metadata?) in storage.objects(versions) {
            print(object, metadata.size)  // gs://my-bucket/logs/2024-01.txt#1712345678901234
            if metadata.timeDeleted != nil { try await object.delete() }  // a noncurrent generation, only it
        }
        // end snippet
    }

    static func readmeServer(
        storage: Storage, id: String, body: some AsyncSequence<Data, any Error> & Sendable, contentLength: Int64?,
        send: (Data) async throws -> Void
    ) async throws {
        // snippet: README.md#9
        // A request body (any AsyncSequence of byte collections), in at most 8 MiB of memory;
        // the handler's cancellation (the client went away) cancels the upload.
        let stored = try await storage.reference(withPath: "uploads/\(id)")
            .putStreamAsync(body, size: contentLength, preconditions: .doesNotExist)  // 412 if the id is taken
        // An object back out, read from the network no faster than the client takes it.
        for try await chunk in storage.reference(withPath: "uploads/\(id)").dataStream(range: 0..<1_048_576) {
            try await send(chunk)
        }
        print(stored.generation ?? 0)
        // end snippet
    }

    static func downloadingIntoMemory(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/DownloadingFiles.md#1
        let imageData = try await storage.reference(withPath: "images/space.jpg")
            .data(maxSize: 10 * 1024 * 1024)
        print(imageData.count)
        // end snippet
    }

    static func downloadingIntoAFile(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/DownloadingFiles.md#2
        let task = storage.reference(withPath: "videos/launch.mp4")
            .write(toFile: URL(fileURLWithPath: "/tmp/launch.mp4"))
        for await snapshot in task.snapshots where snapshot.status == .progress {
            print("\(Int(snapshot.progress.fractionCompleted * 100))%")
        }
        let fileURL = try await task.value
        print(fileURL.path)
        // end snippet
    }

    static func downloadingStreamsAndRanges(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/DownloadingFiles.md#3
        let ref = storage.reference(withPath: "logs/2024-05-01.jsonl")
        var lines = 0
        for try await chunk in ref.dataStream() {          // bounded memory, any size
            lines += chunk.count { $0 == UInt8(ascii: "\n") }
        }
        let header = try await ref.data(maxSize: 512, range: 0..<512)   // the first 512 bytes
        let tail = try await ref.data(maxSize: 1 << 20, range: 10_000...)  // from byte 10,000 to the end
        print(lines, header.count, tail.count)
        // end snippet
    }

    static func downloadingPauseResume(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/DownloadingFiles.md#4
        let task = storage.reference(withPath: "backups/photos.tar")
            .write(toFile: URL(fileURLWithPath: "/tmp/photos.tar"))
        await task.pause()
        await task.resume()
        let file = try await task.value
        // end snippet
        _ = file
    }

    static func downloadingURL(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/DownloadingFiles.md#5
        let url = try await storage.reference(withPath: "images/space.jpg").downloadURL()
        print(url)
        // end snippet
    }

    static func metadataRead(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ManagingMetadata.md#1
        let metadata = try await storage.reference(withPath: "images/space.jpg").getMetadata()
        print(metadata.size, metadata.contentType ?? "", metadata.customMetadata)
        // end snippet
    }

    static func metadataUpdate(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ManagingMetadata.md#2
        var update = StorageMetadataUpdate()
        update.cacheControl = .set("public, max-age=3600")
        update.contentLanguage = .remove
        update.customMetadata["reviewed"] = .set("yes")
        update.customMetadata["draft"] = .remove
        let updated = try await storage.reference(withPath: "images/space.jpg").updateMetadata(update)
        print(updated.customMetadata)
        // end snippet
    }

    static func metadataUpdateFirebaseStyle(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ManagingMetadata.md#3
        var metadata = StorageMetadata()
        metadata.cacheControl = "public, max-age=3600"
        metadata.customMetadata = ["reviewed": "yes"]
        let updated = try await storage.reference(withPath: "images/space.jpg").updateMetadata(metadata)
        print(updated.cacheControl ?? "")
        // end snippet
    }

    static func deleting(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/DeletingFiles.md#1
        do {
            try await storage.reference(withPath: "images/old.jpg").delete()
        } catch where error.code == .objectNotFound {
            // already gone
        }
        // end snippet
    }

    static func listingPages(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ListingFiles.md#1
        let photos = storage.reference(withPath: "photos")
        var page = try await photos.list(maxResults: 100)
        while let token = page.pageToken {
            page = try await photos.list(maxResults: 100, pageToken: token)
            print(page.items.map(\.name))
        }
        // end snippet
    }

    static func listingSequence(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ListingFiles.md#2
        var total = 0
        for try await page in storage.reference().pages(maxResults: 1000) {
            total += page.items.count
        }
        print(total, "objects at the top of the bucket")
        // end snippet
    }

    static func listingAll(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ListingFiles.md#3
        let all = try await storage.reference(withPath: "photos").listAll()
        for folder in all.prefixes {
            print("folder", folder.fullPath)
        }
        for item in all.items {
            print("object", item.fullPath)
        }
        // end snippet
    }

    static func listingMetadata(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ListingFiles.md#4
        let page = try await storage.reference(withPath: "photos").list(maxResults: 1000)
        for item in page.items {
            let metadata: StorageMetadata
            if let listed = page.metadata(for: item) {
                metadata = listed
            } else {
                metadata = try await item.getMetadata()
            }
            print(item.fullPath, metadata.size, metadata.updated.map(String.init(describing:)) ?? "-")
        }
        // end snippet
    }

    static func listingObjects(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ListingFiles.md#5
        var query = StorageObjectQuery(prefix: "logs/2024-")
        query.includesVersions = true
        var bytes: Int64 = 0
        for try await entry in storage.objects(query) {
            if case .object(let object, let metadata?) = entry {
                print(object.fullPath, metadata.generation ?? 0)
                bytes += metadata.size
            }
        }
        print(bytes, "bytes in every version")
        // end snippet
    }

    static func listingObjectPages(storage: Storage) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/ListingFiles.md#6
        let listing = storage.objects(StorageObjectQuery(prefix: "photos/", delimiter: "/", pageSize: 100))
        let first = try await listing.page()
        if let token = first.nextPageToken {
            let next = try await listing.page(token: token)
            print(next.entries.map(\.name))
        }
        // end snippet
    }
}

/// HTTPS on Linux: trusting a private certificate authority (the same block in both places).
extension DocumentationSnippets {
    static func privateCA() -> Storage {
        // snippet: README.md#14, DocsCatalog/CloudStorage.docc/HTTPSOnLinux.md#1
        var configuration = StorageConfiguration()
        configuration.tls.additionalTrustRoots = [.file(URL(fileURLWithPath: "/etc/my-company/ca.pem"))]
        let storage = Storage(
            bucket: "my-bucket",
            endpoint: .gcs(URL(string: "https://storage.internal.example:8443")!),
            configuration: configuration
        )
        // end snippet
        return storage
    }
}

/// Authenticating: signed URLs and testing them against the emulator.
extension DocumentationSnippets {
    static func readmeSignedURL(storage: Storage, clientEmail: String, privateKeyPEM: String) async throws {
        // snippet: README.md#13
        let signer = try SignedURLSigner.privateKey(email: clientEmail, pem: privateKeyPEM)  // from its JSON key file
        let url = try await storage.reference(withPath: "reports/2026.pdf")
            .signedURL(expiresIn: .seconds(15 * 60), signer: signer)  // a GET for whoever holds it, for 15 minutes
        // end snippet
        _ = url
    }

    static func authenticatingSignedURLs(storage: Storage, clientEmail: String, privateKeyPEM: String) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#7
        let signer = try SignedURLSigner.privateKey(email: clientEmail, pem: privateKeyPEM)
        let ref = storage.reference(withPath: "reports/2026.pdf")
        let download = try await ref.signedURL(expiresIn: .seconds(15 * 60), signer: signer)
        let upload = try await ref.signedURL(
            method: .put,
            expiresIn: .seconds(3600),
            headers: ["Content-Type": "application/pdf"],
            signer: signer
        )
        // curl -X PUT -H 'Content-Type: application/pdf' --data-binary @2026.pdf "$upload"
        // end snippet
        _ = (download, upload)
    }

    static func authenticatingIAMSignBlob() async throws {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#8
        // No signer: the Storage's own credentials sign.
        let storage = Storage(bucket: "my-bucket", authorization: .applicationDefault)
        let url = try await storage.reference(withPath: "exports/today.csv").signedURL(expiresIn: .seconds(600))

        // Another account signs, through IAM, with this Storage's token (which needs the cloud-platform scope).
        let platform = Storage(
            bucket: "my-bucket",
            authorization: .applicationDefault(scopes: ["https://www.googleapis.com/auth/cloud-platform"])
        )
        let signer = SignedURLSigner.iamSignBlob(email: "exports@my-project.iam.gserviceaccount.com")
        let other = try await platform.reference(withPath: "exports/today.csv")
            .signedURL(method: .get, expiresIn: .seconds(600), signer: signer)
        // end snippet
        _ = (url, other)
    }

    static func authenticatingSignedURLAgainstTheEmulator(clientEmail: String, privateKeyPEM: String) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#11
        var configuration = StorageEmulator.Configuration()
        configuration.authentication = .init(
            serviceAccounts: [.init(email: clientEmail, privateKeyPEM: privateKeyPEM)],
            requiresToken: true
        )
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let storage = Storage.gcsEmulator(bucket: "test-bucket", baseURL: emulator.baseURL)
        let signer = try SignedURLSigner.privateKey(email: clientEmail, pem: privateKeyPEM)
        let put = try await storage.reference(withPath: "shared.txt")
            .signedURL(method: .put, expiresIn: .seconds(600), signer: signer)
        var request = URLRequest(url: put)
        request.httpMethod = "PUT"
        let (_, response) = try await URLSession.shared.upload(for: request, from: Data("hi".utf8))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        // end snippet
    }
}

/// Authenticating: Google's credentials (Application Default Credentials, key files,
/// gcloud logins, the metadata server) and testing them against the emulator.
extension DocumentationSnippets {
    static func readmeGoogleCredentials() throws {
        // snippet: README.md#12
        let storage = Storage(bucket: "my-bucket", authorization: .applicationDefault)  // gcloud login, key file or metadata server
        let fromKeyFile = Storage(
            bucket: "my-bucket",
            authorization: try .serviceAccount(keyFile: URL(fileURLWithPath: "/etc/secrets/storage-writer.json"))
        )
        // end snippet
        _ = (storage, fromKeyFile)
    }

    static func authenticatingApplicationDefault(reportURL: URL) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#1
        let storage = Storage(bucket: "my-bucket", authorization: .applicationDefault)
        let metadata = try await storage.reference(withPath: "reports/q3.pdf").putFileAsync(from: reportURL)
        // end snippet
        _ = metadata
    }

    static func authenticatingKeyFile() throws {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#2
        let authorization = try StorageAuthorization.serviceAccount(
            keyFile: URL(fileURLWithPath: "/etc/secrets/storage-writer.json"))
        let storage = Storage(bucket: "my-bucket", authorization: authorization)
        // end snippet
        _ = storage
    }

    static func authenticatingAuthorizedUser() throws {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#3
        let file = URL(fileURLWithPath: NSHomeDirectory())
            .appendingPathComponent(".config/gcloud/application_default_credentials.json")
        let storage = Storage(bucket: "my-bucket", authorization: try .authorizedUser(file: file))
        // end snippet
        _ = storage
    }

    static func authenticatingMetadataServer() {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#4
        let storage = Storage(bucket: "my-bucket", authorization: .metadataServer())
        // end snippet
        _ = storage
    }

    static func authenticatingScopes() {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#5
        let readOnly = StorageAuthorization.applicationDefault(
            scopes: ["https://www.googleapis.com/auth/devstorage.read_only"])
        let storage = Storage(bucket: "my-bucket", authorization: readOnly)
        // end snippet
        _ = storage
    }

    static func authenticatingKeyFileAgainstTheEmulator(testKeyFileURL: URL) async throws {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#9
        let keyFile = try Data(contentsOf: testKeyFileURL)  // a key made for tests only
        var configuration = StorageEmulator.Configuration()
        configuration.authentication = .init(serviceAccounts: [try .init(keyFile: keyFile)], requiresToken: true)
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }

        var key = try #require(try JSONSerialization.jsonObject(with: keyFile) as? [String: Any])
        key["token_uri"] = emulator.baseURL.absoluteString + "/token"
        let storage = Storage.gcsEmulator(
            bucket: "test-bucket",
            baseURL: emulator.baseURL,
            authorization: try .serviceAccount(keyJSON: try JSONSerialization.data(withJSONObject: key))
        )
        _ = try await storage.reference(withPath: "hello.txt").putDataAsync(Data("hi".utf8))
        #expect(emulator.tokenGrantCount == 1)
        // end snippet
    }

    static func authenticatingMetadataServerAgainstTheEmulator() async throws {
        // snippet: DocsCatalog/CloudStorage.docc/Authenticating.md#10
        var configuration = StorageEmulator.Configuration()
        configuration.authentication = .init(
            metadataServerAccount: .init(email: "vm@demo.iam.gserviceaccount.com", projectID: "demo"),
            requiresToken: true
        )
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        setenv("GCE_METADATA_HOST", "127.0.0.1:\(emulator.port)", 1)
        let storage = Storage.gcsEmulator(
            bucket: "test-bucket", baseURL: emulator.baseURL, authorization: .metadataServer())
        _ = try await storage.reference(withPath: "hello.txt").putDataAsync(Data("hi".utf8))
        // end snippet
    }
}

extension DocumentationSnippets {
    static func optionsAndObservabilityIdentification() throws {
        // snippet: README.md#19, DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#9
        var configuration = StorageConfiguration()
        try configuration.identification.setApplicationSuffix("photo-sync/2.4.1")
        let storage = Storage(bucket: "my-bucket", configuration: configuration)
        // User-Agent: cloud-storage-swift/0.1.0 photo-sync/2.4.1
        // end snippet
        _ = storage
    }

    static func optionsAndObservabilityEvents() throws {
        // snippet: README.md#20, DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#10
        struct StandardErrorHandler: StorageEventHandler {
            func handle(_ event: StorageEvent) {
                // On the SDK's event thread: blocking here holds up no request.
                FileHandle.standardError.write(Data("\(event)\n".utf8))
            }
        }

        var configuration = StorageConfiguration()
        try configuration.events.setHandler(StandardErrorHandler())
        let storage = Storage(bucket: "my-bucket", configuration: configuration)
        // #1 request POST https://storage.googleapis.com/upload/storage/v1/b/my-bucket/o?uploadType=resumable&name=a.mp4: 200 in 85 ms
        // end snippet
        _ = storage
    }
}
