import Foundation

/// A program run to completion with its standard output and error in one file: how tests run
/// Google's own clients (a Python script, `gcloud`) against the emulator.
///
/// Started as a ``ChildProcess`` (never Foundation's `Process`; see there why), with /dev/null
/// as standard input, and waited for on a dispatch thread, never on Swift's cooperative pool.
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
        let child = try ChildProcess(
            executable, arguments, environment: environment, output: .file(outputPath), errors: .standardOutput)
        child.waitUntilExit()
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let status = child.terminationStatus
        return Outcome(status: child.terminationReason == .exit ? status : 128 + status, output: output)
    }
}
