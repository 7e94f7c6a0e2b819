import CloudStorage
import FakeGCSServer
import Foundation
import HTTPTestServers
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cloud-storage ls`, `stat`, `cat` and `rm`, run in-process against emulators the tests
/// start, with standard output captured through a pipe.
@Suite("cloud-storage ls, stat, cat, rm", .timeLimit(.minutes(10)))
struct ObjectCommandsTests {
    // MARK: Helpers

    static func emulator(
        _ configure: (inout StorageEmulator.Configuration) -> Void = { _ in }
    ) throws -> StorageEmulator {
        var configuration = StorageEmulator.Configuration()
        configure(&configuration)
        return try StorageEmulator.start(configuration)
    }

    /// Stores `objects` (name → bytes) in `bucket` through the SDK.
    static func put(
        _ objects: [String: Data], in emulator: StorageEmulator, bucket: String = "demo",
        metadata: StorageMetadata? = nil
    ) async throws {
        let storage = Storage(bucket: bucket, endpoint: .gcs(emulator.baseURL))
        for (name, data) in objects {
            _ = try await storage.reference(withPath: name).putData(data, metadata: metadata).value
        }
    }

    /// Runs `command` with its output going into a pipe; the exit status and what it wrote.
    static func capture(_ command: (OutputWriter) async -> ExitCode) async throws -> (ExitCode, String) {
        let (status, output) = try await captureBytes(command)
        return (status, String(decoding: output, as: UTF8.self))
    }

    /// As ``capture(_:)``, with the output's bytes as they came.
    static func captureBytes(_ command: (OutputWriter) async -> ExitCode) async throws -> (ExitCode, Data) {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let collected = CopyDirectionsTests.readAll(fds[0])
        let writer = OutputWriter(fd: fds[1])
        let status = await command(writer)
        writer.finish()
        // Every write was awaited, so everything is in the pipe: the reader sees the end next.
        close(fds[1])
        return (status, await collected.value)
    }

    /// Runs `cloud-storage WORDS --endpoint EMULATOR` through the command types; status and output.
    static func run(
        _ words: [String], _ emulator: StorageEmulator, pageSize: Int? = nil
    ) async throws -> (ExitCode, String) {
        let command = Array(words.dropFirst()) + ["--endpoint", emulator.baseURL.absoluteString]
        switch words[0] {
        case "ls":
            var parsed = try ListCommand(command, environment: [:])
            if let pageSize { parsed.pageSize = pageSize }
            let ls = parsed
            return try await capture { await ls.run(output: $0) }
        case "stat":
            let parsed = try StatCommand(command, environment: [:])
            return try await capture { await parsed.run(output: $0) }
        case "cat":
            let parsed = try CatCommand(command, environment: [:])
            return try await capture { await parsed.run(output: $0) }
        case "du":
            var parsed = try DiskUsageCommand(command, environment: [:])
            if let pageSize { parsed.pageSize = pageSize }
            let du = parsed
            return try await capture { await du.run(output: $0) }
        default:
            var parsed = try RemoveCommand(command, environment: [:])
            if let pageSize { parsed.pageSize = pageSize }
            let rm = parsed
            return try await capture { await rm.run(output: $0) }
        }
    }

    static func bytes(_ text: String) -> Data { Data(text.utf8) }

    // MARK: ls

    @Test func lsListsOneLevelWithFoldersAndEverythingBelowWithR() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try await Self.put(
            [
                "a.txt": Self.bytes("a"), "dir/b.txt": Self.bytes("b"), "dir/sub/c.txt": Self.bytes("c"),
                "dir2/d.txt": Self.bytes("d"), "dir": Self.bytes("x"),
            ],
            in: emulator)

        let (top, topOutput) = try await Self.run(["ls", "gs://demo"], emulator)
        #expect(top == .success)
        #expect(topOutput == "gs://demo/a.txt\ngs://demo/dir\ngs://demo/dir/\ngs://demo/dir2/\n")

        let (dir, dirOutput) = try await Self.run(["ls", "gs://demo/dir/"], emulator)
        #expect(dir == .success)
        #expect(dirOutput == "gs://demo/dir/b.txt\ngs://demo/dir/sub/\n")
        // Without the slash the object named `dir` is listed too, as gsutil does.
        #expect(try await Self.run(["ls", "gs://demo/dir"], emulator).1 == "gs://demo/dir\n" + dirOutput)

        let (all, allOutput) = try await Self.run(["ls", "-r", "gs://demo"], emulator)
        #expect(all == .success)
        #expect(
            allOutput
                == "gs://demo/a.txt\ngs://demo/dir\ngs://demo/dir/b.txt\ngs://demo/dir/sub/c.txt\ngs://demo/dir2/d.txt\n"
        )
        // A single object prints itself.
        #expect(try await Self.run(["ls", "gs://demo/dir/sub/c.txt"], emulator).1 == "gs://demo/dir/sub/c.txt\n")
    }

    /// A folder placeholder (an object named `keep/`, as consoles create) is listed under its
    /// own prefix as the object it is: `ls -r` shows it and `rm -r gs://demo/keep/` deletes it,
    /// never the object `keep`.
    @Test func recursiveWalksTakeFolderPlaceholdersForWhatTheyAre() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try await Self.put(["keep": Self.bytes("not a folder"), "keep/x.txt": Self.bytes("x")], in: emulator)
        try await CopyDirectionsTests.putRaw("keep/", Data(), in: emulator)

        let (listed, listing) = try await Self.run(["ls", "-r", "gs://demo/keep/"], emulator)
        #expect(listed == .success)
        #expect(listing == "gs://demo/keep/\ngs://demo/keep/x.txt\n")
        // With the slash: only what lies below keep/ (without it, rm -r removes `keep` too, as gsutil does).
        let (removed, removals) = try await Self.run(["rm", "-r", "gs://demo/keep/"], emulator)
        #expect(removed == .success, "\(removals)")
        // Deletions run concurrently: the lines come in the order they end.
        #expect(
            removals.split(separator: "\n").sorted() == ["Removed gs://demo/keep/", "Removed gs://demo/keep/x.txt"])
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        let survivor = try await storage.reference(withPath: "keep").data(maxSize: 100)
        #expect(survivor == Self.bytes("not a folder"), "the object named keep is not the placeholder")
    }

    @Test func lsPagesThroughListingsLongerThanAPage() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        // 2 entries a page: 23 objects and folders at the top, 5 more inside the folders.
        var objects: [String: Data] = [:]
        for index in 0..<20 {
            objects[String(format: "o%02d", index)] = Self.bytes(String(repeating: "x", count: index))
        }
        for name in ["f1/a", "f1/b", "f1/c", "f2/a", "f3/z/y"] { objects[name] = Self.bytes("12345") }
        try await Self.put(objects, in: emulator)

        let (status, output) = try await Self.run(["ls", "gs://demo"], emulator, pageSize: 2)
        #expect(status == .success)
        let expected = ["f1/", "f2/", "f3/"] + (0..<20).map { String(format: "o%02d", $0) }
        #expect(output == expected.map { "gs://demo/\($0)\n" }.joined())

        let (recursive, all) = try await Self.run(["ls", "-lr", "gs://demo"], emulator, pageSize: 2)
        #expect(recursive == .success)
        let lines = all.split(separator: "\n").map(String.init)
        #expect(lines.count == 26)
        #expect(
            lines.dropLast().map { $0.split(separator: " ").last.map(String.init) ?? "" }
                == objects.keys.sorted().map { "gs://demo/\($0)" })
        #expect(lines.last == "TOTAL: 25 objects, \((0..<20).reduce(0, +) + 25) bytes")
    }

    @Test func lsLongShowsSizeAndRFC3339UpdateTimeAndATotal() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try await Self.put(
            ["logs/a": Data(count: 10), "logs/b": Data(count: 20), "logs/c/d": Data(count: 30)], in: emulator)
        let (status, output) = try await Self.run(["ls", "-l", "gs://demo/logs/"], emulator)
        #expect(status == .success)
        let lines = output.split(separator: "\n").map(String.init)
        try #require(lines.count == 4, "\(output)")
        let pattern = #/^ +(\d+)  (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  (gs://\S+)$/#
        let first = try #require(lines[0].wholeMatch(of: pattern))
        #expect(first.1 == "10" && first.3 == "gs://demo/logs/a")
        let second = try #require(lines[1].wholeMatch(of: pattern))
        #expect(second.1 == "20" && second.3 == "gs://demo/logs/b")
        #expect(lines[2].trimmingCharacters(in: .whitespaces) == "gs://demo/logs/c/")
        #expect(lines[3] == "TOTAL: 2 objects, 30 bytes")
    }

    @Test func lsLongTakesSizesAndTimesFromTheListingNotARequestPerObject() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let count = 30
        var objects: [String: Data] = [:]
        for index in 0..<count { objects[String(format: "logs/%02d", index)] = Data(count: index) }
        objects["logs/sub/deep"] = Data(count: 7)
        try await Self.put(objects, in: emulator)

        let before = emulator.requestsReceived
        let (status, output) = try await Self.run(["ls", "-l", "gs://demo/logs/"], emulator, pageSize: 10)
        let sent = emulator.requestsReceived - before
        #expect(status == .success)
        // 31 entries, 10 a page: 4 listing requests, and no metadata request for the 30 objects.
        #expect(sent == 4)

        // The output is what per-object metadata gives: Firebase v0 listings carry names only,
        // so that route still reads each object's metadata on its own.
        var firebaseCommand = try ListCommand(
            ["-l", "gs://demo/logs/", "--firebase", emulator.baseURL.absoluteString], environment: [:])
        firebaseCommand.pageSize = 10
        let ls = firebaseCommand
        let firebaseStart = emulator.requestsReceived
        let firebase = try await Self.capture { await ls.run(output: $0) }
        #expect(emulator.requestsReceived - firebaseStart == 4 + count)
        #expect(firebase.0 == .success)
        #expect(firebase.1 == output)
        let lines = output.split(separator: "\n").map(String.init)
        try #require(lines.count == count + 2, "\(output)")
        let pattern = #/^ +(\d+)  (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  (gs://\S+)$/#
        for index in 0..<count {
            let match = try #require(lines[index].wholeMatch(of: pattern), "\(lines[index])")
            #expect(match.1 == Substring(String(index)))
            #expect(match.3 == Substring(String(format: "gs://demo/logs/%02d", index)))
        }
        #expect(lines[count] == String(repeating: " ", count: 34) + "gs://demo/logs/sub/")
        #expect(lines[count + 1] == "TOTAL: \(count) objects, \((0..<count).reduce(0, +)) bytes")
    }

    /// `ls -r` and `rm -r` walk a tree with one flat listing a page, not a listing per folder
    /// (which cost 1 + 12 requests here); Firebase v0, which lists a level at a time, still
    /// gets the same lines.
    @Test func recursiveWalksSendOneListingAPageWhateverTheDepth() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        var objects: [String: Data] = ["top": Self.bytes("t")]
        for folder in 0..<4 {
            for sub in 0..<2 { objects["f\(folder)/s\(sub)/leaf"] = Self.bytes("x") }
            objects["f\(folder)/file"] = Self.bytes("y")
        }
        try await Self.put(objects, in: emulator)
        let expected = objects.keys.sorted().map { "gs://demo/\($0)\n" }.joined()

        var before = emulator.requestsReceived
        let (status, output) = try await Self.run(["ls", "-r", "gs://demo"], emulator, pageSize: 5)
        #expect(status == .success)
        #expect(output == expected)
        // 13 objects, 5 a page: 3 listing requests.
        #expect(emulator.requestsReceived - before == 3)

        var firebase = try ListCommand(
            ["-r", "gs://demo", "--firebase", emulator.baseURL.absoluteString], environment: [:])
        firebase.pageSize = 5
        let ls = firebase
        #expect(try await Self.capture { await ls.run(output: $0) } == (.success, expected))

        before = emulator.requestsReceived
        let (removed, _) = try await Self.run(["rm", "-r", "gs://demo/f1/"], emulator)
        #expect(removed == .success)
        // One listing, three deletions.
        #expect(emulator.requestsReceived - before == 1 + 3)
    }

    /// `ls -a` lists every generation as `gs://b/o#GEN`, from the listing alone.
    @Test func lsAListsEveryGenerationWithItsNumber() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        var request = URLRequest(url: emulator.baseURL.appendingPathComponent("storage/v1/b"))
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"name":"demo","versioning":{"enabled":true}}"#.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        _ = try await URLSession.shared.data(for: request)
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        var generations: [Int64] = []
        for body in ["one", "two"] {
            generations.append(
                try #require(try await storage.reference(withPath: "d/o").putDataAsync(Self.bytes(body)).generation))
        }
        _ = try await storage.reference(withPath: "d/p").putDataAsync(Self.bytes("p"))
        let expected = generations.map { "gs://demo/d/o#\($0)\n" }.joined()

        let before = emulator.requestsReceived
        let (status, output) = try await Self.run(["ls", "-a", "gs://demo/d/"], emulator)
        #expect(status == .success)
        #expect(emulator.requestsReceived - before == 1)
        #expect(output.hasPrefix(expected) && output.hasSuffix("gs://demo/d/p#") == false, "\(output)")
        #expect(output.split(separator: "\n").count == 3)
        #expect(try await Self.run(["ls", "-a", "gs://demo/d/o"], emulator) == (.success, expected))
        let (_, long) = try await Self.run(["ls", "-la", "gs://demo/d/o"], emulator)
        #expect(long.contains("gs://demo/d/o#\(generations[0])  metageneration=1\n"), "\(long)")
        // Without -a, only the live one.
        #expect(try await Self.run(["ls", "gs://demo/d/o"], emulator).1 == "gs://demo/d/o\n")
    }

    /// `du` sums sizes from the flat listing: a request a page, none per object.
    @Test func duCountsBytesFromTheListing() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try await Self.put(
            [
                "logs/a": Data(count: 10), "logs/b/c": Data(count: 20), "logs/b/d/e": Data(count: 2000),
                "x": Data(count: 1),
            ],
            in: emulator)
        let before = emulator.requestsReceived
        let (status, output) = try await Self.run(["du", "gs://demo/logs/"], emulator, pageSize: 2)
        #expect(status == .success)
        #expect(emulator.requestsReceived - before == 2)
        #expect(
            output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
                == [["10", "gs://demo/logs/a"], ["20", "gs://demo/logs/b/c"], ["2000", "gs://demo/logs/b/d/e"]])
        let (_, summary) = try await Self.run(["du", "-sc", "gs://demo/logs/", "gs://demo/x"], emulator)
        #expect(
            summary.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
                == [["2030", "gs://demo/logs/"], ["1", "gs://demo/x"], ["2031", "total"]])
        let (_, readable) = try await Self.run(["du", "-s", "--readable-sizes", "gs://demo/logs/"], emulator)
        #expect(readable.hasPrefix("1.98 KiB "), "\(readable)")
        #expect(try await Self.run(["du", "gs://demo/none/"], emulator).0 == .notFound)
    }

    @Test func lsOfAPrefixThatMatchesNothingExits5AndAnEmptyBucketExits0() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try emulator.createBucket("empty")
        try await Self.put(["a": Self.bytes("a")], in: emulator)
        let (missing, output) = try await Self.run(["ls", "gs://demo/nothing"], emulator)
        #expect(missing == .notFound)
        #expect(output.isEmpty)
        #expect(try await Self.run(["ls", "-r", "gs://demo/nothing/"], emulator).0 == .notFound)
        #expect(try await Self.run(["ls", "gs://empty"], emulator) == (.success, ""))
    }

    @Test func lsOfAMissingBucketExits5() async throws {
        let emulator = try Self.emulator { $0.autoCreateBuckets = false }
        defer { emulator.stop() }
        #expect(try await Self.run(["ls", "gs://absent"], emulator).0 == .notFound)
    }

    // MARK: stat

    @Test func statShowsEachObjectsMetadataAndAMissingOneExits5() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        var metadata = StorageMetadata()
        metadata.contentType = "text/plain"
        metadata.customMetadata = ["owner": "ada"]
        try await Self.put(
            ["one.txt": Self.bytes("hello"), "two.txt": Self.bytes("hi")], in: emulator, metadata: metadata)

        let (status, output) = try await Self.run(
            ["stat", "gs://demo/one.txt", "gs://demo/missing", "gs://demo/two.txt"], emulator)
        #expect(status == .notFound)
        let blocks = output.components(separatedBy: "gs://demo/").filter { !$0.isEmpty }
        try #require(blocks.count == 2, "\(output)")
        #expect(blocks[0].hasPrefix("one.txt:\n"))
        #expect(blocks[1].hasPrefix("two.txt:\n"))
        for (block, size) in zip(blocks, ["5", "2"]) {
            #expect(block.contains("    Size:                \(size)\n"))
            #expect(block.contains("    Content-Type:        text/plain\n"))
            #expect(block.contains("    Metageneration:      1\n"))
            #expect(block.contains(#/Generation: +\d+\n/#))
            #expect(block.contains(#/Created: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n/#))
            #expect(block.contains(#/Hash \(CRC32C\): +\S+==\n/#))
            #expect(block.contains(#/Hash \(MD5\): +\S+==\n/#))
            #expect(block.contains("    Metadata:\n        owner: ada\n"))
        }
    }

    // MARK: cat

    @Test func catWritesTheObjectsInOrderAndRanges() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try await Self.put(["small.txt": Self.bytes("tail\n")], in: emulator)
        let (status, output) = try await Self.run(["cat", "gs://demo/small.txt", "gs://demo/small.txt"], emulator)
        #expect(status == .success && output == "tail\ntail\n")
        let (rangeStatus, range) = try await Self.run(["cat", "-r", "1-3", "gs://demo/small.txt"], emulator)
        #expect(rangeStatus == .success && range == "ail")
        #expect(try await Self.run(["cat", "-r", "2-", "gs://demo/small.txt"], emulator).1 == "il\n")
        let (missing, _) = try await Self.run(["cat", "gs://demo/small.txt", "gs://demo/absent"], emulator)
        #expect(missing == .notFound)
    }

    @Test func catWritesEveryByteUnchanged() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let big = TestSupport.payload(size: 3 * 1024 * 1024 + 7, seed: 3)
        try await Self.put(["big.bin": big], in: emulator)
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let reader = CopyDirectionsTests.readAll(fds[0])
        let writer = OutputWriter(fd: fds[1])
        let command = try CatCommand(
            ["--endpoint", emulator.baseURL.absoluteString, "gs://demo/big.bin"], environment: [:])
        #expect(await command.run(output: writer) == .success)
        writer.finish()
        close(fds[1])
        #expect(await reader.value == big)
    }

    /// A server whose CRC32C does not match the bytes it sends: they are written, then exit 7.
    @Test func catOfBytesThatDoNotMatchTheirChecksumExits7AfterWritingThem() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readHead() != nil else { return }
            connection.write(
                "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nx-goog-generation: 1\r\n"
                    + "x-goog-hash: crc32c=AAAAAA==\r\nConnection: close\r\n\r\nhello world")
        }
        defer { server.stop() }
        let command = try CatCommand(["--endpoint", server.baseURL.absoluteString, "gs://demo/x"], environment: [:])
        let (status, output) = try await Self.capture { await command.run(output: $0) }
        #expect(status == .integrity)
        #expect(output == "hello world")
    }

    /// A listing page is written and the buffer emptied; a reader gone ends the listing.
    @Test func aPageIsWrittenAndEmptiedUntilTheReaderGoes() async throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[1]) }
        let writer = OutputWriter(fd: fds[1])
        defer { writer.finish() }
        var page = "gs://b/a\n"
        #expect(await writer.writePage(&page))
        #expect(page.isEmpty)
        var read = [UInt8](repeating: 0, count: 64)
        #expect(Foundation.read(fds[0], &read, read.count) == 9)
        close(fds[0])
        page = "gs://b/b\n"
        #expect(await writer.writePage(&page) == false)
    }

    @Test func theWriterReportsAReaderThatWentAwayInsteadOfDying() async throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        let writer = OutputWriter(fd: fds[1])
        defer { writer.finish() }
        let error = await #expect(throws: OutputWriter.Closed.self) { try await writer.write(Data(count: 1000)) }
        #expect(error?.code == EPIPE)
        // And later writes fail at once.
        await #expect(throws: OutputWriter.Closed.self) { try await writer.write("more") }
    }

    /// `cloud-storage cat … | head -c 10`, in a process of its own (whose SIGPIPE is the
    /// default, ending the process, unless the tool guards against it).
    @Test func catToAReaderThatStopsEarlyExitsQuietlyWithStatus0() async throws {
        let tool = try CommandLineToolTests.toolExecutable
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try await Self.put(["big.bin": TestSupport.payload(size: 8 * 1024 * 1024, seed: 5)], in: emulator)
        let output = try ChildProcess.makePipe()
        let errors = try CopyResumeTests.ErrorLog()
        let process: ChildProcess
        do {
            defer { close(output.write) }
            process = try ChildProcess(
                tool.path, ["cat", "--endpoint", emulator.baseURL.absoluteString, "gs://demo/big.bin"],
                environment: [:], output: .descriptor(output.write), errors: .file(errors.url.path))
        } catch {
            close(output.read)
            throw error
        }
        defer { process.send(SIGKILL) }
        // Read 10 bytes, then go away, as `head -c 10` does.
        let reader = FileHandle(fileDescriptor: output.read, closeOnDealloc: true)
        let first = try await BlockingWork.run { reader.readData(ofLength: 10) }
        #expect(first.count == 10)
        try reader.close()
        await process.exited()
        #expect(process.terminationReason == .exit, "ended by signal \(process.terminationStatus)")
        #expect(process.terminationStatus == 0)
        #expect(errors.text.isEmpty, "\(errors.text)")
    }

    // MARK: rm

    @Test func rmDeletesObjectsAndAMissingOneExits5() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try await Self.put(["a": Self.bytes("a"), "b": Self.bytes("b")], in: emulator)
        let (status, output) = try await Self.run(["rm", "gs://demo/a", "gs://demo/missing", "gs://demo/b"], emulator)
        #expect(status == .notFound)
        #expect(output == "Removed gs://demo/a\nRemoved gs://demo/b\n")
        #expect(try await Self.run(["ls", "gs://demo"], emulator) == (.success, ""))
    }

    @Test func rmRDeletesEverythingBelowThePrefixPageByPage() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        var objects: [String: Data] = ["keep": Self.bytes("k"), "dirt": Self.bytes("k"), "dir": Self.bytes("d")]
        for index in 0..<12 { objects["dir/\(index % 3)/\(index)"] = Self.bytes("x") }
        try await Self.put(objects, in: emulator)
        let (status, output) = try await Self.run(["rm", "-r", "--jobs", "3", "gs://demo/dir"], emulator, pageSize: 2)
        #expect(status == .success)
        #expect(output.split(separator: "\n").count == 13)
        #expect(try await Self.run(["ls", "-r", "gs://demo"], emulator).1 == "gs://demo/dirt\ngs://demo/keep\n")
        // Nothing left to match.
        #expect(try await Self.run(["rm", "-r", "gs://demo/dir"], emulator).0 == .notFound)
        let (quiet, count) = try await Self.run(["rm", "-r", "--quiet", "gs://demo"], emulator)
        #expect(quiet == .success && count == "Removed 2 objects\n")
    }

    @Test func rmRGoesOnAfterAFailureAndExitsWithItsStatus() async throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let filling = try Self.emulator { $0.backing = .directory(directory) }
        var objects: [String: Data] = [:]
        for index in 0..<5 { objects["dir/\(index)"] = Self.bytes("x") }
        try await Self.put(objects, in: filling)
        filling.stop()
        // Request 1 deletes the object `dir` (absent), 2 lists, and of the 5 deletions one is refused.
        let emulator = try Self.emulator {
            $0.backing = .directory(directory)
            $0.faults = ["pass", "pass", "return-403"]
        }
        defer { emulator.stop() }
        let (status, output) = try await Self.run(["rm", "-r", "gs://demo/dir"], emulator)
        #expect(status == .denied)
        #expect(output.split(separator: "\n").count == 4)
        let left = try await Self.run(["ls", "-r", "gs://demo"], emulator).1
        #expect(left.split(separator: "\n").count == 1)
    }

    // MARK: Names

    @Test(arguments: [
        ["ls", "gs://Upper"], ["ls", "gs://ab"], ["ls", "gs://-dash/x"], ["stat", "gs://demo/a\nb"],
        ["cat", "gs://demo/."], ["rm", "gs://demo"], ["rm", "gs://demo/.well-known/acme-challenge/x"],
        ["stat", "gs://bad!name/x"], ["cat", "gs://demo/"],
    ])
    func namesThatBreakTheRulesExit2BeforeAnythingStarts(words: [String]) async throws {
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        // With nothing else configured the built-in emulator would start (and make its directory)
        // and, auto-creating buckets, answer 404 or 200: anything but a usage error.
        let status = await runCommandLine(words, environment: ["XDG_DATA_HOME": home.path])
        #expect(status == .usage)
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("cloud-storage").path))
    }

    @Test func theSameCommandsWithGoodNamesDoStartTheBuiltInEmulator() async throws {
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let status = await runCommandLine(["ls", "gs://demo"], environment: ["XDG_DATA_HOME": home.path])
        #expect(status == .success)
        #expect(FileManager.default.fileExists(atPath: home.appendingPathComponent("cloud-storage").path))
    }

    @Test(arguments: [
        ("abc", true), ("my-bucket_1.example.com", true), (String(repeating: "a", count: 63), true),
        (String(repeating: "a", count: 64), false), ("ab", false), ("Abc", false), ("abc-", false), ("-abc", false),
        ("a..b", false), ("a.b", true),
        (Array(repeating: String(repeating: "a", count: 63), count: 3).joined(separator: "."), true),
        (String(repeating: "a", count: 64) + ".com", false), ("a b", false), ("", false),
    ])
    func bucketNamesFollowTheGCSRules(name: String, valid: Bool) {
        if valid {
            #expect(throws: Never.self) { try Storage.validateBucketName(name) }
        } else {
            let thrown = #expect(throws: StorageError.self) { try Storage.validateBucketName(name) }
            #expect(thrown?.code == .pathError)
        }
    }

    @Test(arguments: [["ls", "--help"], ["help", "stat"], ["cat", "-h"], ["help", "rm"]])
    func helpExits0(arguments: [String]) async {
        #expect(await runCommandLine(arguments, environment: [:]) == .success)
    }

    @Test(arguments: ["ls", "stat", "cat", "rm"])
    func eachUsageNamesTheSharedOptions(command: String) throws {
        let text = try #require(objectCommandUsage[command])
        for option in [
            "--endpoint URL", "--firebase URL", "--production", "--emulator-dir DIR", "--token TOKEN",
            "--ca-file FILE",
        ] {
            #expect(text.contains(option), "\(command) --help lacks \(option)")
        }
        #expect(!text.contains("\\("))
        #expect(usage.contains("\n  \(command) "))
    }

    @Test(arguments: [
        ["ls"], ["stat"], ["rm", "--jobs", "0", "gs://demo/x"], ["cat", "-r", "5-2", "gs://demo/x"],
        ["ls", "--bogus", "gs://demo"], ["stat", "s3://demo/x"],
    ])
    func badCommandLinesExit2(arguments: [String]) async {
        #expect(await runCommandLine(arguments, environment: ["XDG_DATA_HOME": "/nonexistent"]) == .usage)
    }
}
