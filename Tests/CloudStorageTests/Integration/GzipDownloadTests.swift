import Foundation
import HTTP1
import HTTPTestServers
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage

/// Downloads of objects stored gzip-compressed (`Content-Encoding: gzip`): the SDK asks for the
/// stored bytes, checks their CRC32C and inflates them; it survives servers (and transports)
/// that decompress anyway, resumes either way without a wrong or repeated byte, and fails bad
/// gzip with ``StorageErrorCode/undecodableContent``.
@Suite("gzip downloads", .timeLimit(.minutes(10)))
struct GzipDownloadTests {
    /// Text that compresses well: several 64 KiB inflater pieces, a few stored ones.
    static let original = Data((0..<40_000).map { "line \($0) of a compressible object\n" }.joined().utf8)
    static let stored: Data = {
        let bytes = original.withUnsafeBytes { try? GzipEncoder.encode($0) }
        return Data(bytes ?? [])
    }()

    static func storage(
        _ baseURL: URL, firebase: Bool = false, route: TestRoute, decompress: Bool = true
    ) -> Storage {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        configuration.decompressesDownloads = decompress
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(10))
            try $0.retry.setMaxDownloadTime(.seconds(30))
        }
        return Storage(
            bucket: TestSupport.bucketName("gz"),
            endpoint: firebase ? .firebase(baseURL) : .gcs(baseURL),
            authorization: firebase ? .emulatorOwner : .none, configuration: configuration)
    }

    /// Uploads `bytes` as they are, declared gzip-encoded.
    static func putGzip(_ ref: StorageReference, _ bytes: Data, cacheControl: String? = nil) async throws {
        var metadata = StorageMetadata()
        metadata.contentEncoding = "gzip"
        metadata.contentType = "text/plain"
        metadata.cacheControl = cacheControl
        _ = try await ref.putDataAsync(bytes, metadata: metadata)
    }

    static func streamed(_ ref: StorageReference) async throws -> Data {
        var data = Data()
        for try await chunk in ref.dataStream() { data.append(chunk) }
        return data
    }

    @Test(arguments: TestRoute.all, [false, true])
    func everyDownloadGivesTheOriginalBytes(route: TestRoute, firebase: Bool) async throws {
        #expect(Self.stored.count < Self.original.count / 4, "the fixture compresses")
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator.baseURL, firebase: firebase, route: route)
        let ref = storage.reference(withPath: "web/app.js")
        try await Self.putGzip(ref, Self.stored)

        #expect(try await ref.data(maxSize: 10 << 20) == Self.original)
        #expect(try await Self.streamed(ref) == Self.original)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("app.js")
        let task = ref.write(toFile: target)
        #expect(try await task.value == target)
        #expect(try Data(contentsOf: target) == Self.original)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["app.js"])
    }

    @Test(arguments: TestRoute.all)
    func noTransformObjectsAndPlainObjectsToo(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let storage = Self.storage(emulator.baseURL, route: route)
        let pinned = storage.reference(withPath: "pinned.txt")
        try await Self.putGzip(pinned, Self.stored, cacheControl: "public, no-transform")
        #expect(try await pinned.data(maxSize: 10 << 20) == Self.original)
        let plain = storage.reference(withPath: "plain.txt")
        _ = try await plain.putDataAsync(Self.stored)
        #expect(try await plain.data(maxSize: 10 << 20) == Self.stored, "a .gz stored plainly stays compressed")
    }

    @Test(arguments: TestRoute.all)
    func theRawOptionGivesTheStoredBytes(route: TestRoute) async throws {
        let emulator = try route.startEmulator()
        defer { emulator.stop() }
        let ref = Self.storage(emulator.baseURL, route: route, decompress: false).reference(withPath: "a.txt")
        try await Self.putGzip(ref, Self.stored)
        if route.transport == .urlSession {
            // URLSession decodes gzip itself: the stored bytes cannot be had, and that is said.
            let error = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 10 << 20) }
            #expect(error?.code == .protocolViolation)
        } else {
            #expect(try await ref.data(maxSize: 10 << 20) == Self.stored)
            #expect(try await Self.streamed(ref) == Self.stored)
        }
    }

    @Test func maxSizeHoldsTheDecompressedBytes() async throws {
        let emulator = try TestRoute.nativeHTTP.startEmulator()
        defer { emulator.stop() }
        let ref = Self.storage(emulator.baseURL, route: .nativeHTTP).reference(withPath: "a.txt")
        try await Self.putGzip(ref, Self.stored)
        let limit = Int64(Self.stored.count) * 2
        let error = await #expect(throws: StorageError.self) { try await ref.data(maxSize: limit) }
        #expect(error?.code == .downloadSizeExceeded, "the stored size fits; the object does not")
        #expect(try await ref.data(maxSize: Int64(Self.original.count)) == Self.original)
    }

    @Test(arguments: [
        ("garbage", Data("this is not gzip at all, though it says so".utf8)),
        ("truncated", stored.prefix(stored.count - 9)),
        ("trailing garbage", stored + Data("junk".utf8)),
    ])
    func badGzipWithAMatchingChecksumIsUndecodable(label: String, bytes: Data) async throws {
        let emulator = try TestRoute.nativeHTTP.startEmulator()
        defer { emulator.stop() }
        let ref = Self.storage(emulator.baseURL, route: .nativeHTTP).reference(withPath: "bad.txt")
        try await Self.putGzip(ref, bytes)
        var error = await #expect(throws: StorageError.self, "\(label)") { try await ref.data(maxSize: 10 << 20) }
        #expect(error?.code == .undecodableContent, "\(label)")
        error = await #expect(throws: StorageError.self, "\(label)") { _ = try await Self.streamed(ref) }
        #expect(error?.code == .undecodableContent, "\(label)")
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        error = await #expect(throws: StorageError.self, "\(label)") {
            try await ref.writeAsync(toFile: directory.appendingPathComponent("bad.txt"))
        }
        #expect(error?.code == .undecodableContent, "\(label)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "no file, no temporary")
    }

    @Test func concatenatedMembersDecodeAsOne() async throws {
        let emulator = try TestRoute.nativeHTTP.startEmulator()
        defer { emulator.stop() }
        let ref = Self.storage(emulator.baseURL, route: .nativeHTTP).reference(withPath: "two.txt")
        let second = Data("and a second member\n".utf8)
        let bytes = Self.stored + Data(try second.withUnsafeBytes { try GzipEncoder.encode($0) })
        try await Self.putGzip(ref, bytes)
        #expect(try await ref.data(maxSize: 10 << 20) == Self.original + second)
    }

    // MARK: fake-gcs-server

    /// fake-gcs-server stores `Content-Encoding: gzip` objects, and decompresses them for clients that
    /// do not accept gzip; the SDK gets the original bytes either way, and compressed uploads read back.
    @Test(arguments: TestRoute.all.filter { $0.scheme == .http })
    func fakeGCSServerGzipObjectsRoundTrip(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "gzip", route: route)
        let ref = storage.reference(withPath: "web/app.js")
        try await Self.putGzip(ref, Self.stored)
        #expect(try await ref.data(maxSize: 10 << 20) == Self.original)
        #expect(try await Self.streamed(ref) == Self.original)
        let compressed = storage.reference(withPath: "web/compressed.txt")
        let stored = try await compressed.putData(Self.original, compression: .gzip).value
        #expect(stored.contentEncoding == "gzip")
        #expect(try await compressed.data(maxSize: 10 << 20) == Self.original)
    }

    // MARK: Scripted servers

    /// How a scripted server serves the gzip object.
    enum Serving: Sendable {
        /// The stored bytes with `Content-Encoding: gzip`, honouring `Range` (as Cloud Storage
        /// does for `Accept-Encoding: gzip`).
        case stored
        /// Decompressed, `Range` ignored, no `Content-Length` (decompressive transcoding,
        /// whatever the request asked).
        case transcoded
        /// An object stored as it is (`x-goog-stored-content-encoding: identity`, the original
        /// bytes), compressed on the way out (`Content-Encoding: gzip`), `Range` ignored.
        case compressedInTransit
    }

    /// Serves the gzip object `o`: the first GET's body is cut after `cut` bytes by a reset once
    /// `resetWhen` is signalled; `crc32c` is what it claims for the stored bytes.
    static func gzipServer(
        _ serving: Serving, cut: Int, crc32c: UInt32, ranges: DownloadTests.RangeLog, resetWhen: DispatchSemaphore,
        scheme: TestRoute.Scheme
    ) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer(scheme: scheme) { connection, index in
            guard let (head, _) = connection.readRequest() else { return }
            let range = head.headers["Range"]
            ranges.values.withLock { $0.append(range) }
            var fields =
                "x-goog-hash: crc32c=\(CRC32CEncoding.base64(crc32c))\r\nx-goog-generation: 7\r\n"
                + (serving == .compressedInTransit
                    ? "x-goog-stored-content-encoding: identity\r\nx-goog-stored-content-length: \(original.count)\r\n"
                    : "x-goog-stored-content-encoding: gzip\r\nx-goog-stored-content-length: \(stored.count)\r\n")
            let body: Data
            var status = "200 OK"
            switch serving {
            case .compressedInTransit:
                body = stored
                fields += "Content-Encoding: gzip\r\nContent-Length: \(body.count)\r\n"
            case .transcoded:
                body = original
                fields += "Connection: close\r\n"
            case .stored:
                fields += "Content-Encoding: gzip\r\n"
                if let range, let start = Int(range.dropFirst("bytes=".count).dropLast()) {
                    status = "206 Partial Content"
                    fields += "Content-Range: bytes \(start)-\(stored.count - 1)/\(stored.count)\r\n"
                    body = stored[start...]
                } else {
                    body = stored
                }
                fields += "Content-Length: \(body.count)\r\n"
            }
            connection.write("HTTP/1.1 \(status)\r\n\(fields)\r\n")
            if index == 0 {
                connection.write([UInt8](body.prefix(cut)))
                // A hang guard: the bound only matters once the test has failed.
                _ = resetWhen.wait(timeout: .now() + 300)
                connection.reset()
            } else {
                connection.write([UInt8](body))
            }
        }
    }

    @Test(arguments: TestRoute.all.filter { $0.transport == .native }, [false, true])
    func aBrokenStoredDownloadResumesWithARangeOverTheStoredBytes(route: TestRoute, streamed: Bool) async throws {
        let ranges = DownloadTests.RangeLog()
        let received = DispatchSemaphore(value: 0)
        let server = try Self.gzipServer(
            .stored, cut: Self.stored.count / 2, crc32c: CRC32C.checksum(Self.stored), ranges: ranges,
            resetWhen: received, scheme: route.scheme)
        defer { server.stop() }
        defer { received.signal() }
        let ref = Self.storage(server.baseURL, route: route).reference(withPath: "o")
        let data = try await Self.download(ref, streamed: streamed, firstBytes: received)
        #expect(data == Self.original)
        let seen = ranges.values.withLock { $0 }
        #expect(seen.count == 2)
        let start = seen.last.flatMap { $0 }.flatMap { Int($0.dropFirst("bytes=".count).dropLast()) } ?? 0
        #expect(start > 0 && start <= Self.stored.count / 2, "the resumption continues the stored bytes")
    }

    @Test(arguments: TestRoute.all.filter { $0.transport == .native }, [false, true])
    func aBrokenTranscodedDownloadStartsAgainAndSkipsWhatArrived(route: TestRoute, streamed: Bool) async throws {
        let ranges = DownloadTests.RangeLog()
        let received = DispatchSemaphore(value: 0)
        // The CRC32C describes the stored bytes, which never arrive: it cannot be checked.
        let server = try Self.gzipServer(
            .transcoded, cut: Self.original.count / 3, crc32c: CRC32C.checksum(Self.stored), ranges: ranges,
            resetWhen: received, scheme: route.scheme)
        defer { server.stop() }
        defer { received.signal() }
        let ref = Self.storage(server.baseURL, route: route).reference(withPath: "o")
        let data = try await Self.download(ref, streamed: streamed, firstBytes: received)
        #expect(data == Self.original, "no byte twice, none missing")
        let seen = ranges.values.withLock { $0 }
        #expect(seen == [nil, nil], "a Range means nothing to a transcoding server: none is sent")
    }

    @Test func aWrongHashOverGzipBytesIsAChecksumMismatch() async throws {
        let ranges = DownloadTests.RangeLog()
        let received = DispatchSemaphore(value: 0)
        let server = try Self.gzipServer(
            .stored, cut: Self.stored.count / 2, crc32c: CRC32C.checksum(Self.stored) ^ 1, ranges: ranges,
            resetWhen: received, scheme: .http)
        defer { server.stop() }
        received.signal()
        let ref = Self.storage(server.baseURL, route: .nativeHTTP).reference(withPath: "o")
        let error = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 10 << 20) }
        #expect(error?.code == .nonMatchingChecksum)
    }

    /// A range addresses the stored bytes: a server that ignores it and sends the decoded object
    /// (as `cat -r` met one) is refused, never taken for the range's bytes.
    @Test(arguments: [false, true])
    func aRangeAnsweredWithDecodedBytesIsRefused(streamed: Bool) async throws {
        let received = DispatchSemaphore(value: 0)
        received.signal()
        let server = try Self.gzipServer(
            .transcoded, cut: Self.original.count, crc32c: CRC32C.checksum(Self.stored),
            ranges: DownloadTests.RangeLog(), resetWhen: received, scheme: .http)
        defer { server.stop() }
        let ref = Self.storage(server.baseURL, route: .nativeHTTP).reference(withPath: "o")
        let error = await #expect(throws: StorageError.self) {
            if streamed {
                for try await _ in ref.dataStream(range: Int64(0)...9) {}
            } else {
                _ = try await ref.data(maxSize: 10 << 20, range: Int64(0)...9)
            }
        }
        #expect(error?.code == .protocolViolation)
    }

    /// An object stored as it is and compressed on the way out: its CRC32C describes the inflated
    /// bytes, which are checked against it.
    @Test(arguments: [false, true])
    func bytesCompressedInTransitAreCheckedOnceInflated(hashMatches: Bool) async throws {
        let received = DispatchSemaphore(value: 0)
        received.signal()
        let crc = CRC32C.checksum(Self.original) ^ (hashMatches ? 0 : 1)
        let server = try Self.gzipServer(
            .compressedInTransit, cut: Self.stored.count / 2, crc32c: crc, ranges: DownloadTests.RangeLog(),
            resetWhen: received, scheme: .http)
        defer { server.stop() }
        let ref = Self.storage(server.baseURL, route: .nativeHTTP).reference(withPath: "o")
        if hashMatches {
            #expect(try await ref.data(maxSize: 10 << 20) == Self.original)
        } else {
            let error = await #expect(throws: StorageError.self) { try await ref.data(maxSize: 10 << 20) }
            #expect(error?.code == .nonMatchingChecksum)
        }
    }

    /// Downloads into memory (a task, rewindable) or through a stream (not rewindable),
    /// signalling `firstBytes` once some arrived.
    static func download(_ ref: StorageReference, streamed: Bool, firstBytes: DispatchSemaphore) async throws -> Data {
        if streamed {
            var data = Data()
            for try await chunk in ref.dataStream() {
                data.append(chunk)
                firstBytes.signal()
            }
            return data
        }
        let task = ref.getData(maxSize: 10 << 20)
        for await snapshot in task.snapshots where snapshot.progress.completedUnitCount > 0 {
            firstBytes.signal()
            break
        }
        return try await task.value
    }
}
