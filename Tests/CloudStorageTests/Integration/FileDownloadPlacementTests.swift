import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import SystemCalls
import Testing

/// Where a file download puts its bytes, and what it leaves: the partial files of downloads
/// that died are removed by the next download of the same file (never one still being
/// written) and never uploaded; a replaced file keeps its mode. (That a copy below a directory
/// never writes through a symbolic link it did not make is tested with `cp -r` and `rsync -r`
/// in CloudStorageCLITests, `CopyDirectionsTests`.)
@Suite("file downloads: partial files and modes", .timeLimit(.minutes(5)))
struct FileDownloadPlacementTests {
    static let bytes = Data("the object's bytes\n".utf8)

    /// An emulator holding `demo/a.txt`.
    static func emulator() async throws -> StorageEmulator {
        let emulator = try StorageEmulator.start(StorageEmulator.Configuration())
        _ = try await storage(emulator).reference(withPath: "a.txt").putDataAsync(bytes)
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
}
