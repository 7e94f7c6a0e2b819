import CloudStorage
import FakeGCSServer
import Foundation
import StorageEmulator
import Testing

@testable import CloudStorageCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command started with SIGINT ignored (a background job of a non-interactive shell) leaves it
/// ignored, as Unix programs do: the tool runs as a process of its own, started through
/// `sh -c 'trap "" INT; exec …'`, and its signal dispositions are read from `/proc`.
@Suite("An ignored SIGINT stays ignored", .timeLimit(.minutes(10)))
struct IgnoredInterruptTests {
    /// A signal mask from `/proc/PID/status` (`SigCgt`: caught, `SigIgn`: ignored).
    static func signalMask(_ field: String, of pid: pid_t) -> UInt64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16)
        }
        return nil
    }

    static func bit(_ signal: Int32) -> UInt64 { 1 << UInt64(signal - 1) }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/status")))
    func cpStartedWithSIGINTIgnoredKeepsItIgnoredAndFinishes() async throws {
        let emulator = try StorageEmulator.start(StorageEmulator.Configuration())
        defer { emulator.stop() }
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        // Neither end may leak into other tests' children; the tool gets the read end as standard input.
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var writeEnd: Int32? = fds[1]
        defer { if let writeEnd { close(writeEnd) } }
        let errors = try CopyResumeTests.ErrorLog()
        let process = try ChildProcess(
            "/bin/sh",
            [
                "-c", #"trap '' INT; exec "$0" "$@""#, try CommandLineToolTests.toolExecutable.path, "cp", "--quiet",
                "--endpoint", emulator.baseURL.absoluteString, "-", "gs://demo/ignored.txt",
            ],
            environment: [:], input: .descriptor(fds[0]), errors: .file(errors.url.path))
        close(fds[0])
        defer { process.send(SIGKILL) }
        let pid = process.processIdentifier

        // `cp -` waits for standard input with its signal handling in place: SIGTERM is caught then.
        try await CopyResumeTests.wait(for: process) {
            (Self.signalMask("SigCgt", of: pid) ?? 0) & Self.bit(SIGTERM) != 0
        }
        let caught = try #require(Self.signalMask("SigCgt", of: pid))
        let ignored = try #require(Self.signalMask("SigIgn", of: pid))
        #expect(caught & Self.bit(SIGINT) == 0, "cp caught SIGINT although it was started with SIGINT ignored")
        #expect(ignored & Self.bit(SIGINT) != 0)

        // So a SIGINT meant for the foreground does not stop it: the copy finishes.
        kill(pid, SIGINT)
        let payload = Array("stays ignored\n".utf8)
        #expect(write(fds[1], payload, payload.count) == payload.count)
        close(fds[1])
        writeEnd = nil
        let (status, stderr) = try await CopyResumeTests.finish(process, errors)
        #expect(status == 0, "\(stderr)")
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        #expect(try await storage.reference(withPath: "ignored.txt").data(maxSize: 100) == Data(payload))
    }
}
