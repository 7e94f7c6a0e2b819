import Foundation
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage

/// `download()`: the object's metadata from the response that carries its bytes, then the bytes.
@Suite("Downloads that carry their metadata", .timeLimit(.minutes(10)))
struct DownloadWithMetadataTests {
    @Test(arguments: TestRoute.all, [false, true])
    func theHeadComesFirstFromTheSameResponse(route: TestRoute, firebase: Bool) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = DownloadTests.storage(emulator, firebase: firebase, route: route)
        let ref = storage.reference(withPath: "media/clip.txt")
        var metadata = StorageMetadata()
        metadata.contentType = "text/plain"
        metadata.cacheControl = "public, max-age=60"
        metadata.contentLanguage = "en"
        metadata.customMetadata = ["colour": "blue"]
        let payload = TestSupport.payload(size: 700_000, seed: 4)
        let stored = try await ref.putDataAsync(payload, metadata: metadata)

        let download = try await ref.download()
        #expect(download.metadata.generation == stored.generation)
        #expect(download.metadata.metageneration == stored.metageneration)
        #expect(download.metadata.size == Int64(payload.count))
        #expect(download.metadata.contentType == "text/plain")
        #expect(download.metadata.cacheControl == "public, max-age=60")
        #expect(download.metadata.contentLanguage == "en")
        #expect(download.metadata.crc32c == stored.crc32c)
        #expect(download.metadata.customMetadata == ["colour": "blue"])
        #expect(download.metadata.path == "media/clip.txt" && download.metadata.name == "clip.txt")
        var bytes = Data()
        for try await chunk in download.bytes { bytes.append(chunk) }
        #expect(bytes == payload ? true : false)
        // A second iteration is its own download of the same generation.
        var again = Data()
        for try await chunk in download.bytes { again.append(chunk) }
        #expect(again == payload ? true : false)
    }

    @Test func aGzipObjectSaysHowItIsStoredAndStreamsItsOriginalBytes() async throws {
        let emulator = try TestRoute.nativeHTTP.startEmulator()
        defer { emulator.stop() }
        let ref = DownloadTests.storage(emulator, firebase: false, route: .nativeHTTP).reference(withPath: "a.js")
        try await GzipDownloadTests.putGzip(ref, GzipDownloadTests.stored)
        let download = try await ref.download()
        #expect(download.metadata.contentEncoding == "gzip")
        #expect(download.metadata.size == Int64(GzipDownloadTests.stored.count))
        var bytes = Data()
        for try await chunk in download.bytes { bytes.append(chunk) }
        #expect(bytes == GzipDownloadTests.original ? true : false)
    }

    @Test func aMissingObjectThrowsBeforeAnyByte() async throws {
        let emulator = try TestRoute.nativeHTTP.startEmulator()
        defer { emulator.stop() }
        let storage = DownloadTests.storage(emulator, firebase: false, route: .nativeHTTP)
        _ = try await storage.reference(withPath: "present").putDataAsync(Data("x".utf8))
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "absent").download()
        }
        #expect(error?.code == .objectNotFound)
    }

    @Test func laterIterationsStayOnTheGenerationTheHeadNamed() async throws {
        let emulator = try TestRoute.nativeHTTP.startEmulator()
        defer { emulator.stop() }
        let ref = DownloadTests.storage(emulator, firebase: false, route: .nativeHTTP).reference(withPath: "v")
        _ = try await ref.putDataAsync(Data("first".utf8))
        let download = try await ref.download()
        var first = Data()
        for try await chunk in download.bytes { first.append(chunk) }
        #expect(first == Data("first".utf8))
        _ = try await ref.putDataAsync(Data("second".utf8))
        let error = await #expect(throws: StorageError.self) {
            for try await _ in download.bytes {}
        }
        #expect(error?.code == .preconditionFailed, "the object was replaced since its head was read")
    }
}
