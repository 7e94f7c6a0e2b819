import CloudStorage
import Foundation
import HTTPTestServers
import StorageEmulator
import StorageTestSupport
import Synchronization
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

/// `cloud-storage` run in-process through `runCommandLine`, against the
/// built-in emulator (in a temporary directory) and against emulators the
/// tests start; what got stored is read back over HTTP.
///
/// Serialized because `cp` takes over SIGINT and SIGTERM while it runs.
@Suite("cloud-storage command", .serialized, .timeLimit(.minutes(10)))
struct CommandLineToolTests {
    // MARK: Helpers

    /// A new temporary directory holding `file` with `bytes` pseudo-random bytes.
    static func file(_ name: String = "payload.bin", size: Int, seed: UInt64 = 7) throws -> (URL, Data) {
        let data = TestSupport.payload(size: size, seed: seed)
        return (try TestSupport.file(named: name, containing: data), data)
    }

    /// GET `path` on `baseURL`; the status and body.
    static func get(_ baseURL: URL, _ path: String, token: String? = nil) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: baseURL.absoluteString + path)!)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// The object's bytes, or nil when the emulator answers 404.
    static func objectBytes(
        _ emulator: StorageEmulator, _ bucket: String, _ name: String, token: String? = nil
    ) async throws -> Data? {
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let (status, data) = try await get(
            emulator.baseURL, "/storage/v1/b/\(bucket)/o/\(encoded)?alt=media", token: token)
        if status == 404 { return nil }
        try #require(status == 200, "GET \(bucket)/\(name) answered \(status)")
        return data
    }

    /// The object's resource JSON.
    static func objectResource(
        _ emulator: StorageEmulator, _ bucket: String, _ name: String
    ) async throws -> [String: Any] {
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let (status, data) = try await get(emulator.baseURL, "/storage/v1/b/\(bucket)/o/\(encoded)")
        try #require(status == 200, "GET \(bucket)/\(name) answered \(status)")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// An emulator serving what the built-in one stored in `directory`.
    static func reopen(_ directory: URL) throws -> StorageEmulator {
        var configuration = StorageEmulator.Configuration()
        configuration.backing = .directory(directory)
        configuration.autoCreateBuckets = false
        return try StorageEmulator.start(configuration)
    }

    static func emulator(
        _ configure: (inout StorageEmulator.Configuration) -> Void = { _ in }
    ) throws
        -> StorageEmulator
    {
        var configuration = StorageEmulator.Configuration()
        configure(&configuration)
        return try StorageEmulator.start(configuration)
    }

    // MARK: The built-in emulator

    @Test func cpWithNoEndpointStoresInTheBuiltInEmulatorUnderXDGDataHome() async throws {
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let (source, data) = try Self.file("notes.md", size: 300 * 1024)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }

        let status = await runCommandLine(
            ["cp", "--quiet", source.path, "gs://demo/docs/notes.md"], environment: ["XDG_DATA_HOME": home.path]
        )
        #expect(status == .success)

        let directory = home.appendingPathComponent("cloud-storage/emulator", isDirectory: true)
        let emulator = try Self.reopen(directory)
        defer { emulator.stop() }
        #expect(try await Self.objectBytes(emulator, "demo", "docs/notes.md") == data)
        #expect(
            try await Self.objectResource(emulator, "demo", "docs/notes.md")["contentType"] as? String
                == "text/markdown")
    }

    @Test func aDestinationEndingInASlashOrNamingOnlyTheBucketGetsTheFileName() async throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (source, data) = try Self.file("photo.jpg", size: 1000)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }

        for destination in ["gs://demo/images/", "gs://demo", "gs://demo/"] {
            let status = await runCommandLine(
                ["cp", "--quiet", "--emulator-dir", directory.path, source.path, destination], environment: [:]
            )
            #expect(status == .success, "\(destination)")
        }
        let emulator = try Self.reopen(directory)
        defer { emulator.stop() }
        #expect(try await Self.objectBytes(emulator, "demo", "images/photo.jpg") == data)
        #expect(try await Self.objectBytes(emulator, "demo", "photo.jpg") == data)
        #expect(try await Self.objectBytes(emulator, "demo", "images/") == nil)
    }

    @Test func contentTypeAndChunkSizeAreHonoured() async throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Above the one-request threshold, so the chunk size shapes the requests.
        let (source, data) = try Self.file("big.bin", size: 9 * 1024 * 1024 + 5)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }

        let status = await runCommandLine(
            [
                "cp", "--quiet", "--emulator-dir", directory.path, "--content-type", "application/x-test",
                "--chunk-size", "256K", source.path, "gs://demo/big.bin",
            ],
            environment: [:]
        )
        #expect(status == .success)
        let emulator = try Self.reopen(directory)
        defer { emulator.stop() }
        #expect(try await Self.objectBytes(emulator, "demo", "big.bin") == data)
        #expect(
            try await Self.objectResource(emulator, "demo", "big.bin")["contentType"] as? String == "application/x-test"
        )
    }

    @Test(arguments: ["300K", "abc", "0"])
    func aBadChunkSizeExits2BeforeStartingAnything(size: String) async throws {
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let status = await runCommandLine(
            ["cp", "--quiet", "--chunk-size", size, "README.md", "gs://demo/x"],
            environment: ["XDG_DATA_HOME": home.path]
        )
        #expect(status == .usage)
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("cloud-storage").path))
    }

    @Test func aMissingFileExits3() async throws {
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let missing = home.appendingPathComponent("no-such-file.txt").path
        let status = await runCommandLine(
            ["cp", "--quiet", missing, "gs://demo/x"], environment: ["XDG_DATA_HOME": home.path]
        )
        #expect(status == .localFile)
        #expect(status.rawValue == 3)
    }

    @Test(arguments: [
        [], ["frobnicate"], ["cp"], ["cp", "--bogus", "a", "gs://demo/b"], ["emulator", "--bogus"],
        ["cp", "a", "b", "c"],
    ])
    func unknownCommandsAndOptionsExit2(arguments: [String]) async {
        let status = await runCommandLine(arguments, environment: ["XDG_DATA_HOME": "/nonexistent"])
        #expect(status == .usage)
        #expect(status.rawValue == 2)
    }

    @Test(arguments: [["help"], ["help", "cp"], ["cp", "--help"], ["emulator", "-h"]])
    func helpExits0(arguments: [String]) async {
        #expect(await runCommandLine(arguments, environment: [:]) == .success)
    }

    // MARK: Endpoints

    @Test func endpointSendsTheJSONAPIToARunningEmulator() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let (source, data) = try Self.file(size: 70_000)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        let status = await runCommandLine(
            ["cp", "--quiet", "--endpoint", emulator.baseURL.absoluteString, source.path, "gs://demo/gcs.bin"],
            environment: ["XDG_DATA_HOME": "/nonexistent"]
        )
        #expect(status == .success)
        #expect(try await Self.objectBytes(emulator, "demo", "gcs.bin") == data)
        // The JSON API gives no Firebase download token; Firebase v0 uploads get one.
        let metadata = try await Self.objectResource(emulator, "demo", "gcs.bin")["metadata"] as? [String: String]
        #expect(metadata?["firebaseStorageDownloadTokens"] == nil)
    }

    @Test func firebaseSendsFirebaseV0ToARunningEmulator() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let (source, data) = try Self.file(size: 9 * 1024 * 1024)  // a resumable v0 session
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        let status = await runCommandLine(
            ["cp", "--quiet", "--firebase", emulator.baseURL.absoluteString, source.path, "gs://demo/v0.bin"],
            environment: ["XDG_DATA_HOME": "/nonexistent"]
        )
        #expect(status == .success)
        #expect(try await Self.objectBytes(emulator, "demo", "v0.bin") == data)
        let metadata = try await Self.objectResource(emulator, "demo", "v0.bin")["metadata"] as? [String: String]
        #expect(metadata?["firebaseStorageDownloadTokens"]?.isEmpty == false)
    }

    @Test func theEmulatorVariablesInThePassedEnvironmentAreHonoured() async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let (source, data) = try Self.file(size: 5000)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        let hostAndPort = "127.0.0.1:\(emulator.port)"

        let gcs = await runCommandLine(
            ["cp", "--quiet", source.path, "gs://demo/from-env.bin"],
            environment: ["XDG_DATA_HOME": home.path, "STORAGE_EMULATOR_HOST": hostAndPort]
        )
        #expect(gcs == .success)
        #expect(try await Self.objectBytes(emulator, "demo", "from-env.bin") == data)

        let firebase = await runCommandLine(
            ["cp", "--quiet", source.path, "gs://demo/from-firebase-env.bin"],
            environment: ["XDG_DATA_HOME": home.path, "FIREBASE_STORAGE_EMULATOR_HOST": hostAndPort]
        )
        #expect(firebase == .success)
        #expect(try await Self.objectBytes(emulator, "demo", "from-firebase-env.bin") == data)
        // The built-in emulator was never started.
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("cloud-storage").path))
    }

    // MARK: Failures

    @Test(arguments: ["--endpoint", "--firebase"])
    func theTokenIsSentAndAWrongOneExits4(flag: String) async throws {
        let emulator = try Self.emulator { $0.requiredToken = "s3cret" }
        defer { emulator.stop() }
        let (source, data) = try Self.file(size: 2000)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        let url = emulator.baseURL.absoluteString

        let right = await runCommandLine(
            ["cp", "--quiet", flag, url, "--token", "s3cret", source.path, "gs://demo/right.bin"], environment: [:]
        )
        #expect(right == .success)
        #expect(try await Self.objectBytes(emulator, "demo", "right.bin", token: "s3cret") == data)

        let wrong = await runCommandLine(
            ["cp", "--quiet", flag, url, "--token", "wrong", source.path, "gs://demo/wrong.bin"], environment: [:]
        )
        #expect(wrong == .denied)
        #expect(wrong.rawValue == 4)
        let none = await runCommandLine(
            ["cp", "--quiet", flag, url, source.path, "gs://demo/none.bin"], environment: [:])
        #expect(none == .denied)
        // The token may come from CLOUD_STORAGE_TOKEN too.
        let fromEnvironment = await runCommandLine(
            ["cp", "--quiet", flag, url, source.path, "gs://demo/env.bin"],
            environment: ["CLOUD_STORAGE_TOKEN": "s3cret"]
        )
        #expect(fromEnvironment == .success)
        #expect(try await Self.objectBytes(emulator, "demo", "wrong.bin", token: "s3cret") == nil)
    }

    @Test(arguments: ["--endpoint", "--firebase"])
    func aMissingBucketExits5(flag: String) async throws {
        let emulator = try Self.emulator { $0.autoCreateBuckets = false }
        defer { emulator.stop() }
        try emulator.createBucket("present")
        let (source, _) = try Self.file(size: 2000)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        let url = emulator.baseURL.absoluteString
        let missing = await runCommandLine(
            ["cp", "--quiet", flag, url, source.path, "gs://absent/x"], environment: [:])
        #expect(missing == .notFound)
        #expect(missing.rawValue == 5)
        let present = await runCommandLine(
            ["cp", "--quiet", flag, url, source.path, "gs://present/x"], environment: [:])
        #expect(present == .success)
    }

    // MARK: Ctrl-C

    @Test func cancellingTheCommandCancelsTheUploadExits130AndStoresNothing() async throws {
        // Requests: 1 starts the session, 2 sends the first 256K, 3 is held after 100K until the
        // client closes it: the upload cannot finish before the cancel, however slow the machine.
        let emulator = try Self.emulator { $0.faults = ["pass", "pass", "stall-after-100K"] }
        defer { emulator.stop() }
        let (source, _) = try Self.file(size: 9 * 1024 * 1024)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }

        let command = Task {
            await runCommandLine(
                [
                    "cp", "--quiet", "--chunk-size", "256K", "--endpoint", emulator.baseURL.absoluteString, source.path,
                    "gs://demo/cancelled.bin",
                ],
                environment: [:]
            )
        }
        // Cancel while the third request is held, with 256K already committed. (The bound only
        // matters when the test has already failed.)
        let stalled: Int64 = 256 * 1024 + 100 * 1024
        let deadline = ContinuousClock.now + .seconds(120)
        while emulator.bytesReceived < stalled && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try #require(emulator.bytesReceived >= stalled)
        command.cancel()
        let status = await command.value
        #expect(status == .interrupted)
        #expect(status.rawValue == 130)
        // The session was deleted, and the held request had committed what it would before it
        // was held, so nothing can store the object any more.
        #expect(try await Self.objectBytes(emulator, "demo", "cancelled.bin") == nil)
    }

    // MARK: Sources that are not regular files

    enum NonRegularSource: String, CaseIterable, Sendable {
        case fifo, directory, characterDevice, socket
    }

    @Test(arguments: NonRegularSource.allCases)
    func aSourceThatIsNotARegularFileExits3BeforeOpeningOrStartingAnything(kind: NonRegularSource) async throws {
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        var path = home.appendingPathComponent("source").path
        var fifoWriter: FIFOWriter?
        switch kind {
        case .fifo:
            try #require(mkfifo(path, 0o600) == 0)
            // A tool that opens the FIFO pairs with this writer instead of blocking for ever.
            fifoWriter = FIFOWriter(path: path)
        case .directory:
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        case .characterDevice:
            path = "/dev/null"
        case .socket:
            // The socket's file stays after the descriptor closes.
            close(try Self.unixSocket(at: path))
        }
        let status = await runCommandLine(
            ["cp", "--quiet", path, "gs://demo/x"], environment: ["XDG_DATA_HOME": home.path])
        #expect(status == .localFile)
        // Refused before the built-in emulator was started (it would have made its directory).
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("cloud-storage").path))
        if let fifoWriter {
            let openedByTheTool = await fifoWriter.release()
            #expect(!openedByTheTool, "the tool opened the FIFO")
        }
    }

    /// A Unix-domain socket bound at `path`; the caller closes the descriptor.
    static func unixSocket(at path: String) throws -> Int32 {
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        try #require(fd >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        try #require(bytes.count < MemoryLayout.size(ofValue: address.sun_path))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0)
        return fd
    }

    // MARK: Signals, in a process of its own

    /// The `cloud-storage` executable built beside this test bundle.
    static var toolExecutable: URL {
        get throws {
            let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            let tool = bundle.deletingLastPathComponent().appendingPathComponent("cloud-storage")
            try #require(FileManager.default.isExecutableFile(atPath: tool.path), "no \(tool.path); build it first")
            return tool
        }
    }

    /// A server that reads a request head and never answers: `cp` must still
    /// end promptly on SIGINT or SIGTERM, with the status the signal calls
    /// for, rather than wait out the request time-out (60 s).
    @Test(arguments: [(SIGINT, 1000, ExitCode.interrupted), (SIGTERM, 9 * 1024 * 1024, ExitCode.terminated)])
    func aSignalEndsACopyToAServerThatNeverAnswers(signal: Int32, size: Int, expected: ExitCode) async throws {
        let requests = Atomic<Int>(0)
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readHead() != nil else { return }
            requests.add(1, ordering: .releasing)
            Self.holdUntilClosed(connection.fd)
        }
        defer { server.stop() }
        let (source, _) = try Self.file(size: size)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }

        // Started with SIGINT and SIGTERM at their defaults (Foundation's Process would pass on the
        // test process's dispositions, which an in-process `cp` of another test sets to ignored).
        let (process, errors) = try CopyResumeTests.launch(
            ["cp", "--quiet", "--endpoint", "http://127.0.0.1:\(server.port)", source.path, "gs://demo/held.bin"],
            environment: ["HOME": source.deletingLastPathComponent().path])
        defer { process.send(SIGKILL) }

        // Signalled once the server holds the tool's request.
        while requests.load(ordering: .acquiring) == 0 && process.isRunning {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(process.isRunning, "cp ended before its request reached the server")
        process.send(signal)
        // The tool gives the server 2 s to confirm; unfixed, it waited 60 s. No guess of its own
        // (a starved machine can exceed any): the suite's time limit ends a cp that never ends.
        while process.isRunning {
            try await Task.sleep(for: .milliseconds(10))
        }
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == expected.rawValue, "\(errors.text)")
    }

    /// Reads and drops whatever comes until the peer closes or the server stops.
    static func holdUntilClosed(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { continue }
            return
        }
    }
}

/// The writing end of a FIFO, opened (blocking) on a thread of its own, so
/// that a reader that opens the FIFO pairs with it instead of waiting for ever.
final class FIFOWriter: Sendable {
    private let releasing = Atomic(false)
    private let openedEarly = Atomic(false)
    private let done = Atomic(false)
    let path: String

    init(path: String) {
        self.path = path
        let thread = Thread { [self] in
            let fd = open(path, O_WRONLY)
            // Only a reader other than `release` could have let the open return before it.
            openedEarly.store(!releasing.load(ordering: .acquiring), ordering: .relaxed)
            if fd >= 0 { close(fd) }
            done.store(true, ordering: .releasing)
        }
        thread.start()
    }

    /// Opens the FIFO for reading so the writer's open returns, and waits for it.
    ///
    /// - Returns: Whether something else had opened the FIFO for reading first.
    func release() async -> Bool {
        releasing.store(true, ordering: .releasing)
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        while !done.load(ordering: .acquiring) {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if reader >= 0 { close(reader) }
        return openedEarly.load(ordering: .relaxed)
    }
}
