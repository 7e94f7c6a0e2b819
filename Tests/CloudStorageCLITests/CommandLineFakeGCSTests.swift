import CloudStorage
import FakeGCSServer
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every `cloud-storage` object command against a server we did not write: fake-gcs-server,
/// through `--endpoint`. Uploads from a file and from standard input, listings, metadata,
/// `cat`, downloads, `cp -r` both ways and `rm -r`, each checked byte for byte.
///
/// Serialized because `cp` takes over SIGINT and SIGTERM while it runs.
@Suite("cloud-storage against fake-gcs-server", .serialized, .timeLimit(.minutes(10)))
struct CommandLineFakeGCSTests {
    /// Runs `cloud-storage WORDS --endpoint SERVER` through the command types, with standard
    /// output captured; `input` stands for standard input.
    static func run(_ words: [String], _ server: FakeGCSServer, input: Int32? = nil) async throws -> (ExitCode, String)
    {
        let (status, output) = try await runBytes(words, server, input: input)
        return (status, String(decoding: output, as: UTF8.self))
    }

    /// As ``run(_:_:input:)``, with the output's bytes as they came.
    static func runBytes(
        _ words: [String], _ server: FakeGCSServer, input: Int32? = nil
    ) async throws -> (ExitCode, Data) {
        let arguments = Array(words.dropFirst()) + ["--endpoint", server.baseURL.absoluteString]
        let command: @Sendable (OutputWriter) async -> ExitCode
        switch words[0] {
        case "cp":
            var parsed = try CopyCommand(arguments + ["--quiet"], environment: [:])
            if let input { parsed.input = input }
            let cp = parsed
            command = { await cp.run(output: $0) }
        case "ls":
            let parsed = try ListCommand(arguments, environment: [:])
            command = { await parsed.run(output: $0) }
        case "stat":
            let parsed = try StatCommand(arguments, environment: [:])
            command = { await parsed.run(output: $0) }
        case "cat":
            let parsed = try CatCommand(arguments, environment: [:])
            command = { await parsed.run(output: $0) }
        default:
            let parsed = try RemoveCommand(arguments, environment: [:])
            command = { await parsed.run(output: $0) }
        }
        return try await ObjectCommandsTests.captureBytes(command)
    }

    /// A pipe's read end holding `data`, written by a thread of its own; the writer closes it.
    static func standardInput(_ data: Data) throws -> Int32 {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let writeEnd = fds[1]
        Thread {
            data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(writeEnd, bytes.baseAddress! + offset, bytes.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0 && errno == EINTR {
                        continue
                    } else {
                        break
                    }
                }
            }
            close(writeEnd)
        }.start()
        return fds[0]
    }

    @Test func everyObjectCommandWorksAgainstFakeGCSServer() async throws {
        let server = try await FakeGCSServer.shared()
        let bucket = TestSupport.bucketName("cli")
        try await server.createBucket(bucket)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }

        // Up: a file (resumable, several chunks) and standard input (size unknown).
        let fileBytes = TestSupport.payload(size: 3 * 1024 * 1024 + 11, seed: 91)
        let file = directory.appendingPathComponent("a.bin")
        try fileBytes.write(to: file)
        let (fromFile, stored) = try await Self.run(
            ["cp", "--chunk-size", "1M", file.path, "gs://\(bucket)/dir/a.bin"], server)
        #expect(fromFile == .success, "\(stored)")
        let streamBytes = TestSupport.payload(size: 700_001, seed: 92)
        let input = try Self.standardInput(streamBytes)
        defer { close(input) }
        let (fromInput, _) = try await Self.run(["cp", "-", "gs://\(bucket)/dir/stdin.bin"], server, input: input)
        #expect(fromInput == .success)

        // Listed, described, read back.
        let (listed, listing) = try await Self.run(["ls", "-l", "-r", "gs://\(bucket)/dir"], server)
        #expect(listed == .success)
        #expect(listing.contains("\(fileBytes.count)") && listing.contains("gs://\(bucket)/dir/a.bin"), "\(listing)")
        #expect(listing.contains("gs://\(bucket)/dir/stdin.bin"), "\(listing)")
        #expect(listing.contains("TOTAL: 2 objects, \(fileBytes.count + streamBytes.count) bytes"), "\(listing)")
        let (described, metadata) = try await Self.run(["stat", "gs://\(bucket)/dir/a.bin"], server)
        #expect(described == .success)
        #expect(metadata.contains("\(fileBytes.count)"), "\(metadata)")
        let (catted, catOutput) = try await Self.runBytes(["cat", "gs://\(bucket)/dir/stdin.bin"], server)
        #expect(catted == .success)
        #expect(catOutput == streamBytes ? true : false, "cat gives the bytes sent through standard input")
        let copy = directory.appendingPathComponent("copy.bin")
        let (downloaded, _) = try await Self.run(["cp", "gs://\(bucket)/dir/a.bin", copy.path], server)
        #expect(downloaded == .success)
        #expect(try Data(contentsOf: copy) == fileBytes ? true : false)

        // A tree up and back down, then removed.
        let tree = directory.appendingPathComponent("tree", isDirectory: true)
        try FileManager.default.createDirectory(
            at: tree.appendingPathComponent("sub", isDirectory: true), withIntermediateDirectories: true)
        let treeFiles = [
            "one.txt": Data("one".utf8), "sub/two.bin": TestSupport.payload(size: 300_000, seed: 93),
            "sub/three.txt": Data(),
        ]
        for (name, data) in treeFiles { try data.write(to: tree.appendingPathComponent(name)) }
        let (up, upSummary) = try await Self.run(["cp", "-r", tree.path, "gs://\(bucket)/up/"], server)
        #expect(up == .success, "\(upSummary)")
        let back = directory.appendingPathComponent("back", isDirectory: true)
        try FileManager.default.createDirectory(at: back, withIntermediateDirectories: false)
        let (down, downSummary) = try await Self.run(["cp", "-r", "gs://\(bucket)/up/tree", back.path], server)
        #expect(down == .success, "\(downSummary)")
        #expect(try TestSupport.files(below: back.appendingPathComponent("tree")) == treeFiles)
        let (removed, removals) = try await Self.run(["rm", "-r", "gs://\(bucket)/up"], server)
        #expect(removed == .success, "\(removals)")
        #expect(removals.components(separatedBy: "Removed ").count - 1 == treeFiles.count, "\(removals)")
        let (gone, _) = try await Self.run(["ls", "gs://\(bucket)/up/"], server)
        #expect(gone == .notFound)
    }
}
