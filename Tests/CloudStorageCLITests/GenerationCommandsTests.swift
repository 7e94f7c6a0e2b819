import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `gs://BUCKET/PATH#GENERATION` in the single-object commands, against a versioned bucket of
/// the emulator.
@Suite("cloud-storage with #GENERATION", .timeLimit(.minutes(10)))
struct GenerationCommandsTests {
    /// A versioned bucket `demo` holding `o` twice ("one", then "two"); the two generations.
    static func versions(_ emulator: StorageEmulator) async throws -> (Int64, Int64) {
        let created = try await TestSupport.send(
            "POST", emulator.baseURL.appendingPathComponent("storage/v1/b"),
            headers: ["Content-Type": "application/json"],
            body: Data(#"{"name": "demo", "versioning": {"enabled": true}}"#.utf8))
        try #require(created.status == 200)
        let ref = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL)).reference(withPath: "o")
        let first = try #require(try await ref.putDataAsync(Data("one".utf8)).generation)
        let second = try #require(try await ref.putDataAsync(Data("two".utf8)).generation)
        return (first, second)
    }

    @Test func statCatCpAndRmActOnTheGenerationNamed() async throws {
        let emulator = try ObjectCommandsTests.emulator()
        defer { emulator.stop() }
        let (first, second) = try await Self.versions(emulator)

        let (statStatus, stat) = try await ObjectCommandsTests.run(["stat", "gs://demo/o#\(first)"], emulator)
        #expect(statStatus == .success)
        #expect(stat.hasPrefix("gs://demo/o#\(first):\n"), "\(stat)")
        #expect(stat.contains("Generation:          \(first)\n"), "\(stat)")
        #expect(try await ObjectCommandsTests.run(["cat", "gs://demo/o#\(first)"], emulator) == (.success, "one"))
        #expect(try await ObjectCommandsTests.run(["cat", "gs://demo/o"], emulator) == (.success, "two"))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("o.txt")
        let copy = try CopyCommand(
            ["gs://demo/o#\(first)", file.path, "--quiet", "--endpoint", emulator.baseURL.absoluteString],
            environment: [:])
        let (copyStatus, copied) = try await ObjectCommandsTests.capture { await copy.run(output: $0) }
        #expect(copyStatus == .success)
        #expect(copied.contains("gs://demo/o#\(first)"), "\(copied)")
        #expect(try Data(contentsOf: file) == Data("one".utf8))

        // Removing the noncurrent generation leaves the live object.
        let (rmStatus, removed) = try await ObjectCommandsTests.run(["rm", "gs://demo/o#\(first)"], emulator)
        #expect(rmStatus == .success && removed == "Removed gs://demo/o#\(first)\n")
        #expect(try await ObjectCommandsTests.run(["stat", "gs://demo/o#\(first)"], emulator).0 == .notFound)
        #expect(try await ObjectCommandsTests.run(["cat", "gs://demo/o#\(first)"], emulator).0 == .notFound)
        #expect(try await ObjectCommandsTests.run(["rm", "gs://demo/o#\(first)"], emulator).0 == .notFound)
        #expect(try await ObjectCommandsTests.run(["cat", "gs://demo/o#\(second)"], emulator) == (.success, "two"))
        #expect(try await ObjectCommandsTests.run(["cat", "gs://demo/o"], emulator) == (.success, "two"))
    }

    @Test func lsOfAGenerationListsThatOneVersion() async throws {
        let emulator = try ObjectCommandsTests.emulator()
        defer { emulator.stop() }
        let (first, second) = try await Self.versions(emulator)
        #expect(
            try await ObjectCommandsTests.run(["ls", "gs://demo/o#\(first)"], emulator)
                == (.success, "gs://demo/o#\(first)\n"))
        let (status, long) = try await ObjectCommandsTests.run(["ls", "-l", "-a", "gs://demo/o#\(second)"], emulator)
        #expect(status == .success)
        #expect(long.contains("gs://demo/o#\(second)") && !long.contains("#\(first)"), "\(long)")
        #expect(long.hasSuffix("TOTAL: 1 objects, 3 bytes\n"), "\(long)")
        #expect(try await ObjectCommandsTests.run(["ls", "gs://demo/o#\(second + 1)"], emulator).0 == .notFound)
        let (duStatus, du) = try await ObjectCommandsTests.run(["du", "-a", "gs://demo/"], emulator)
        #expect(duStatus == .success)
        #expect(du.contains("gs://demo/o#\(first)\n") && du.contains("gs://demo/o#\(second)\n"), "\(du)")
    }

    @Test func copiesAndMovesBetweenObjectsTakeTheSourcesGeneration() async throws {
        let emulator = try ObjectCommandsTests.emulator()
        defer { emulator.stop() }
        let (first, second) = try await Self.versions(emulator)
        let endpoint = ["--quiet", "--endpoint", emulator.baseURL.absoluteString]

        let copy = try CopyCommand(["gs://demo/o#\(first)", "gs://demo/copied"] + endpoint, environment: [:])
        #expect(try await ObjectCommandsTests.capture { await copy.run(output: $0) }.0 == .success)
        #expect(try await ObjectCommandsTests.run(["cat", "gs://demo/copied"], emulator) == (.success, "one"))

        // Moving a noncurrent generation copies it and deletes exactly that generation.
        let move = try CopyCommand(
            ["gs://demo/o#\(first)", "gs://demo/moved"] + endpoint, environment: [:], moving: true)
        #expect(try await ObjectCommandsTests.capture { await move.run(output: $0) }.0 == .success)
        #expect(try await ObjectCommandsTests.run(["cat", "gs://demo/moved"], emulator) == (.success, "one"))
        #expect(try await ObjectCommandsTests.run(["stat", "gs://demo/o#\(first)"], emulator).0 == .notFound)
        #expect(try await ObjectCommandsTests.run(["cat", "gs://demo/o#\(second)"], emulator) == (.success, "two"))

        // A copy writes a new generation: one cannot be named for the destination.
        #expect(throws: UsageError.self) {
            try CopyCommand(["gs://demo/o", "gs://demo/copied#\(first)"] + endpoint, environment: [:])
        }
    }

    @Test(arguments: [
        ["rm", "-r", "gs://demo/o#5"], ["cat", "gs://demo/o#0"],
        ["stat", "gs://demo/o#99999999999999999999"],
    ])
    func commandsThatWalkOrNamesThatCannotBeGenerationsAreUsageErrors(words: [String]) {
        let command = Array(words.dropFirst()) + ["--endpoint", "http://127.0.0.1:9"]
        #expect(throws: UsageError.self) {
            switch words[0] {
            case "ls": _ = try ListCommand(command, environment: [:])
            case "rm": _ = try RemoveCommand(command, environment: [:])
            case "cat": _ = try CatCommand(command, environment: [:])
            default: _ = try StatCommand(command, environment: [:])
            }
        }
    }

    @Test func anUploadToAGenerationIsAUsageErrorAndOtherHashesArePartOfTheName() throws {
        #expect(throws: UsageError.self) {
            try CopyCommand(["/etc/hostname", "gs://demo/o#5", "--endpoint", "http://127.0.0.1:9"], environment: [:])
        }
        let address = try ObjectAddress("gs://demo/notes#draft", role: "the object")
        #expect(address.path == "notes#draft" && address.generation == nil)
        let pinned = try ObjectAddress("gs://demo/a#1#2", role: "the object")
        #expect(pinned.path == "a#1" && pinned.generation == 2 && pinned.url == "gs://demo/a#1#2")
    }
}
