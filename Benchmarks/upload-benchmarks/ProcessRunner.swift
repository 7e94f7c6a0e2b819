import Foundation
import Synchronization

/// Runs a program to completion and collects what it printed.
///
/// The program is spawned and waited for on a dispatch thread (``OffPool``),
/// never on the cooperative pool. Waiting for it reaps it, so its CPU time
/// shows up in this process's `RUSAGE_CHILDREN`.
enum ProcessRunner {
    /// How a program ended and what it printed.
    struct Output: Sendable {
        var status: Int32
        var standardOutput: Data
        var standardError: Data

        var errorText: String {
            String(decoding: standardError.prefix(2048), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// Runs `executable` with `arguments` and waits for it to exit.
    ///
    /// - Parameters:
    ///   - executable: An absolute path.
    ///   - arguments: The arguments, without the program name.
    /// - Returns: The exit status and the output.
    /// - Throws: When the program cannot be started.
    static func run(_ executable: String, _ arguments: [String]) async throws -> Output {
        try await OffPool.run {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let output = Pipe()
            let errors = Pipe()
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            // Drain stderr on another thread so that neither pipe can fill up and stall the program.
            let errorData = Mutex(Data())
            let drained = DispatchGroup()
            DispatchQueue.global().async(group: drained) {
                let data = errors.fileHandleForReading.readDataToEndOfFile()
                errorData.withLock { $0 = data }
            }
            let outputData = output.fileHandleForReading.readDataToEndOfFile()
            drained.wait()
            process.waitUntilExit()
            return Output(
                status: process.terminationStatus,
                standardOutput: outputData,
                standardError: errorData.withLock { $0 }
            )
        }
    }

    /// The first executable named `name` in the directories of `PATH`, as `which` finds it.
    ///
    /// - Parameter name: A program name such as `curl`.
    /// - Returns: Its absolute path, or nil.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
