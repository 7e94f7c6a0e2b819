import FakeGCSServer
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Metadata, deletion, download URLs and listings against the built-in
/// emulator (both protocols) and fake-gcs-server (GCS), on each route (``TestRoute``).
@Suite("Object operations", .timeLimit(.minutes(10)))
struct ObjectOperationsTests {
    /// A `Storage` on the emulator speaking GCS or Firebase v0, for `bucket`.
    static func storage(
        _ emulator: StorageEmulator, firebase: Bool, bucket: String, route: TestRoute
    ) -> Storage {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(20))
            try $0.retry.setMaxUploadTime(.seconds(30))
        }
        return Storage(
            bucket: bucket,
            endpoint: firebase ? .firebase(emulator.baseURL) : .gcs(emulator.baseURL),
            authorization: firebase ? .emulatorOwner : .none,
            configuration: configuration)
    }

    /// Runs `body` against the emulator (GCS and Firebase) and fake-gcs-server.
    static let servers = ["emulator-gcs", "emulator-firebase", "fake-gcs"]

    static func withStorage(
        _ server: String, _ route: TestRoute, _ body: (Storage) async throws -> Void
    ) async throws {
        if server == "fake-gcs" {
            let (storage, _) = try await TestSupport.fakeGCSStorage(label: "ops", route: route)
            try await body(storage)
            return
        }
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        try await body(
            storage(
                emulator, firebase: server == "emulator-firebase", bucket: TestSupport.bucketName("ops"),
                route: route))
    }

    @Test(arguments: servers, TestRoute.all)
    func getMetadataReadsWhatWasStored(server: String, route: TestRoute) async throws {
        try await Self.withStorage(server, route) { storage in
            var metadata = StorageMetadata()
            metadata.contentType = "text/plain"
            metadata.customMetadata = ["a": "1", "b": "2"]
            let payload = Data("hello, metadata".utf8)
            let ref = storage.reference(withPath: "docs/note.txt")
            let stored = try await ref.putDataAsync(payload, metadata: metadata)
            let read = try await ref.getMetadata()
            #expect(read.path == "docs/note.txt")
            #expect(read.name == "note.txt")
            #expect(read.size == Int64(payload.count))
            #expect(read.contentType == "text/plain")
            #expect(read.customMetadata == ["a": "1", "b": "2"])
            #expect(read.generation == stored.generation)
            #expect(read.crc32cValue == CRC32C.checksum(payload))
        }
    }

    @Test(arguments: servers, TestRoute.all)
    func updateMetadataChangesOnlyWhatItNames(server: String, route: TestRoute) async throws {
        try await Self.withStorage(server, route) { storage in
            var metadata = StorageMetadata()
            metadata.contentType = "text/plain"
            metadata.cacheControl = "no-cache"
            metadata.customMetadata = ["keep": "k", "change": "old", "drop": "d"]
            let ref = storage.reference(withPath: "m.txt")
            _ = try await ref.putDataAsync(Data("x".utf8), metadata: metadata)

            var update = StorageMetadataUpdate()
            update.contentType = .set("text/markdown")
            update.customMetadata = ["change": .set("new"), "drop": .remove, "added": .set("a")]
            let updated = try await ref.updateMetadata(update)
            #expect(updated.contentType == "text/markdown")
            #expect(updated.cacheControl == "no-cache", "a field the update does not name is kept")
            #expect(updated.customMetadata["keep"] == "k")
            #expect(updated.customMetadata["change"] == "new")
            #expect(updated.customMetadata["added"] == "a")
            // fake-gcs-server stores a JSON null as "" and ignores null header fields: removal is
            // only meaningful against our emulator, which follows GCS and Firebase.
            guard server != "fake-gcs" else { return }
            #expect(updated.customMetadata == ["keep": "k", "change": "new", "added": "a"])

            var removal = StorageMetadataUpdate()
            removal.cacheControl = .remove
            let removed = try await ref.updateMetadata(removal)
            #expect(removed.cacheControl == nil)
            #expect(removed.contentType == "text/markdown")
            #expect(try await ref.getMetadata().customMetadata == ["keep": "k", "change": "new", "added": "a"])

            // An empty update changes nothing and reads the metadata.
            let unchanged = try await ref.updateMetadata(StorageMetadataUpdate())
            #expect(unchanged.metageneration == removed.metageneration)
        }
    }

    @Test(arguments: servers, TestRoute.all)
    func deleteRemovesTheObjectAndMissingObjectsAreNotFound(
        server: String, route: TestRoute
    ) async throws {
        try await Self.withStorage(server, route) { storage in
            let ref = storage.reference(withPath: "gone/soon.bin")
            _ = try await ref.putDataAsync(Data([1, 2, 3]))
            try await ref.delete()
            for operation in Self.objectOperations {
                let error = await #expect(throws: StorageError.self) { try await operation(ref) }
                #expect(error?.code == .objectNotFound, "after delete")
                #expect(error?.httpStatus == 404)
            }
        }
    }

    @Test(arguments: servers, TestRoute.all)
    func rootReferenceIsAnInvalidArgument(server: String, route: TestRoute) async throws {
        try await Self.withStorage(server, route) { storage in
            for operation in Self.objectOperations {
                let error = await #expect(throws: StorageError.self) { try await operation(storage.reference()) }
                #expect(error?.code == .invalidArgument)
                #expect(error?.httpStatus == nil, "refused before any request")
            }
        }
    }

    /// Every operation on one object, as a throwing closure.
    static let objectOperations: [@Sendable (StorageReference) async throws -> Void] = [
        { _ = try await $0.getMetadata() },
        {
            var update = StorageMetadataUpdate()
            update.contentLanguage = .set("en")
            _ = try await $0.updateMetadata(update)
        },
        { try await $0.delete() },
        { _ = try await $0.downloadURL() },
    ]

    @Test(arguments: TestRoute.all)
    func firebaseDownloadURLCarriesTheObjectsTokenAndServesIt(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let bucket = TestSupport.bucketName("url")
        let storage = Self.storage(emulator, firebase: true, bucket: bucket, route: route)
        let payload = TestSupport.payload(size: 1000, seed: 3)
        let ref = storage.reference(withPath: "a b/c+d.bin")
        _ = try await ref.putDataAsync(payload)
        let url = try await ref.downloadURL()
        let text = url.absoluteString
        #expect(text.hasPrefix("\(emulator.baseURL)/v0/b/\(bucket)/o/a%20b%2Fc%2Bd.bin?alt=media&token="))
        // The URL alone, with no credentials, serves the bytes.
        let response = try await TestRoute.reader.execute(HTTPRequest(method: "GET", url: url), progress: nil)
        #expect(response.status == 200)
        #expect(response.body == payload)
        #expect(try await ref.downloadURL() == url, "the same token is handed out again")
    }

    @Test(arguments: TestRoute.all)
    func firebaseDownloadURLCreatesATokenWhenTheObjectHasNone(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let bucket = TestSupport.bucketName("tok")
        // Uploaded through GCS, the object has no download token.
        let gcs = Self.storage(emulator, firebase: false, bucket: bucket, route: route)
        let payload = Data("tokenless".utf8)
        _ = try await gcs.reference(withPath: "t.txt").putDataAsync(payload)
        let firebase = Self.storage(emulator, firebase: true, bucket: bucket, route: route)
        #expect(try await firebase.reference(withPath: "t.txt").getMetadata().downloadTokens.isEmpty)

        let url = try await firebase.reference(withPath: "t.txt").downloadURL()
        let token = try #require(
            URLComponents(url: url, resolvingAgainstBaseURL: false)?
                .queryItems?.first { $0.name == "token" }?.value)
        #expect(try await firebase.reference(withPath: "t.txt").getMetadata().downloadTokens == [token])
        let response = try await TestRoute.reader.execute(HTTPRequest(method: "GET", url: url), progress: nil)
        #expect(response.status == 200)
        #expect(response.body == payload)
    }

    @Test(arguments: ["emulator-gcs", "fake-gcs"], TestRoute.all)
    func gcsDownloadURLIsTheMediaURL(server: String, route: TestRoute) async throws {
        try await Self.withStorage(server, route) { storage in
            let payload = Data("media".utf8)
            let ref = storage.reference(withPath: "dir/m.txt")
            _ = try await ref.putDataAsync(payload)
            let url = try await ref.downloadURL()
            #expect(
                url.absoluteString
                    == "\(storage.endpoint.baseURL)/storage/v1/b/\(storage.bucket)/o/dir%2Fm.txt?alt=media")
            let response = try await TestRoute.reader.execute(HTTPRequest(method: "GET", url: url), progress: nil)
            #expect(response.status == 200)
            #expect(response.body == payload)
        }
    }

    // MARK: Listing

    @Test(arguments: servers, TestRoute.all)
    func listSeparatesItemsFromPrefixesAndPages(server: String, route: TestRoute) async throws {
        try await Self.withStorage(server, route) { storage in
            let names = [
                "top.txt", "photos/a.jpg", "photos/b.jpg", "photos/c.jpg", "photos/2024/x.jpg", "photos/2025/y.jpg",
                "other/z.txt",
            ]
            for name in names {
                _ = try await storage.reference(withPath: name).putDataAsync(Data(name.utf8))
            }
            let photos = storage.reference(withPath: "photos")
            let all = try await photos.listAll()
            #expect(all.items.map(\.fullPath) == ["photos/a.jpg", "photos/b.jpg", "photos/c.jpg"])
            #expect(all.prefixes.map(\.fullPath) == ["photos/2024", "photos/2025"])
            #expect(all.pageToken == nil)
            #expect(all.items.first == storage.reference(withPath: "photos/a.jpg"))

            let root = try await storage.reference().listAll()
            #expect(root.items.map(\.fullPath) == ["top.txt"])
            #expect(root.prefixes.map(\.fullPath) == ["other", "photos"])

            // Pages of 2: everything comes back once, in order.
            var seen: [String] = []
            var token: String?
            var pageCount = 0
            repeat {
                let page = try await photos.list(maxResults: 2, pageToken: token)
                // fake-gcs-server counts only items toward maxResults; GCS and Firebase count both.
                #expect((server == "fake-gcs" ? page.items.count : page.items.count + page.prefixes.count) <= 2)
                seen += page.items.map(\.fullPath) + page.prefixes.map(\.fullPath)
                token = page.pageToken
                pageCount += 1
            } while token != nil
            #expect(pageCount >= (server == "fake-gcs" ? 2 : 3))
            #expect(Set(seen) == Set(all.items.map(\.fullPath) + all.prefixes.map(\.fullPath)))
        }
    }

    @Test(arguments: servers)
    func listedMetadataIsWhatGetMetadataReads(server: String) async throws {
        try await Self.withStorage(server, .nativeHTTP) { storage in
            var metadata = StorageMetadata()
            metadata.contentType = "text/csv"
            metadata.customMetadata = ["owner": "ada", "n": "1"]
            let names = ["d/a.csv", "d/b.csv", "d/c.bin", "d/sub/x"]
            for (index, name) in names.enumerated() {
                let payload = Data(String(repeating: "x", count: 10 * (index + 1)).utf8)
                _ = try await storage.reference(withPath: name)
                    .putDataAsync(payload, metadata: name.hasSuffix("csv") ? metadata : nil)
            }
            let folder = storage.reference(withPath: "d")
            let page = try await folder.list(maxResults: 1000)
            let all = try await folder.listAll()
            #expect(page.items.map(\.fullPath) == ["d/a.csv", "d/b.csv", "d/c.bin"])
            for item in page.items {
                let read = try await item.getMetadata()
                guard server != "emulator-firebase" else {
                    // v0 listings carry names only.
                    #expect(page.metadata(for: item) == nil && all.metadata(for: item) == nil)
                    continue
                }
                let listed = try #require(page.metadata(for: item), "\(item)")
                #expect(listed.path == read.path && listed.name == read.name)
                #expect(listed.size == read.size && listed.size > 0)
                #expect(listed.generation == read.generation && listed.generation != nil)
                #expect(listed.metageneration == read.metageneration)
                #expect(listed.contentType == read.contentType)
                #expect(listed.customMetadata == read.customMetadata)
                #expect(listed.crc32c == read.crc32c && listed.crc32c != nil)
                #expect(listed.md5Hash == read.md5Hash)
                #expect(listed.updated == read.updated && listed.updated != nil)
                #expect(listed.timeCreated == read.timeCreated)
                #expect(all.metadata(for: item) == listed)
            }
            if server != "emulator-firebase" {
                #expect(page.metadata(for: storage.reference(withPath: "d/a.csv"))?.customMetadata["owner"] == "ada")
            }
        }
    }

    @Test func listRejectsMaxResultsOutsideOneToAThousand() async throws {
        let storage = Storage(bucket: "b", endpoint: .gcs(URL(string: "http://127.0.0.1:9")!))
        for bad in [0, -1, 1001] {
            let error = await #expect(throws: StorageError.self) { try await storage.reference().list(maxResults: bad) }
            #expect(error?.code == .invalidArgument)
        }
        var pages = storage.reference().pages(maxResults: 0).makeAsyncIterator()
        let error = await #expect(throws: StorageError.self) { _ = try await pages.next() }
        #expect(error?.code == .invalidArgument)
        #expect(try await pages.next() == nil, "the sequence ends after its error")
    }

    @Test(arguments: TestRoute.all)
    func listAllAndPagesCoverThousandsOfObjects(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let bucket = TestSupport.bucketName("many")
        let gcs = Self.storage(emulator, firebase: false, bucket: bucket, route: route)
        let count = 2_600
        let names = (0..<count).map { String(format: "many/%05d.txt", $0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            // 16 uploads in flight at a time.
            var next = 0
            func add() {
                let name = names[next]
                next += 1
                group.addTask { _ = try await gcs.reference(withPath: name).putDataAsync(Data(name.utf8)) }
            }
            for _ in 0..<16 { add() }
            while try await group.next() != nil {
                if next < names.count { add() }
            }
        }
        // The same objects, listed through both protocols.
        for storage in [gcs, Self.storage(emulator, firebase: true, bucket: bucket, route: route)] {
            let all = try await storage.reference(withPath: "many").listAll()
            #expect(all.items.count == count)
            #expect(all.items.map(\.fullPath) == names)

            var pageSizes: [Int] = []
            var listed: [String] = []
            for try await page in storage.reference(withPath: "many").pages(maxResults: 1000) {
                pageSizes.append(page.items.count)
                listed += page.items.map(\.fullPath)
            }
            #expect(pageSizes == [1000, 1000, 600])
            #expect(listed == names)
            // listAll keeps each page's metadata: all of it on GCS, none on v0.
            let withMetadata = all.items.filter { all.metadata(for: $0)?.path == $0.fullPath }
            #expect(withMetadata.count == (storage.endpoint == gcs.endpoint ? count : 0))
        }
    }
}
