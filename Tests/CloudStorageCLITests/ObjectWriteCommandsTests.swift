import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `cloud-storage cp` between objects, `mv`, `compose`, `update` and `hash`, and the write
/// options (`-n`, `--if-generation-match`, `--custom-metadata` and the headers), run in-process
/// against emulators the tests start; what was stored is read back from the server.
///
/// Serialized because `cp`, `mv` and `compose` take over SIGINT and SIGTERM while they run.
@Suite("cloud-storage cp gs://→gs://, mv, compose, update, hash", .serialized, .timeLimit(.minutes(10)))
struct ObjectWriteCommandsTests {
    // MARK: Helpers

    /// Runs `cloud-storage WORDS --endpoint EMULATOR` through the command types; status and output.
    static func run(_ words: [String], _ emulator: StorageEmulator) async throws -> (ExitCode, String) {
        let rest = Array(words.dropFirst()) + ["--endpoint", emulator.baseURL.absoluteString]
        let run: (OutputWriter) async -> ExitCode
        switch words[0] {
        case "cp":
            let parsed = try CopyCommand(rest, environment: [:])
            run = { await parsed.run(output: $0) }
        case "mv":
            let parsed = try CopyCommand(rest, environment: [:], moving: true)
            run = { await parsed.run(output: $0) }
        case "compose":
            let parsed = try ComposeCommand(rest, environment: [:])
            run = { await parsed.run(output: $0) }
        case "update":
            let parsed = try UpdateCommand(rest, environment: [:])
            run = { await parsed.run(output: $0) }
        default:
            let parsed = try HashCommand(rest, environment: [:])
            run = { await parsed.run(output: $0) }
        }
        return try await ObjectCommandsTests.capture(run)
    }

    /// The whole command line through `runCommandLine`, as the executable runs it.
    static func runTool(_ words: [String], _ emulator: StorageEmulator) async -> ExitCode {
        await runCommandLine(words + ["--endpoint", emulator.baseURL.absoluteString], environment: [:])
    }

    static func storage(_ emulator: StorageEmulator, _ bucket: String = "demo") -> Storage {
        Storage(bucket: bucket, endpoint: .gcs(emulator.baseURL))
    }

    static func put(
        _ name: String, _ data: Data, in emulator: StorageEmulator, bucket: String = "demo",
        metadata: StorageMetadata? = nil
    ) async throws -> StorageMetadata {
        try await storage(emulator, bucket).reference(objectName: name).putDataAsync(data, metadata: metadata)
    }

    static func bytes(_ emulator: StorageEmulator, _ name: String, bucket: String = "demo") async throws -> Data? {
        do {
            return try await storage(emulator, bucket).reference(objectName: name).data(maxSize: 16 << 20)
        } catch  where error.code == .objectNotFound {
            return nil
        }
    }

    static func metadata(
        _ emulator: StorageEmulator, _ name: String, bucket: String = "demo"
    ) async throws
        -> StorageMetadata
    {
        try await storage(emulator, bucket).reference(objectName: name).getMetadata()
    }

    static func emulator() throws -> StorageEmulator { try StorageEmulator.start() }

    // MARK: cp between objects

    /// The copy is a rewrite on the server: the emulator receives no more body bytes than the
    /// rewrite's small requests, where a copy through this process would upload the object again.
    @Test func cpBetweenObjectsRunsOnTheServerWithinAndAcrossBuckets() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let data = TestSupport.payload(size: 300 * 1024, seed: 3)
        var source = StorageMetadata()
        source.contentType = "text/plain"
        source.customMetadata = ["a": "1"]
        _ = try await Self.put("src/a.bin", data, in: emulator, metadata: source)
        try emulator.createBucket("other")
        let before = emulator.bytesReceived

        let (same, sameOutput) = try await Self.run(
            ["cp", "--quiet", "gs://demo/src/a.bin", "gs://demo/dst/"], emulator)
        #expect(same == .success, "\(sameOutput)")
        #expect(sameOutput == "Copied gs://demo/src/a.bin to gs://demo/dst/a.bin (\(data.count) bytes)\n")
        let (across, _) = try await Self.run(["cp", "--quiet", "gs://demo/src/a.bin", "gs://other/b.bin"], emulator)
        #expect(across == .success)
        #expect(emulator.bytesReceived - before < 4096, "no object bytes went through the process")

        #expect(try await Self.bytes(emulator, "dst/a.bin") == data)
        #expect(try await Self.bytes(emulator, "b.bin", bucket: "other") == data)
        // Without metadata options the copy keeps the source's metadata.
        let kept = try await Self.metadata(emulator, "b.bin", bucket: "other")
        #expect(kept.contentType == "text/plain" && kept.customMetadata == ["a": "1"])
    }

    /// Metadata options on a copy replace the source's metadata as a whole (Cloud Storage's rule).
    @Test func cpBetweenObjectsWithMetadataOptionsReplacesTheSourcesMetadata() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        var source = StorageMetadata()
        source.contentType = "text/plain"
        source.customMetadata = ["a": "1"]
        _ = try await Self.put("a.txt", Data("abc".utf8), in: emulator, metadata: source)
        let (status, _) = try await Self.run(
            [
                "cp", "--custom-metadata", "b=2", "--custom-metadata=empty=", "--cache-control", "no-store",
                "--content-disposition", "attachment", "gs://demo/a.txt", "gs://demo/b.txt",
            ], emulator)
        #expect(status == .success)
        let copied = try await Self.metadata(emulator, "b.txt")
        #expect(copied.customMetadata == ["b": "2", "empty": ""])
        #expect(copied.cacheControl == "no-store" && copied.contentDisposition == "attachment")
        #expect(copied.contentType != "text/plain")
    }

    @Test func cpRecursiveBetweenBucketsCopiesEveryObjectOnTheServer() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try emulator.createBucket("backup")
        let objects = ["logs/a.txt": "a", "logs/sub/b.txt": "bb", "logsx/c.txt": "not below logs/"]
        for (name, text) in objects { _ = try await Self.put(name, Data(text.utf8), in: emulator) }
        let before = emulator.bytesReceived
        let (status, output) = try await Self.run(["cp", "-r", "--quiet", "gs://demo/logs", "gs://backup/"], emulator)
        #expect(status == .success, "\(output)")
        #expect(output == "Copied 2 files (3 bytes) to gs://backup/logs/\n")
        #expect(try await Self.bytes(emulator, "logs/a.txt", bucket: "backup") == Data("a".utf8))
        #expect(try await Self.bytes(emulator, "logs/sub/b.txt", bucket: "backup") == Data("bb".utf8))
        #expect(try await Self.bytes(emulator, "logsx/c.txt", bucket: "backup") == nil)
        #expect(emulator.bytesReceived - before < 1024, "only the rewrite requests' small bodies")
        // Into a destination that does not exist yet, it becomes the copy.
        let (renamed, _) = try await Self.run(["cp", "-r", "--quiet", "gs://demo/logs", "gs://backup/y"], emulator)
        #expect(renamed == .success)
        #expect(try await Self.bytes(emulator, "y/sub/b.txt", bucket: "backup") == Data("bb".utf8))
    }

    // MARK: -n and conditions

    @Test func noClobberSkipsExistingDestinationsInEveryDirection() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let stored = try await Self.put("kept.txt", Data("server".utf8), in: emulator)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("local.txt")
        try Data("local".utf8).write(to: file)

        let (upload, uploadOutput) = try await Self.run(["cp", "-n", file.path, "gs://demo/kept.txt"], emulator)
        #expect(upload == .success)
        #expect(uploadOutput == "Skipping existing destination item (no-clobber): gs://demo/kept.txt\n")
        let (copy, copyOutput) = try await Self.run(["cp", "-n", "gs://demo/kept.txt", "gs://demo/kept.txt"], emulator)
        #expect(copy == .success && copyOutput.hasPrefix("Skipping existing destination item"))
        #expect(try await Self.metadata(emulator, "kept.txt").generation == stored.generation)

        let (download, downloadOutput) = try await Self.run(["cp", "-n", "gs://demo/kept.txt", file.path], emulator)
        #expect(download == .success)
        #expect(downloadOutput == "Skipping existing destination item (no-clobber): \(file.path)\n")
        #expect(try Data(contentsOf: file) == Data("local".utf8))

        // A destination that does not exist is written.
        let (fresh, _) = try await Self.run(["cp", "-n", "--quiet", file.path, "gs://demo/new.txt"], emulator)
        #expect(fresh == .success)
        #expect(try await Self.bytes(emulator, "new.txt") == Data("local".utf8))
    }

    @Test func generationConditionsGuardUploadsCopiesAndComposesAndFailWithStatus8() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let stored = try await Self.put("a.txt", Data("one".utf8), in: emulator)
        let generation = try #require(stored.generation)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("two.txt")
        try Data("two".utf8).write(to: file)

        let wrong = "\(generation + 1)"
        #expect(
            try await Self.run(["cp", "--if-generation-match", wrong, file.path, "gs://demo/a.txt"], emulator).0
                == .precondition)
        #expect(
            try await Self.run(
                ["cp", "--if-metageneration-match", "7", "gs://demo/a.txt", "gs://demo/a.txt"], emulator
            ).0
                == .precondition)
        #expect(
            try await Self.run(
                ["compose", "--if-generation-match", wrong, "gs://demo/a.txt", "gs://demo/a.txt"], emulator
            )
            .0 == .precondition)
        #expect(try await Self.bytes(emulator, "a.txt") == Data("one".utf8), "nothing was written")

        let (right, _) = try await Self.run(
            ["cp", "--quiet", "--if-generation-match", "\(generation)", file.path, "gs://demo/a.txt"], emulator)
        #expect(right == .success)
        #expect(try await Self.bytes(emulator, "a.txt") == Data("two".utf8))
    }

    /// Malformed write options exit 2 before anything is contacted.
    @Test func malformedOptionsAreUsageErrorsBeforeAnyRequest() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let sources = (0...32).map { "gs://demo/part-\($0)" }
        for words in [
            ["cp", "--custom-metadata", "novalue", "a.txt", "gs://demo/a"],
            ["cp", "--custom-metadata", "=v", "a.txt", "gs://demo/a"],
            ["cp", "--custom-metadata", "k=1", "--custom-metadata", "k=2", "a.txt", "gs://demo/a"],
            ["cp", "--if-generation-match", "-1", "a.txt", "gs://demo/a"],
            ["cp", "-n", "--if-generation-match", "3", "a.txt", "gs://demo/a"],
            ["cp", "--cache-control", "x", "gs://demo/a", "a.txt"],
            ["cp", "-r", "-n", "dir", "gs://demo/a"],
            ["mv", "-r", "dir", "gs://demo/a"],
            ["mv", "--no-checksum", "a.txt", "gs://demo/a"],
            ["mv", "--custom-metadata", "k=v", "gs://demo/a", "gs://demo/b"],
            ["compose", "gs://demo/only"],
            ["compose"] + sources + ["gs://demo/whole"],
            ["compose", "gs://other/a", "gs://demo/whole"],
            ["update", "gs://demo/a"],
            ["update", "--custom-metadata", "k", "gs://demo/a"],
            ["update", "--custom-metadata", "k=v", "--remove-custom-metadata", "k", "gs://demo/a"],
            ["hash", "-"],
        ] {
            #expect(await Self.runTool(words, emulator) == .usage, "\(words)")
        }
        #expect(emulator.requestsReceived == 0)
    }

    // MARK: compose

    @Test func composeConcatenatesOnTheServerWithTheGivenMetadata() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let parts = ["p0": "alpha-", "p1": "beta-", "p2": "gamma"]
        for (name, text) in parts { _ = try await Self.put(name, Data(text.utf8), in: emulator) }
        let (status, output) = try await Self.run(
            [
                "compose", "--content-type", "text/plain", "--custom-metadata", "k=v", "gs://demo/p0", "gs://demo/p1",
                "gs://demo/p2", "gs://demo/p0", "gs://demo/whole.txt",
            ], emulator)
        #expect(status == .success, "\(output)")
        #expect(output == "Composed gs://demo/whole.txt from 4 objects (22 bytes)\n")
        #expect(try await Self.bytes(emulator, "whole.txt") == Data("alpha-beta-gammaalpha-".utf8))
        let composed = try await Self.metadata(emulator, "whole.txt")
        #expect(composed.contentType == "text/plain" && composed.customMetadata == ["k": "v"])
        #expect(composed.componentCount == 4)

        let (missing, _) = try await Self.run(["compose", "gs://demo/nope", "gs://demo/x"], emulator)
        #expect(missing == .notFound)
    }

    // MARK: mv

    @Test func mvMovesBetweenObjectsAndBuckets() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try emulator.createBucket("other")
        _ = try await Self.put("a.txt", Data("a".utf8), in: emulator)
        let (renamed, output) = try await Self.run(["mv", "gs://demo/a.txt", "gs://demo/b.txt"], emulator)
        #expect(renamed == .success)
        #expect(output == "Moved gs://demo/a.txt to gs://demo/b.txt (1 bytes)\n")
        #expect(try await Self.bytes(emulator, "a.txt") == nil)
        #expect(try await Self.bytes(emulator, "b.txt") == Data("a".utf8))

        let (across, _) = try await Self.run(["mv", "gs://demo/b.txt", "gs://other/"], emulator)
        #expect(across == .success)
        #expect(try await Self.bytes(emulator, "b.txt") == nil)
        #expect(try await Self.bytes(emulator, "b.txt", bucket: "other") == Data("a".utf8))

        // -n keeps both when the destination exists.
        _ = try await Self.put("c.txt", Data("c".utf8), in: emulator)
        _ = try await Self.put("d.txt", Data("d".utf8), in: emulator)
        let (skipped, _) = try await Self.run(["mv", "-n", "gs://demo/c.txt", "gs://demo/d.txt"], emulator)
        #expect(skipped == .success)
        #expect(try await Self.bytes(emulator, "c.txt") == Data("c".utf8))
        #expect(try await Self.bytes(emulator, "d.txt") == Data("d".utf8))
    }

    @Test func mvUploadsThenDeletesTheFileAndDownloadsThenDeletesTheObject() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("up.txt")
        try Data("up".utf8).write(to: file)

        let (up, _) = try await Self.run(["mv", "--quiet", file.path, "gs://demo/"], emulator)
        #expect(up == .success)
        #expect(try await Self.bytes(emulator, "up.txt") == Data("up".utf8))
        #expect(!FileManager.default.fileExists(atPath: file.path))

        let (down, _) = try await Self.run(["mv", "--quiet", "gs://demo/up.txt", directory.path + "/"], emulator)
        #expect(down == .success)
        #expect(try Data(contentsOf: file) == Data("up".utf8))
        #expect(try await Self.bytes(emulator, "up.txt") == nil)

        // A move skipped by -n removes nothing, in either direction.
        _ = try await Self.put("up.txt", Data("server".utf8), in: emulator)
        let (keptFile, _) = try await Self.run(["mv", "-n", "--quiet", file.path, "gs://demo/up.txt"], emulator)
        #expect(keptFile == .success)
        #expect(try Data(contentsOf: file) == Data("up".utf8))
        #expect(try await Self.bytes(emulator, "up.txt") == Data("server".utf8))
        let (keptObject, _) = try await Self.run(["mv", "-n", "--quiet", "gs://demo/up.txt", file.path], emulator)
        #expect(keptObject == .success)
        #expect(try Data(contentsOf: file) == Data("up".utf8))
        #expect(try await Self.bytes(emulator, "up.txt") == Data("server".utf8))
    }

    /// A download whose object cannot be deleted afterwards leaves the object, says so, and
    /// exits with the delete's status.
    @Test func mvWhoseDeleteFailsLeavesTheSourceAndSaysSo() async throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let objects = directory.appendingPathComponent("objects")
        var configuration = StorageEmulator.Configuration()
        configuration.backing = .directory(objects)
        let first = try StorageEmulator.start(configuration)
        _ = try await Self.put("keep.txt", Data("keep".utf8), in: first)
        first.stop()
        // The same objects, served by an emulator that lets the metadata read and the download
        // pass and refuses the delete (403 is never retried).
        configuration.faults = ["pass", "pass", "return-403"]
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let target = directory.appendingPathComponent("keep.txt")

        let (status, _) = try await Self.run(["mv", "--quiet", "gs://demo/keep.txt", target.path], emulator)
        #expect(status == .denied)
        #expect(emulator.requestsReceived == 3)
        #expect(try Data(contentsOf: target) == Data("keep".utf8), "the verified download stays")
        #expect(try await Self.bytes(emulator, "keep.txt") == Data("keep".utf8), "the source stays")
    }

    // MARK: update

    @Test func updateSetsRemovesAndClearsMetadataUnderConditions() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        var initial = StorageMetadata()
        initial.customMetadata = ["a": "1", "b": "2", "c": "3"]
        _ = try await Self.put("o.txt", Data("o".utf8), in: emulator, metadata: initial)

        let (set, output) = try await Self.run(
            [
                "update", "--content-type", "text/csv", "--cache-control", "no-cache", "--content-disposition",
                "inline",
                "--custom-metadata", "d=4", "--remove-custom-metadata", "a", "gs://demo/o.txt",
            ], emulator)
        #expect(set == .success)
        #expect(output == "Updated gs://demo/o.txt\n")
        var metadata = try await Self.metadata(emulator, "o.txt")
        #expect(metadata.contentType == "text/csv" && metadata.cacheControl == "no-cache")
        #expect(metadata.contentDisposition == "inline")
        #expect(metadata.customMetadata == ["b": "2", "c": "3", "d": "4"])

        let stale = try #require(metadata.metageneration) - 1
        let (refused, _) = try await Self.run(
            ["update", "--if-metageneration-match", "\(stale)", "--custom-metadata", "x=y", "gs://demo/o.txt"], emulator
        )
        #expect(refused == .precondition)

        let (cleared, _) = try await Self.run(
            ["update", "--clear-custom-metadata", "--custom-metadata", "keep=yes", "gs://demo/o.txt"], emulator)
        #expect(cleared == .success)
        metadata = try await Self.metadata(emulator, "o.txt")
        #expect(metadata.customMetadata == ["keep": "yes"])

        let (missing, _) = try await Self.run(["update", "--content-type", "a/b", "gs://demo/none"], emulator)
        #expect(missing == .notFound)
    }

    // MARK: hash

    @Test func hashPrintsFileDigestsAsGcloudDoesAndObjectsFromTheirMetadata() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("h.txt")
        try Data("hello world".utf8).write(to: file)

        // The values `gcloud storage hash` prints for the same bytes.
        let (local, output) = try await Self.run(["hash", file.path], emulator)
        #expect(local == .success)
        #expect(
            output
                == "---\ncrc32c_hash: yZRlqg==\ndigest_format: base64\nmd5_hash: XrY7u+Ae7tCTyyK7j1rNww==\nurl: \(file.path)\n"
        )
        let (hex, hexOutput) = try await Self.run(["hash", "--hex", file.path], emulator)
        #expect(hex == .success)
        #expect(
            hexOutput
                == "---\ncrc32c_hash: c99465aa\ndigest_format: hex\nmd5_hash: 5eb63bbbe01eeed093cb22bb8f5acdc3\nurl: \(file.path)\n"
        )
        #expect(emulator.requestsReceived == 0, "files are hashed here")

        _ = try await Self.put("h.txt", Data("hello world".utf8), in: emulator)
        let requests = emulator.requestsReceived
        let (object, objectOutput) = try await Self.run(["hash", "gs://demo/h.txt"], emulator)
        #expect(object == .success)
        #expect(objectOutput == output.replacingOccurrences(of: "url: \(file.path)", with: "url: gs://demo/h.txt"))
        #expect(emulator.requestsReceived == requests + 1, "one metadata read, no download")

        let (missing, _) = try await Self.run(["hash", directory.appendingPathComponent("none").path], emulator)
        #expect(missing == .localFile)
    }

    @Test func everyNewVerbHasHelp() async {
        for verb in ["mv", "compose", "update", "hash"] {
            #expect(await runCommandLine([verb, "--help"], environment: [:]) == .success)
            #expect(objectCommandUsage[verb]?.contains("usage: cloud-storage \(verb)") == true)
        }
    }
}
