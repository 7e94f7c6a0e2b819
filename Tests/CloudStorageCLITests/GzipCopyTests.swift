import CloudStorage
import Foundation
import HTTP1
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `cp -z EXTS` / `-Z` store files gzip-compressed; `cp` and `cat` give the original bytes back.
///
/// Serialized because `cp` takes over SIGINT and SIGTERM while it runs.
@Suite("cloud-storage cp -z and gzip objects", .serialized, .timeLimit(.minutes(10)))
struct GzipCopyTests {
    static let original = Data((0..<20_000).map { "const value\($0) = \($0);\n" }.joined().utf8)

    /// The stored bytes and metadata of `gs://demo/NAME`.
    static func stored(_ emulator: StorageEmulator, _ name: String) async throws -> (Data, StorageMetadata) {
        var configuration = StorageConfiguration()
        configuration.decompressesDownloads = false
        let ref = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL), configuration: configuration)
            .reference(withPath: name)
        return (try await ref.data(maxSize: 64 << 20), try await ref.getMetadata())
    }

    @Test func cpZStoresGzipAndCpAndCatGiveTheOriginalBack() async throws {
        let emulator = try CopyDirectionsTests.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("app.js")
        try Self.original.write(to: source)

        #expect(
            try await CopyDirectionsTests.cp(["--quiet", "-Z", source.path, "gs://demo/site/"], emulator).0 == .success)
        let (bytes, metadata) = try await Self.stored(emulator, "site/app.js")
        #expect(metadata.contentEncoding == "gzip")
        #expect(metadata.contentType == "text/javascript")
        #expect(bytes.count < Self.original.count / 4)
        #expect(Data(try bytes.withUnsafeBytes { try GzipDecoder.decode($0) }) == Self.original ? true : false)

        let copy = directory.appendingPathComponent("copy.js")
        #expect(
            try await CopyDirectionsTests.cp(["--quiet", "gs://demo/site/app.js", copy.path], emulator).0 == .success)
        #expect(try Data(contentsOf: copy) == Self.original ? true : false)
        let (toStdout, streamed) = try await CopyDirectionsTests.cp(
            ["--quiet", "gs://demo/site/app.js", "-"], emulator)
        #expect(toStdout == .success && streamed == Self.original ? true : false)
        let (catStatus, cat) = try await ObjectCommandsTests.run(["cat", "gs://demo/site/app.js"], emulator)
        #expect(catStatus == .success && Data(cat.utf8) == Self.original ? true : false)
    }

    @Test func cpZLowercaseCompressesOnlyTheListedExtensions() async throws {
        let emulator = try CopyDirectionsTests.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let tree = directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try Self.original.write(to: tree.appendingPathComponent("a.CSS"))
        try Self.original.write(to: tree.appendingPathComponent("b.png"))
        let (status, _) = try await CopyDirectionsTests.cp(
            ["--quiet", "-r", "-z", "css,.js", tree.path, "gs://demo/"], emulator)
        #expect(status == .success)
        #expect(try await Self.stored(emulator, "site/a.CSS").1.contentEncoding == "gzip")
        let (png, pngMetadata) = try await Self.stored(emulator, "site/b.png")
        #expect(pngMetadata.contentEncoding == nil)
        #expect(png == Self.original ? true : false)
    }

    @Test func zOnADownloadIsAUsageError() throws {
        #expect(throws: UsageError.self) { try CopyCommand(["-Z", "gs://demo/a", "/tmp/a"], environment: [:]) }
        #expect(throws: UsageError.self) { try CopyCommand(["-z", "", "/tmp/a", "gs://demo/a"], environment: [:]) }
        #expect(throws: UsageError.self) {
            try CopyCommand(["-z", "js", "-Z", "/tmp/a", "gs://demo/a"], environment: [:])
        }
    }

    @Test func theSDKCompressesDataAndFilesOnTheWay() async throws {
        let emulator = try CopyDirectionsTests.emulator()
        defer { emulator.stop() }
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        var metadata = StorageMetadata()
        metadata.contentType = "application/json"
        let fromData = try await storage.reference(withPath: "d.json")
            .putData(Self.original, metadata: metadata, compression: .gzip).value
        #expect(fromData.contentEncoding == "gzip" && fromData.contentType == "application/json")
        #expect(fromData.size < Int64(Self.original.count / 4))
        #expect(try await storage.reference(withPath: "d.json").data(maxSize: 64 << 20) == Self.original)

        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("f.txt")
        try Self.original.write(to: file)
        let fromFile = try await storage.reference(withPath: "f.txt").putFile(from: file, compression: .gzip).value
        #expect(fromFile.contentEncoding == "gzip" && fromFile.contentType == "text/plain")
        let (bytes, _) = try await Self.stored(emulator, "f.txt")
        #expect(bytes.count == Int(fromData.size), "the same bytes compress the same way (deterministic)")
        #expect(try await storage.reference(withPath: "f.txt").data(maxSize: 64 << 20) == Self.original)

        // An empty file is a valid, empty gzip member.
        let empty = directory.appendingPathComponent("empty.txt")
        try Data().write(to: empty)
        _ = try await storage.reference(withPath: "e.txt").putFile(from: empty, compression: .gzip).value
        #expect(try await storage.reference(withPath: "e.txt").data(maxSize: 10).isEmpty)
    }
}
