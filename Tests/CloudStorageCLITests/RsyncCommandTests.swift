import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cloud-storage rsync`, run in-process against the emulator: what it copies, skips and
/// deletes in each direction, and that `--dry-run` changes nothing.
@Suite("cloud-storage rsync", .timeLimit(.minutes(10)))
struct RsyncCommandTests {
    static func rsync(_ words: [String], _ emulator: StorageEmulator) async throws -> (ExitCode, String) {
        let command = try RsyncCommand(words + ["--endpoint", emulator.baseURL.absoluteString], environment: [:])
        return try await ObjectCommandsTests.capture { await command.run(output: $0) }
    }

    /// Every object of `bucket` with its bytes, and its generation (a copy writes a new one).
    static func objects(
        _ emulator: StorageEmulator, bucket: String = "demo"
    ) async throws -> [String: (data: Data, generation: Int64)] {
        let storage = Storage(bucket: bucket, endpoint: .gcs(emulator.baseURL))
        var found: [String: (Data, Int64)] = [:]
        for try await entry in storage.objects() {
            if case .object(let object, let metadata) = entry {
                found[object.fullPath] = (try await object.data(maxSize: 1 << 20), metadata?.generation ?? 0)
            }
        }
        return found
    }

    static func write(_ files: [String: String], in root: URL) throws {
        for (relative, text) in files {
            let url = root.appendingPathComponent(relative)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
    }

    @Test(
        "directory to bucket: new and changed files are copied, unchanged ones skipped by checksum, extras deleted only when asked"
    )
    func upload() async throws {
        let emulator = try ObjectCommandsTests.emulator()
        defer { emulator.stop() }
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try Self.write(
            ["same.txt": "same", "size.txt": "short", "content.txt": "aaaa", "sub/deep.txt": "deep"], in: root)
        try await ObjectCommandsTests.put(
            [
                "p/same.txt": Data("same".utf8), "p/size.txt": Data("longer".utf8), "p/content.txt": Data("bbbb".utf8),
                "p/extra.txt": Data("extra".utf8), "pq.txt": Data("not under p/".utf8),
            ],
            in: emulator)
        let before = try await Self.objects(emulator)

        // A dry run prints the plan and changes nothing.
        let (dryStatus, dryOutput) = try await Self.rsync(
            ["-r", "--dry-run", "--delete-unmatched-destination-objects", root.path, "gs://demo/p"], emulator)
        #expect(dryStatus == .success)
        #expect(dryOutput.contains("Would copy \(root.path)/content.txt to gs://demo/p/content.txt"), "\(dryOutput)")
        #expect(dryOutput.contains("Would delete gs://demo/p/extra.txt"), "\(dryOutput)")
        #expect(!dryOutput.contains("same.txt"), "\(dryOutput)")
        #expect(dryOutput.hasSuffix("Would copy 3, delete 1; 1 unchanged\n"), "\(dryOutput)")
        let afterDry = try await Self.objects(emulator)
        #expect(afterDry.mapValues(\.generation) == before.mapValues(\.generation))

        // Without -r only the top level; without the delete flag nothing is deleted.
        let (topStatus, topOutput) = try await Self.rsync([root.path, "gs://demo/p"], emulator)
        #expect(topStatus == .success)
        #expect(topOutput.hasSuffix("Copied 2, deleted 0; 1 unchanged\n"), "\(topOutput)")
        var stored = try await Self.objects(emulator)
        #expect(stored["p/sub/deep.txt"] == nil)
        #expect(stored["p/size.txt"]?.data == Data("short".utf8))
        #expect(stored["p/content.txt"]?.data == Data("aaaa".utf8), "same size, other bytes: found by CRC32C")
        #expect(stored["p/same.txt"]?.generation == before["p/same.txt"]?.generation, "unchanged: not copied again")

        let (status, output) = try await Self.rsync(["-r", "--delete-unmatched", root.path, "gs://demo/p/"], emulator)
        #expect(status == .success)
        #expect(output.contains("Deleted gs://demo/p/extra.txt"), "\(output)")
        #expect(output.hasSuffix("Copied 1, deleted 1; 3 unchanged\n"), "\(output)")
        stored = try await Self.objects(emulator)
        #expect(stored.keys.sorted() == ["p/content.txt", "p/same.txt", "p/size.txt", "p/sub/deep.txt", "pq.txt"])
        #expect(stored["p/sub/deep.txt"]?.data == Data("deep".utf8))
    }

    @Test("bucket to directory: copies what differs, deletes exactly the extra files when asked")
    func download() async throws {
        let emulator = try ObjectCommandsTests.emulator()
        defer { emulator.stop() }
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await ObjectCommandsTests.put(
            ["d/a.txt": Data("new".utf8), "d/b/c.txt": Data("changed".utf8), "d/same.txt": Data("same".utf8)],
            in: emulator)
        try Self.write(["b/c.txt": "chanGED", "same.txt": "same", "stale.txt": "stale"], in: root)

        let (status, output) = try await Self.rsync(["-r", "--delete-unmatched", "gs://demo/d", root.path], emulator)
        #expect(status == .success, "\(output)")
        #expect(output.hasSuffix("Copied 2, deleted 1; 1 unchanged\n"), "\(output)")
        #expect(
            try TestSupport.files(below: root) == [
                "a.txt": Data("new".utf8), "b/c.txt": Data("changed".utf8), "same.txt": Data("same".utf8),
            ])
        // In sync now: nothing more to do.
        let (again, againOutput) = try await Self.rsync(["-r", "gs://demo/d", root.path], emulator)
        #expect(again == .success)
        #expect(againOutput == "Copied 0, deleted 0; 3 unchanged\n")
    }

    @Test("bucket to bucket copies on the server; --mtime compares recorded modification times")
    func bucketToBucket() async throws {
        let emulator = try ObjectCommandsTests.emulator()
        defer { emulator.stop() }
        try emulator.createBucket("other")
        try await ObjectCommandsTests.put(["s/a": Data("a".utf8), "s/b/c": Data("c".utf8)], in: emulator)
        try await ObjectCommandsTests.put(
            ["t/b/c": Data("c".utf8), "t/x": Data("x".utf8)], in: emulator, bucket: "other")
        let (status, output) = try await Self.rsync(
            ["-r", "--delete-unmatched-destination-objects", "gs://demo/s", "gs://other/t"], emulator)
        #expect(status == .success, "\(output)")
        #expect(output.hasSuffix("Copied 1, deleted 1; 1 unchanged\n"), "\(output)")
        let other = try await Self.objects(emulator, bucket: "other")
        #expect(other.mapValues(\.data) == ["t/a": Data("a".utf8), "t/b/c": Data("c".utf8)])

        // Uploads record the file's time; an unchanged time and size is skipped without reading the file.
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try Self.write(["m.txt": "mmmm"], in: root)
        #expect(try await Self.rsync([root.path, "gs://demo/m", "--mtime"], emulator).0 == .success)
        try Data("nnnn".utf8).write(to: root.appendingPathComponent("m.txt"))
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 1_000_000)],
            ofItemAtPath: root.appendingPathComponent("m.txt").path)
        let (changed, changedOutput) = try await Self.rsync([root.path, "gs://demo/m", "--mtime"], emulator)
        #expect(changed == .success)
        #expect(changedOutput.hasSuffix("Copied 1, deleted 0; 0 unchanged\n"), "\(changedOutput)")
        let (same, sameOutput) = try await Self.rsync([root.path, "gs://demo/m", "--mtime"], emulator)
        #expect(same == .success)
        #expect(sameOutput == "Copied 0, deleted 0; 1 unchanged\n")
    }

    @Test("two directories, a generation, or both comparisons are usage errors")
    func usage() throws {
        #expect(throws: UsageError.self) { try RsyncCommand(["/a", "/b"], environment: [:]) }
        #expect(throws: UsageError.self) { try RsyncCommand(["gs://b/x#12", "/b"], environment: [:]) }
        #expect(throws: UsageError.self) {
            try RsyncCommand(["gs://b/x", "/b", "--mtime", "--checksums-only"], environment: [:])
        }
    }
}

extension RsyncCommandTests {
    /// SIGINT or SIGTERM stops `rsync` as it stops `cp -r`: the upload under way is cancelled
    /// (no object appears) and the tool exits with the status the signal calls for, rather
    /// than dying of the signal with the upload left to the server.
    @Test(arguments: [(SIGINT, ExitCode.interrupted), (SIGTERM, ExitCode.terminated)])
    func aSignalCancelsTheTransfersAndExitsWithItsStatus(signal: Int32, expected: ExitCode) async throws {
        // Request 1 lists the destination, 2 starts the file's upload session (above 8 MiB),
        // 3 is held after 100K until the client closes it, so nothing can finish before the signal.
        let emulator = try CopyDirectionsTests.emulator { $0.faults = ["pass", "pass", "stall-after-100K"] }
        defer { emulator.stop() }
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent("tree")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        try TestSupport.payload(size: 9 * 1024 * 1024, seed: 1).write(to: directory.appendingPathComponent("1.bin"))
        // A process of its own, started with SIGINT and SIGTERM at their defaults.
        let (process, errors) = try CopyResumeTests.launch(
            ["rsync", "--quiet", "--endpoint", emulator.baseURL.absoluteString, directory.path, "gs://demo/tree"],
            environment: ["HOME": root.path])
        defer { process.send(SIGKILL) }
        try await CopyResumeTests.wait(for: process) { emulator.bytesReceived >= 100 * 1024 }
        process.send(signal)
        let (status, stderr) = try await CopyResumeTests.finish(process, errors)
        #expect(process.terminationReason == .exit, "\(stderr)")
        #expect(status == expected.rawValue, "\(stderr)")
        // Cancelled, not abandoned after the grace period: the upload ended when told to.
        #expect(stderr == "cloud-storage: interrupted\n")
        #expect(try await Self.objects(emulator).isEmpty)
    }
}
