import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorageCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cloud-storage cp` in every direction — downloads to a file or a directory, standard input
/// and output, and `-r` both ways — run in-process against emulators the tests start, with
/// standard output captured through a pipe.
///
/// Serialized because `cp` takes over SIGINT and SIGTERM while it runs.
@Suite("cloud-storage cp in both directions", .serialized, .timeLimit(.minutes(10)))
struct CopyDirectionsTests {
    // MARK: Helpers

    static func emulator(
        _ configure: (inout StorageEmulator.Configuration) -> Void = { _ in }
    ) throws -> StorageEmulator {
        var configuration = StorageEmulator.Configuration()
        configure(&configuration)
        return try StorageEmulator.start(configuration)
    }

    static func put(_ objects: [String: Data], in emulator: StorageEmulator, bucket: String = "demo") async throws {
        let storage = Storage(bucket: bucket, endpoint: .gcs(emulator.baseURL))
        for (name, data) in objects {
            _ = try await storage.reference(withPath: name).putData(data).value
        }
    }

    /// Stores an object under its exact name (such as `keep/`, which `reference(withPath:)` would normalize).
    static func putRaw(_ name: String, _ data: Data, in emulator: StorageEmulator) async throws {
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        _ = try await storage.reference(objectName: name).putDataAsync(data)
    }

    static func objectBytes(_ emulator: StorageEmulator, _ name: String) async throws -> Data? {
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        do {
            return try await storage.reference(withPath: name).data(maxSize: 64 << 20)
        } catch  where error.code == .objectNotFound {
            return nil
        }
    }

    /// Reads a descriptor to its end on a thread of its own.
    static func readAll(_ fd: Int32) -> Task<Data, Never> {
        Task.detached {
            await withCheckedContinuation { continuation in
                Thread {
                    var data = Data()
                    var buffer = [UInt8](repeating: 0, count: 65536)
                    while true {
                        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                        if count > 0 {
                            data.append(contentsOf: buffer[0..<count])
                        } else if count < 0 && errno == EINTR {
                            continue
                        } else {
                            break
                        }
                    }
                    close(fd)
                    continuation.resume(returning: data)
                }.start()
            }
        }
    }

    /// Runs `cp WORDS --endpoint EMULATOR` with standard output going into a pipe; the status and output.
    static func cp(
        _ words: [String], _ emulator: StorageEmulator, input: Int32? = nil, pageSize: Int? = nil
    ) async throws -> (ExitCode, Data) {
        var command = try CopyCommand(words + ["--endpoint", emulator.baseURL.absoluteString], environment: [:])
        if let input { command.input = input }
        if let pageSize { command.pageSize = pageSize }
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let collected = readAll(fds[0])
        let writer = OutputWriter(fd: fds[1])
        let status = await command.run(output: writer)
        writer.finish()
        // Every write was awaited, so everything is in the pipe: the reader sees the end next.
        close(fds[1])
        return (status, await collected.value)
    }

    static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    // MARK: Downloads

    @Test func downloadsToAFileOrIntoADirectoryAndAMissingObjectLeavesNothing() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let data = TestSupport.payload(size: 300 * 1024 + 5, seed: 11)
        try await Self.put(["docs/a.bin": data], in: emulator)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }

        let named = directory.appendingPathComponent("named.bin")
        #expect(try await Self.cp(["--quiet", "gs://demo/docs/a.bin", named.path], emulator).0 == .success)
        // Bools, not `==` inside #expect: a failure would diff 300 KiB element by element.
        #expect(try Data(contentsOf: named) == data ? true : false)
        // A trailing slash, or an existing directory, takes the object's name.
        let inside = directory.appendingPathComponent("inside")
        try FileManager.default.createDirectory(at: inside, withIntermediateDirectories: false)
        #expect(try await Self.cp(["--quiet", "gs://demo/docs/a.bin", inside.path + "/"], emulator).0 == .success)
        #expect(try Data(contentsOf: inside.appendingPathComponent("a.bin")) == data ? true : false)
        try FileManager.default.removeItem(at: inside.appendingPathComponent("a.bin"))
        #expect(try await Self.cp(["--quiet", "gs://demo/docs/a.bin", inside.path], emulator).0 == .success)
        #expect(try Data(contentsOf: inside.appendingPathComponent("a.bin")) == data ? true : false)

        let missing = directory.appendingPathComponent("missing.bin")
        #expect(try await Self.cp(["--quiet", "gs://demo/docs/absent.bin", missing.path], emulator).0 == .notFound)
        // Neither the file nor a temporary one is left.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["inside", "named.bin"])
    }

    @Test func standardOutputGetsEveryByteThroughAPipe() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let data = TestSupport.payload(size: 3 * 1024 * 1024 + 7, seed: 12)
        try await Self.put(["big.bin": data], in: emulator)
        let (status, output) = try await Self.cp(["gs://demo/big.bin", "-"], emulator)
        #expect(status == .success)
        // A Bool, not `==` inside #expect: a failure would diff 3 MiB element by element.
        let same = output == data
        #expect(same, "\(output.count) bytes written of \(data.count)")
        let (missing, nothing) = try await Self.cp(["gs://demo/absent.bin", "-"], emulator)
        #expect(missing == .notFound && nothing.isEmpty)
    }

    // MARK: Standard input

    @Test func standardInputOfUnknownSizeLargerThanABlockIsStored() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        // More than two 1 MiB blocks, ending mid-block, written in pieces as a pipeline would.
        let data = TestSupport.payload(size: 2 * 1024 * 1024 + 300 * 1024 + 3, seed: 13)
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }
        #expect(CopyCommand.regularFileRemainder(readEnd) == nil)
        let writer = Thread {
            data.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let count = write(writeEnd, raw.baseAddress! + offset, min(40_000, raw.count - offset))
                    if count <= 0 { break }
                    offset += count
                }
            }
            close(writeEnd)
        }
        writer.start()
        let (status, output) = try await Self.cp(["-", "gs://demo/in/stdin.bin"], emulator, input: readEnd)
        #expect(status == .success, "\(Self.text(output))")
        let stored = try await Self.objectBytes(emulator, "in/stdin.bin")
        let same = stored == data
        #expect(same, "\(stored?.count ?? -1) bytes stored of \(data.count)")
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        let metadata = try await storage.reference(withPath: "in/stdin.bin").getMetadata()
        #expect(metadata.contentType == "application/octet-stream")
    }

    @Test func aRegularFileOnStandardInputDeclaresWhatIsLeftOfIt() throws {
        let file = try TestSupport.file(named: "stdin.bin", containing: Data(count: 1000))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let fd = open(file.path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(CopyCommand.regularFileRemainder(fd) == 1000)
        #expect(lseek(fd, 300, SEEK_SET) == 300)
        #expect(CopyCommand.regularFileRemainder(fd) == 700)
    }

    /// The reader never runs far ahead of its consumer: with one block taken, the writer of
    /// the pipe is held back once the pipe and at most two more blocks are full.
    @Test func standardInputIsReadNoFasterThanItIsConsumed() async throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let written = Atomic<Int>(0)
        let total = 8 * 1024 * 1024
        let writer = Thread {
            let piece = [UInt8](repeating: 7, count: 4096)
            while written.load(ordering: .relaxed) < total {
                let count = piece.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                written.add(count, ordering: .relaxed)
            }
            close(writeEnd)
        }
        writer.start()
        let blockSize = 64 * 1024
        var iterator = FileDescriptorBlocks(fd: readEnd, blockSize: blockSize).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.count == blockSize)
        // Give a reader that does not wait for its consumer time to drain the writer (this wait
        // cannot make a correct reader fail: the bound below holds however long it is).
        try await Task.sleep(for: .milliseconds(300))
        // F_GETPIPE_SZ (1032 on Linux) is not exported to Swift; 64 KiB elsewhere.
        var pipeCapacity = 65536
        #if os(Linux)
        pipeCapacity = max(pipeCapacity, Int(fcntl(readEnd, 1032)))
        #endif
        #expect(written.load(ordering: .relaxed) <= pipeCapacity + 3 * blockSize + 4096)
        // Then everything still comes, in order and in full.
        var count = first?.count ?? 0
        while let block = try await iterator.next() { count += block.count }
        #expect(count == total)
        close(readEnd)
    }

    // MARK: -r

    /// A tree of nested files, a link to a file (copied as the file), a link to a directory
    /// (not followed) and a FIFO (a failure, never opened).
    static func tree() throws -> (root: URL, directory: URL, files: [String: Data]) {
        let root = try TestSupport.temporaryDirectory()
        let directory = root.appendingPathComponent("tree")
        var files: [String: Data] = [:]
        for (index, name) in ["a.txt", "b.bin", "sub/c.txt", "sub/d.txt", "sub/deeper/e.bin", "sub/deeper/f", "g", "h"]
            .enumerated()
        {
            files[name] = TestSupport.payload(size: 1000 * index + 1, seed: UInt64(index))
        }
        for (name, data) in files {
            let url = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent("link.txt").path, withDestinationPath: "a.txt")
        files["link.txt"] = files["a.txt"]
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent("sub/deeper/loop").path, withDestinationPath: "..")
        try #require(mkfifo(directory.appendingPathComponent("sub/pipe").path, 0o600) == 0)
        return (root, directory, files)
    }

    @Test func rCopiesADirectoryUpAndBackWithASummaryOfFailures() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let (root, directory, files) = try Self.tree()
        defer { try? FileManager.default.removeItem(at: root) }
        let fifo = directory.appendingPathComponent("sub/pipe").path

        // More files than jobs; backup/ holds nothing yet, so it becomes the copy.
        let (status, output) = try await Self.cp(
            ["-r", "--jobs", "2", "--quiet", directory.path, "gs://demo/backup"], emulator)
        let bytes = files.values.reduce(0) { $0 + $1.count }
        #expect(status == .localFile)
        #expect(
            Self.text(output)
                == "Copied 9 files (\(bytes) bytes) to gs://demo/backup/; 1 failed:\n  \(fifo): a FIFO (named pipe);"
                + " cp uploads regular files only\n")
        for (name, data) in files {
            #expect(try await Self.objectBytes(emulator, "backup/\(name)") == data, "\(name)")
        }
        #expect(try await Self.objectBytes(emulator, "backup/sub/deeper/loop/c.txt") == nil)
        // Now backup/ exists: the copy goes inside it under the directory's name, as with gsutil.
        try FileManager.default.removeItem(atPath: fifo)
        let (again, againOutput) = try await Self.cp(["-r", "--quiet", directory.path, "gs://demo/backup"], emulator)
        #expect(again == .success)
        #expect(Self.text(againOutput) == "Copied 9 files (\(bytes) bytes) to gs://demo/backup/tree/\n")
        #expect(try await Self.objectBytes(emulator, "backup/tree/sub/deeper/e.bin") == files["sub/deeper/e.bin"])

        // And back, paging through 2-entry listings: a new directory becomes the copy.
        let restored = root.appendingPathComponent("restored")
        let (down, downOutput) = try await Self.cp(
            ["-r", "--jobs", "3", "--quiet", "gs://demo/backup", restored.path], emulator, pageSize: 2)
        #expect(down == .success, "\(Self.text(downOutput))")
        var expected = files
        for (name, data) in files { expected["tree/" + name] = data }
        #expect(try TestSupport.files(below: restored) == expected)
        // An existing directory gets the prefix's name inside it.
        let existing = root.appendingPathComponent("existing")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: false)
        #expect(try await Self.cp(["-r", "--quiet", "gs://demo/backup/tree", existing.path], emulator).0 == .success)
        #expect(try TestSupport.files(below: existing.appendingPathComponent("tree")) == files)
    }

    @Test func rDownloadRefusesNamesThatLeaveTheDirectoryAndSkipsFolderPlaceholders() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        try await Self.put(
            [
                "p/ok.txt": Data("ok".utf8), "p/../escaped.txt": Data("no".utf8),
                "p/a/../../../escaped-too": Data("no".utf8), "p/sub/./dot": Data("no".utf8),
            ],
            in: emulator)
        try await Self.putRaw("p/folder/", Data(), in: emulator)
        try await Self.putRaw("p/sub/", Data(), in: emulator)
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let target = root.appendingPathComponent("deep/out")
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)

        let (status, output) = try await Self.cp(["-r", "--quiet", "gs://demo/p", target.path], emulator)
        #expect(status == .localFile)
        let lines = Self.text(output).split(separator: "\n").map(String.init)
        #expect(lines.first == "Copied 1 file (2 bytes) to \(target.path)/; 3 failed:")
        #expect(lines.count == 4)
        #expect(lines.dropFirst().allSatisfy { $0.contains("refused: its name would leave") })
        // Only the good object was written, and nothing above the directory.
        #expect(try TestSupport.files(below: root) == ["deep/out/ok.txt": Data("ok".utf8)])
    }

    @Test func rOfAPrefixThatMatchesNothingExits5() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(try await Self.cp(["-r", "gs://demo/nothing", root.path + "/x"], emulator).0 == .notFound)
    }

    // MARK: Checked before anything starts

    /// With nothing configured the built-in emulator would start (making its directory): its
    /// absence proves the command stopped before contacting or starting anything.
    static func runWithBuiltInEmulator(_ words: [String]) async throws -> (ExitCode, started: Bool) {
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let status = await runCommandLine(words, environment: ["XDG_DATA_HOME": home.path])
        return (status, FileManager.default.fileExists(atPath: home.appendingPathComponent("cloud-storage").path))
    }

    @Test func rChecksEveryObjectNameBeforeAnythingIsContacted() async throws {
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent("names")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("z"), withIntermediateDirectories: true)
        for name in ["a", "b", "c"] { try Data("x".utf8).write(to: directory.appendingPathComponent(name)) }
        // The last file in name order has a line feed in its name, which object names cannot hold.
        try Data("x".utf8).write(to: directory.appendingPathComponent("z/bad\nname"))
        let (status, started) = try await Self.runWithBuiltInEmulator([
            "cp", "-r", "--quiet", directory.path, "gs://demo/p",
        ])
        #expect(status == .usage)
        #expect(!started)
        // Without the bad name the same command does start the emulator and copy.
        try FileManager.default.removeItem(at: directory.appendingPathComponent("z"))
        let (good, goodStarted) = try await Self.runWithBuiltInEmulator([
            "cp", "-r", "--quiet", directory.path, "gs://demo/p",
        ])
        #expect(good == .success && goodStarted)
    }

    @Test func localProblemsExit3BeforeAnythingStarts() async throws {
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let missing = root.appendingPathComponent("missing").path
        let file = root.appendingPathComponent("file")
        try Data("x".utf8).write(to: file)
        for words in [
            ["cp", "-r", missing, "gs://demo/p"],
            ["cp", "gs://demo/o", missing + "/sub/file"],
            ["cp", "-r", "gs://demo/p", missing + "/sub/dir"],
            ["cp", "-r", "gs://demo/p", file.path],
            ["cp", "gs://demo/o", root.path + "/file/x"],
        ] {
            let (status, started) = try await Self.runWithBuiltInEmulator(words)
            #expect(status == .localFile, "\(words)")
            #expect(!started, "\(words)")
        }
    }

    @Test(arguments: [
        ["cp", "a", "b"], ["cp", "gs://demo/a/", "gs://demo/b"], ["cp", "-r", "-", "gs://demo/a"],
        ["cp", "-r", "gs://demo/a", "-"], ["cp", "-r", "/etc/hostname", "gs://demo/a"], ["cp", "-", "gs://demo/"],
        ["cp", "gs://demo/", "out"], ["cp", "-r", "gs://Bad/p", "out"],
        ["cp", "--jobs", "300", "-r", "a", "gs://demo"],
    ])
    func usageMistakesExit2BeforeAnythingStarts(words: [String]) async throws {
        let (status, started) = try await Self.runWithBuiltInEmulator(words)
        #expect(status == .usage)
        #expect(!started)
    }
}

extension CopyDirectionsTests {
    /// Cancelling `cp -r` (as Ctrl-C does) cancels the uploads under way, deleting their
    /// sessions, starts no more, and exits 130.
    @Test func cancellingRCancelsTheUploadsAndExits130() async throws {
        // Requests: 1 starts the first file's session, 2 sends 256K, 3 is held after 100K until
        // the client closes it, so nothing can finish before the cancel.
        let emulator = try Self.emulator { $0.faults = ["pass", "pass", "stall-after-100K"] }
        defer { emulator.stop() }
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent("big")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        for name in ["1.bin", "2.bin", "3.bin"] {
            try TestSupport.payload(size: 9 * 1024 * 1024, seed: 1).write(to: directory.appendingPathComponent(name))
        }
        // The destination ends in /, so no listing decides the names: the requests are the uploads'.
        let command = Task {
            try await Self.cp(
                ["-r", "--quiet", "--jobs", "1", "--chunk-size", "256K", directory.path, "gs://demo/"], emulator)
        }
        let stalled: Int64 = 256 * 1024 + 100 * 1024
        // The bound only matters when the test has already failed.
        let deadline = ContinuousClock.now + .seconds(120)
        while emulator.bytesReceived < stalled && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try #require(emulator.bytesReceived >= stalled)
        command.cancel()
        let (status, output) = try await command.value
        #expect(status == .interrupted)
        #expect(output.isEmpty)
        for name in ["1.bin", "2.bin", "3.bin"] {
            #expect(try await Self.objectBytes(emulator, "big/\(name)") == nil)
        }
    }
}
