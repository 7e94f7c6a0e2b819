import CloudStorage
import FakeGCSServer
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorageCLI
@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cp` records a large upload's session and a rerun after `kill -9` resumes it: the
/// `cloud-storage` executable runs as a process of its own, held mid-upload by an emulator
/// fault (`stall-after`, which holds the request until the client goes), and is killed once the
/// emulator has committed some chunks; then the same command runs again.
@Suite("cp resumes after kill -9", .serialized, .timeLimit(.minutes(10)))
struct CopyResumeTests {
    static let chunk = 1024 * 1024
    /// Above the 8 MiB multipart threshold, so the upload goes through a resumable session.
    static let size = 12 * chunk
    /// The session's start, three 1 MiB chunks, then a request held after half a chunk.
    static let heldPlan = ["pass", "pass", "pass", "pass", "stall-after-512K"]
    /// What the emulator has received, at least, once it holds the request.
    static let heldAt = Int64(3 * chunk + chunk / 2)

    /// A temporary directory with the file to upload and the state directory, removed after `body`.
    struct Scene {
        let directory: URL
        let file: URL
        let payload: Data
        var state: URL { directory.appendingPathComponent("state", isDirectory: true) }
        var records: URL { state.appendingPathComponent("cloud-storage/uploads", isDirectory: true) }
        var environment: [String: String] { ["HOME": directory.path, "XDG_STATE_HOME": state.path] }

        func recordFiles() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: records.path)) ?? []).filter {
                $0.hasSuffix(".json")
            }
        }
    }

    static func withScene(_ body: (Scene) async throws -> Void) async throws {
        let payload = TestSupport.payload(size: size, seed: 41)
        let file = try TestSupport.file(named: "big.bin", containing: payload)
        let directory = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await body(Scene(directory: directory, file: file, payload: payload))
    }

    /// A launched tool's standard error, in a file.
    final class ErrorLog: Sendable {
        let url: URL

        init() throws {
            url = try TestSupport.temporaryDirectory().appendingPathComponent("stderr.txt")
        }

        var text: String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }

        deinit { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
    }

    /// Starts the tool (see ``ChildProcess``); returns it and its standard error.
    static func launch(_ arguments: [String], environment: [String: String]) throws -> (ChildProcess, ErrorLog) {
        let errors = try ErrorLog()
        let tool = try ChildProcess(
            try CommandLineToolTests.toolExecutable.path, arguments, environment: environment,
            errors: .file(errors.url.path))
        return (tool, errors)
    }

    /// Waits for `process` to end (the bound only matters once a test failed); its status and standard error.
    static func finish(_ process: ChildProcess, _ errors: ErrorLog) async throws -> (Int32, String) {
        let deadline = ContinuousClock.now + .seconds(240)
        while process.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        process.send(SIGKILL)
        await process.exited()
        return (process.terminationStatus, errors.text)
    }

    /// Waits until `condition` holds while `process` runs (polling state, not deciding by the clock).
    static func wait(for process: ChildProcess, until condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while !condition() && process.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try #require(condition(), "the upload never reached the held request")
        try #require(process.isRunning, "cp ended although the emulator holds its request")
    }

    static func kill9(_ process: ChildProcess, _ errors: ErrorLog) async throws {
        process.send(SIGKILL)
        let (status, _) = try await finish(process, errors)
        #expect(status == SIGKILL && process.terminationReason == .uncaughtSignal)
    }

    static func copyArguments(_ scene: Scene, endpoint: URL?) -> [String] {
        ["cp", "--quiet", "--chunk-size", "1M"]
            + (endpoint.map { ["--endpoint", $0.absoluteString] } ?? [
                "--emulator-dir", scene.directory.path + "/emulator",
            ])
            + [scene.file.path, "gs://resume-bucket/big.bin"]
    }

    // Large payloads are compared as one Bool: a failing == inside #expect diffs them byte by byte.

    /// The first run, killed while the emulator holds its fifth request: 3.5 MiB committed.
    static func killedUpload(_ scene: Scene, _ emulator: StorageEmulator) async throws {
        let (process, errors) = try launch(
            copyArguments(scene, endpoint: emulator.baseURL), environment: scene.environment)
        defer { process.send(SIGKILL) }
        try await wait(for: process) { emulator.bytesReceived >= heldAt && scene.recordFiles().count == 1 }
        try await kill9(process, errors)
    }

    static func storedBytes(_ emulator: StorageEmulator) async throws -> Data {
        let (status, data) = try await CommandLineToolTests.get(
            emulator.baseURL, "/storage/v1/b/resume-bucket/o/big.bin?alt=media")
        #expect(status == 200)
        return data
    }

    static func startEmulator(faults: [String]) throws -> StorageEmulator {
        var configuration = StorageEmulator.Configuration()
        configuration.faults = faults
        return try StorageEmulator.start(configuration)
    }

    // MARK: Separate emulator

    @Test func aRerunAfterKill9SendsOnlyWhatTheServerLacks() async throws {
        try await Self.withScene { scene in
            let emulator = try Self.startEmulator(faults: Self.heldPlan)
            defer { emulator.stop() }
            try await Self.killedUpload(scene, emulator)
            let record = try #require(scene.recordFiles().first)
            let mode =
                try FileManager.default.attributesOfItem(atPath: scene.records.appendingPathComponent(record).path)[
                    .posixPermissions] as? Int
            #expect(mode == 0o600)
            let directoryMode =
                try FileManager.default.attributesOfItem(atPath: scene.records.path)[.posixPermissions] as? Int
            #expect(directoryMode == 0o700)

            let (process, errors) = try Self.launch(
                Self.copyArguments(scene, endpoint: emulator.baseURL), environment: scene.environment)
            let (status, stderr) = try await Self.finish(process, errors)
            #expect(status == 0, "\(stderr)")
            #expect(
                stderr.contains(
                    "resuming the upload of \(scene.file.path) from byte \(3 * Self.chunk + Self.chunk / 2)"))
            let stored = try await Self.storedBytes(emulator) == scene.payload
            #expect(stored)
            // Without resuming, the rerun alone sends all 12 MiB on top of the 3.5 MiB sent before.
            #expect(emulator.bytesReceived < Int64(Self.size + 2 * Self.chunk), "\(emulator.bytesReceived) bytes")
            #expect(scene.recordFiles().isEmpty, "the record is removed once the object is stored")
        }
    }

    @Test func aFileChangedBetweenRunsIsUploadedAgainFromTheStart() async throws {
        try await Self.withScene { scene in
            let emulator = try Self.startEmulator(faults: Self.heldPlan)
            defer { emulator.stop() }
            try await Self.killedUpload(scene, emulator)
            var changed = scene.payload
            changed[0] ^= 0xFF
            changed.append(contentsOf: [1, 2, 3])
            try changed.write(to: scene.file)

            let (process, errors) = try Self.launch(
                Self.copyArguments(scene, endpoint: emulator.baseURL), environment: scene.environment)
            let (status, stderr) = try await Self.finish(process, errors)
            #expect(status == 0, "\(stderr)")
            let notices = stderr.split(separator: "\n").filter { $0.contains("not resuming the recorded upload") }
            #expect(notices.count == 1 && notices[0].contains("size changed"), "\(stderr)")
            #expect(!stderr.contains("resuming the upload of"))
            let stored = try await Self.storedBytes(emulator) == changed
            #expect(stored)
            #expect(scene.recordFiles().isEmpty)
        }
    }

    @Test func ctrlCCancelsTheSessionAndRemovesTheRecord() async throws {
        try await Self.withScene { scene in
            let emulator = try Self.startEmulator(faults: Self.heldPlan)
            defer { emulator.stop() }
            let (process, errors) = try Self.launch(
                Self.copyArguments(scene, endpoint: emulator.baseURL), environment: scene.environment)
            defer { process.send(SIGKILL) }
            try await Self.wait(for: process) {
                emulator.bytesReceived >= Self.heldAt && scene.recordFiles().count == 1
            }
            process.send(SIGINT)
            let (status, stderr) = try await Self.finish(process, errors)
            #expect(status == ExitCode.interrupted.rawValue, "\(stderr)")
            #expect(scene.recordFiles().isEmpty, "the server's session is deleted: nothing is left to resume")
        }
    }

    /// An outage that outlasts the retries: the first run ends with status 6, the server's
    /// session left open and the record kept, and the rerun sends only what the server lacks.
    /// (A retry time of zero ends the run at the first failure, whatever the clock says.)
    @Test func aRerunAfterTheRetriesRanOutResumes() async throws {
        try await Self.withScene { scene in
            // The session's start and three 1 MiB chunks pass; the fourth chunk gets a 503.
            let emulator = try Self.startEmulator(faults: ["pass", "pass", "pass", "pass", "return-503"])
            defer { emulator.stop() }
            let arguments = Self.copyArguments(scene, endpoint: emulator.baseURL)
            let (first, firstErrors) = try Self.launch(
                arguments + ["--retry-time", "0"], environment: scene.environment)
            let (firstStatus, firstStderr) = try await Self.finish(first, firstErrors)
            #expect(firstStatus == ExitCode.unavailable.rawValue, "\(firstStderr)")
            #expect(scene.recordFiles().count == 1, "the record is kept for a rerun")
            #expect(emulator.application.sessions.count == 1, "the server's session is left open")

            let before = emulator.bytesReceived
            let (process, errors) = try Self.launch(arguments, environment: scene.environment)
            let (status, stderr) = try await Self.finish(process, errors)
            #expect(status == 0, "\(stderr)")
            #expect(
                stderr.contains("resuming the upload of \(scene.file.path) from byte \(3 * Self.chunk)"), "\(stderr)")
            #expect(emulator.bytesReceived - before == Int64(Self.size - 3 * Self.chunk), "only the rest is sent")
            let stored = try await Self.storedBytes(emulator) == scene.payload
            #expect(stored)
            #expect(scene.recordFiles().isEmpty)
        }
    }

    /// Each file of `cp -r` is resumed like a single file (into a prefix ending in /, which a
    /// rerun names the same way).
    @Test func aRecursiveCopyResumesItsFiles() async throws {
        try await Self.withScene { scene in
            let emulator = try Self.startEmulator(faults: Self.heldPlan)
            defer { emulator.stop() }
            let tree = scene.directory.appendingPathComponent("tree", isDirectory: true)
            try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: false)
            let file = tree.appendingPathComponent("big.bin")
            try FileManager.default.moveItem(at: scene.file, to: file)
            let arguments = [
                "cp", "-r", "--quiet", "--chunk-size", "1M", "--endpoint", emulator.baseURL.absoluteString, tree.path,
                "gs://resume-bucket/",
            ]
            let (first, firstErrors) = try Self.launch(arguments, environment: scene.environment)
            defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
            try await Self.wait(for: first) { emulator.bytesReceived >= Self.heldAt && scene.recordFiles().count == 1 }
            try await Self.kill9(first, firstErrors)

            let (process, errors) = try Self.launch(arguments, environment: scene.environment)
            let (status, stderr) = try await Self.finish(process, errors)
            #expect(status == 0, "\(stderr)")
            #expect(stderr.contains("resuming the upload of \(file.path) from byte \(Self.heldAt)"), "\(stderr)")
            #expect(emulator.bytesReceived < Int64(Self.size + 2 * Self.chunk), "\(emulator.bytesReceived) bytes")
            let (code, data) = try await CommandLineToolTests.get(
                emulator.baseURL, "/storage/v1/b/resume-bucket/o/tree%2Fbig.bin?alt=media")
            let stored = code == 200 && data == scene.payload
            #expect(stored)
            #expect(scene.recordFiles().isEmpty)
        }
    }

    // MARK: Built-in emulator

    /// A port below 32768 that is free now: an emulator could listen on it.
    static func portBelowTheEphemeralRange() throws -> Int {
        for _ in 0..<200 {
            var configuration = StorageEmulator.Configuration()
            configuration.port = Int.random(in: 20_000..<32_000)
            if let probe = try? StorageEmulator.start(configuration) {
                probe.stop()
                return configuration.port
            }
        }
        throw CocoaError(.featureUnsupported)
    }

    /// The tool and its built-in emulator die together; the rerun starts the emulator again on
    /// the port it recorded, where the session's URL points, and resumes.
    @Test func theBuiltInEmulatorResumesOnItsRecordedPort() async throws {
        try await Self.withScene { scene in
            let emulatorDirectory = scene.directory.appendingPathComponent("emulator", isDirectory: true)
            let staged = emulatorDirectory.appendingPathComponent(".upload-sessions", isDirectory: true)
            func stagedBytes() -> Int64 {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: staged.path)) ?? []
                return names.filter { $0.hasSuffix(".data") }.reduce(0) { total, name in
                    let attributes = try? FileManager.default.attributesOfItem(
                        atPath: staged.appendingPathComponent(name).path)
                    return total + ((attributes?[.size] as? Int64) ?? 0)
                }
            }
            // Both runs listen on a port below the ephemeral range (32768 and up on Linux), which
            // no connection of a concurrent test can be given between the kill and the rerun.
            try FileManager.default.createDirectory(at: emulatorDirectory, withIntermediateDirectories: true)
            try Data("\(try Self.portBelowTheEphemeralRange())\n".utf8)
                .write(to: emulatorDirectory.appendingPathComponent("port"))
            var environment = scene.environment
            environment["CLOUD_STORAGE_EMULATOR_FAULTS"] = Self.heldPlan.joined(separator: ",")
            let (first, firstErrors) = try Self.launch(
                Self.copyArguments(scene, endpoint: nil), environment: environment)
            defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
            // Three chunks are on disk: the fifth request is then held for ever.
            try await Self.wait(for: first) { stagedBytes() >= Int64(3 * Self.chunk) && scene.recordFiles().count == 1 }
            try await Self.kill9(first, firstErrors)
            let port = try String(contentsOf: emulatorDirectory.appendingPathComponent("port"), encoding: .utf8)

            let (process, errors) = try Self.launch(
                Self.copyArguments(scene, endpoint: nil), environment: scene.environment)
            let (status, stderr) = try await Self.finish(process, errors)
            #expect(status == 0, "\(stderr)")
            #expect(stderr.contains("resuming the upload of \(scene.file.path) from byte "), "port \(port): \(stderr)")
            #expect(scene.recordFiles().isEmpty)

            var configuration = StorageEmulator.Configuration()
            configuration.backing = .directory(emulatorDirectory)
            let reader = try StorageEmulator.start(configuration)
            defer { reader.stop() }
            let stored = try await Self.storedBytes(reader) == scene.payload
            #expect(stored)
        }
    }
}
