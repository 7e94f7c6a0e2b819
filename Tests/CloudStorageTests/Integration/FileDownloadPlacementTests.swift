import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import SystemCalls
import Testing

@testable import CloudStorageCLI

/// Where a file download puts its bytes, and what it leaves: the partial files of downloads
/// that died are removed by the next download of the same file (never one still being
/// written) and never uploaded; a replaced file keeps its mode; a copy below a directory
/// never writes through a symbolic link it did not make.
///
/// Serialized because `cp` takes over SIGINT and SIGTERM while it runs.
@Suite("file downloads: partial files, modes and links", .serialized, .timeLimit(.minutes(5)))
struct FileDownloadPlacementTests {
    static let bytes = Data("the object's bytes\n".utf8)

    /// An emulator holding `demo/a.txt` and `demo/p/sub/x.txt`.
    static func emulator() async throws -> StorageEmulator {
        let emulator = try CopyDirectionsTests.emulator()
        try await CopyDirectionsTests.put(["a.txt": bytes, "p/sub/x.txt": bytes, "p/y.txt": bytes], in: emulator)
        return emulator
    }

    static func storage(_ emulator: StorageEmulator) -> Storage {
        Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
    }

    static func names(in directory: URL) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: directory.path))
    }

    @Test func theNextDownloadRemovesPartialFilesOfDeadDownloadsButNotOneBeingWritten() async throws {
        let emulator = try await Self.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // What `kill -9` of two downloads at once leaves: partial files nobody holds locked.
        for dead in [".a.txt.00000000.download", ".a.txt.00000005.download"] {
            try Data(count: 4096).write(to: directory.appendingPathComponent(dead))
        }
        // A download still writing holds its partial file locked.
        let live = ".a.txt.00000001.download"
        try Data(count: 10).write(to: directory.appendingPathComponent(live))
        let held = try SystemCall.open(directory.appendingPathComponent(live).path, [.readOnly, .closeOnExec])
        defer { try? SystemCall.close(held) }
        #expect(try SystemCall.lockExclusively(held, waiting: false))
        // Another file's partial, and a file that only looks alike, are not this download's.
        let other = ".b.txt.00000000.download"
        try Data(count: 10).write(to: directory.appendingPathComponent(other))
        try Data(count: 10).write(to: directory.appendingPathComponent(".a.txt.notmine.download"))

        let target = directory.appendingPathComponent("a.txt")
        #expect(try await Self.storage(emulator).reference(withPath: "a.txt").writeAsync(toFile: target) == target)
        #expect(try Data(contentsOf: target) == Self.bytes)
        #expect(try Self.names(in: directory) == ["a.txt", live, other, ".a.txt.notmine.download"])
    }

    @Test func aDirectoryUploadNeverTakesAPartialDownloadForAFile() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.bytes.write(to: directory.appendingPathComponent("kept.txt"))
        try Self.bytes.write(to: directory.appendingPathComponent(".kept.txt.0123ABCD.download"))
        let tree = try LocalDirectoryTree.walkNow(directory)
        #expect(tree.files.map(\.relativePath) == ["kept.txt"])
        #expect(tree.skipped.map(\.relativePath) == [".kept.txt.0123ABCD.download"])
    }

    @Test func aReplacedFileKeepsItsModeAndANewFileFollowsTheUmask() async throws {
        let emulator = try await Self.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ref = Self.storage(emulator).reference(withPath: "a.txt")
        let secret = directory.appendingPathComponent("secret.txt")
        try Data("old".utf8).write(to: secret)
        try SystemCall.setPermissions(secret.path, 0o600)
        _ = try await ref.writeAsync(toFile: secret)
        #expect(try Data(contentsOf: secret) == Self.bytes)
        #expect(try SystemCall.status(path: secret.path).permissions == 0o600)

        let fresh = directory.appendingPathComponent("fresh.txt")
        _ = try await ref.writeAsync(toFile: fresh)
        #expect(try SystemCall.status(path: fresh.path).permissions == 0o666 & ~SystemCall.currentUmask())
    }

    /// `DIR/p/sub` is a link to a directory outside DIR: the copy of `p/sub/x.txt` is refused
    /// with the link's path, nothing is written outside, and the other objects are copied: by
    /// the SDK's `downloadObjects`, `cp -r` and `rsync -r`.
    @Test(arguments: ["downloadObjects", "cp", "rsync"])
    func aRecursiveCopyNeverWritesThroughALinkInTheDestination(by copier: String) async throws {
        let emulator = try await Self.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outside = directory.appendingPathComponent("outside")
        let root = directory.appendingPathComponent("copy")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("p"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: root.appendingPathComponent("p/sub"), withDestinationURL: outside)

        let link = root.appendingPathComponent("p/sub").path
        switch copier {
        case "cp":
            let (status, output) = try await CopyDirectionsTests.cp(
                ["--quiet", "-r", "gs://demo/p", root.path], emulator)
            #expect(status == .localFile)
            #expect(CopyDirectionsTests.text(output).contains("\(link) is a symbolic link"))
        case "rsync":
            let (status, _) = try await RsyncCommandTests.rsync(
                ["--quiet", "-r", "gs://demo/p", root.appendingPathComponent("p").path], emulator)
            #expect(status == .localFile)
        default:
            let report = try await StorageTransferManager(storage: Self.storage(emulator))
                .downloadObjects(withPrefix: "p/", to: root.appendingPathComponent("p")).value
            let failed = report.outcomes.compactMap { outcome -> StorageError? in
                if case .failed(let error) = outcome.result { return error }
                return nil
            }
            #expect(failed.map(\.code) == [.unwritableFile])
            #expect(failed.first?.message.contains("\(link) is a symbolic link") == true)
        }
        #expect(try Self.names(in: outside).isEmpty, "nothing written through the link")
        #expect(try Data(contentsOf: root.appendingPathComponent("p/y.txt")) == Self.bytes)
    }
}
