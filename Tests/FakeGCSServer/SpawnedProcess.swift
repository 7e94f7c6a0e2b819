import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A program run to completion with `posix_spawn`, its standard output and error in one file:
/// how tests run Google's own clients (a Python script, `gcloud`) against the emulator.
///
/// Not Foundation's `Process` with pipes: under load, beside tests opening and closing
/// descriptors, `Process.run()` crashed a test process (a bad pointer in its memcpy), and it is
/// reported to close descriptors other threads own (swiftlang/swift#57827). Here the child
/// inherits nothing but /dev/null as standard input and the output file (`closefrom` 3 where
/// glibc has it), and the wait runs on a dispatch thread, never on Swift's cooperative pool.
public enum SpawnedProcess {
    /// How a run ended.
    public struct Outcome: Sendable {
        /// The exit status, or 128 plus the signal that ended the program.
        public var status: Int32
        /// Standard output and standard error, interleaved as written.
        public var output: String
    }

    /// Runs `executable` with `arguments` and `environment` (the whole environment: nothing
    /// is inherited) until it exits.
    ///
    /// ```swift
    /// let outcome = try await SpawnedProcess.run("/usr/bin/env", ["true"], environment: ["PATH": "/usr/bin"])
    /// ```
    ///
    /// - Returns: The exit status and the output.
    /// - Throws: `POSIXError` when the program cannot be started or the output file cannot be made.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]
    ) async throws
        -> Outcome
    {
        try await BlockingWork.run { try runBlocking(executable, arguments, environment: environment) }
    }

    private static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String]
    )
        throws -> Outcome
    {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("spawned-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outputPath = directory.appendingPathComponent("output.txt").path

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // glibc 2.34+ (not in Swift's Glibc module): nothing else is inherited, not even the
        // descriptors of other tests that lack O_CLOEXEC.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let code = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard code == 0 else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EINVAL) }

        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECHILD) }
        }
        let signal = status & 0x7f
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Outcome(status: signal == 0 ? (status >> 8) & 0xff : 128 + signal, output: output)
    }
}
