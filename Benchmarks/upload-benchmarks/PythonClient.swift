import FakeGCSServer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The Python google-cloud-storage client, the comparison point for the
/// URLSession transport: `python/python_client_upload.py` uploads the same
/// file to the same emulator with the same chunking and prints what it took.
///
/// The client lives in a virtualenv at `<package root>/.build/python-gcs/venv`,
/// never in a global Python, installed by pip on first use the way
/// ``FakeGCSServer`` installs its server: once, under an exclusive `flock`, with
/// a marker file that records a complete install.
struct PythonClient: Sendable {
    /// The pip requirement: pinned, so that every run measures the same client.
    static let requirement = "google-cloud-storage==3.17.1"

    /// The virtualenv's Python.
    let python: String
    /// The upload script.
    let script: String

    /// The package root: this file is `<root>/Benchmarks/upload-benchmarks/PythonClient.swift`.
    private static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    private static let scriptPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("python/python_client_upload.py").path
    private static let directory = packageRoot.appendingPathComponent(".build/python-gcs", isDirectory: true)
    private static var venv: URL { directory.appendingPathComponent("venv", isDirectory: true) }
    private static var venvPython: String { venv.appendingPathComponent("bin/python").path }
    private static var marker: URL { directory.appendingPathComponent("installed") }
    private static var lockFile: URL { directory.appendingPathComponent("install.lock") }

    /// What one timed upload by the Python client took and stored.
    struct Upload: Sendable, Decodable {
        /// Wall seconds of `upload_from_filename` alone, measured by the script.
        var seconds: Double
        /// `getrusage(RUSAGE_SELF)` user + system seconds of the Python process during the upload alone.
        var cpuSeconds: Double
        /// The size the server's final answer reported.
        var size: Int64
        /// The crc32c the server's final answer reported.
        var crc32c: String?
        /// The chunk size the client used: the one set, or the library's default.
        var chunkBytes: Int64?
        /// Such as `google-cloud-storage 3.17.1`.
        var library: String
        /// `c` when google-crc32c uses its C extension, `python` otherwise.
        var crc32cImplementation: String
    }

    /// Finds the installed client or installs it; never throws, because a missing client skips its
    /// scenarios rather than failing the run.
    ///
    /// - Returns: The client, or why it is unavailable (python3 or its venv module missing, pip or the
    ///   network failing, the script missing).
    static func prepare() async -> Result<PythonClient, BenchmarkError> {
        guard FileManager.default.fileExists(atPath: scriptPath) else {
            return .failure(BenchmarkError("the upload script is missing at \(scriptPath)"))
        }
        do {
            let python = try await BlockingWork.run { try installIfNeeded() }
            return .success(PythonClient(python: python, script: scriptPath))
        } catch let error as BenchmarkError {
            return .failure(error)
        } catch {
            return .failure(BenchmarkError("\(error)"))
        }
    }

    /// Uploads `file` with the Python client and checks what the server answered.
    ///
    /// - Parameters:
    ///   - file: The payload file.
    ///   - object: The object name (the script also uploads `<object>-warm-up` before the clock starts).
    ///   - chunkSize: `blob.chunk_size`, or nil for the library's default (100 MiB chunks above 8 MiB).
    ///   - expected: The size and CRC32C the object must have.
    ///   - baseURL: The emulator, passed as `STORAGE_EMULATOR_HOST`.
    ///   - bucket: The bucket.
    ///   - caFile: With `--tls`, the CA to trust, passed as `REQUESTS_CA_BUNDLE` (requests, which the
    ///     library's transport is, verifies the emulator's certificate against it).
    /// - Returns: What the script measured and the server reported; the script has checked size and
    ///   crc32c, and the caller checks them again.
    /// - Throws: ``BenchmarkError`` with the script's stderr when it fails (including a mismatch).
    func upload(
        file: URL, object: String, chunkSize: Int64?, expected: DiscardBenchmark.Expected, baseURL: URL,
        bucket: String, caFile: String? = nil
    ) async throws -> Upload {
        var environment = [
            "STORAGE_EMULATOR_HOST": baseURL.absoluteString,
            // requests honours proxy variables; the emulator is on loopback.
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "PYTHONDONTWRITEBYTECODE": "1",
        ]
        if let caFile { environment["REQUESTS_CA_BUNDLE"] = caFile }
        let output = try await ProcessRunner.run(
            python,
            [
                script, "--file", file.path, "--bucket", bucket, "--object", object,
                "--chunk-bytes", String(chunkSize ?? 0), "--checksum", "crc32c",
                "--expected-size", String(expected.size), "--expected-crc32c", expected.crc32c,
            ],
            environment: environment
        )
        guard output.status == 0 else {
            throw BenchmarkError(
                "the Python client's upload of \(object) failed (exit \(output.status)): \(output.errorText)")
        }
        do {
            return try JSONDecoder().decode(Upload.self, from: output.standardOutput)
        } catch {
            throw BenchmarkError(
                "the Python client printed no result for \(object): \(String(decoding: output.standardOutput.prefix(512), as: UTF8.self))"
            )
        }
    }

    /// The venv's Python when the marker names this requirement and the venv is intact.
    private static func installed() -> String? {
        guard let text = try? String(contentsOf: marker, encoding: .utf8),
            text.trimmingCharacters(in: .whitespacesAndNewlines) == requirement,
            FileManager.default.isExecutableFile(atPath: venvPython)
        else { return nil }
        return venvPython
    }

    /// Creates the venv and pip-installs ``requirement`` unless a complete install is there.
    ///
    /// Blocks (on `flock` and on pip); call it on a blocking thread.
    private static func installIfNeeded() throws -> String {
        if let python = installed() { return python }
        guard let python3 = ProcessRunner.which("python3") else {
            throw BenchmarkError("python3 is not on PATH")
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw BenchmarkError("cannot create \(directory.path): \(error)")
        }
        let lock = open(lockFile.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else { throw BenchmarkError("cannot open \(lockFile.path): errno \(errno)") }
        // Closing the descriptor releases the lock, also if this process dies.
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw BenchmarkError("flock(\(lockFile.path)) failed: errno \(errno)") }
        }
        // Another process may have finished the install while this one waited.
        if let python = installed() { return python }

        try? FileManager.default.removeItem(at: marker)
        progress("installing \(requirement) into \(venv.path) (once) …\n")
        try step(
            python3, ["-m", "venv", "--clear", venv.path],
            what: "creating the virtualenv (is python3's venv module there?)")
        // Short time-outs and few retries: without a network this fails in well under a minute.
        try step(
            venv.appendingPathComponent("bin/pip").path,
            [
                "install", "--disable-pip-version-check", "--quiet", "--timeout", "15", "--retries", "1",
                requirement,
            ],
            what: "pip install \(requirement)")
        try step(
            venvPython, ["-c", "import google.cloud.storage, google_crc32c"],
            what: "importing the installed client")
        do {
            try Data((requirement + "\n").utf8).write(to: marker, options: .atomic)
        } catch {
            throw BenchmarkError("cannot write \(marker.path): \(error)")
        }
        return venvPython
    }

    /// Runs one install step; throws with the tail of its output when it fails.
    private static func step(_ executable: String, _ arguments: [String], what: String) throws {
        let output = try ProcessRunner.runBlocking(executable, arguments)
        guard output.status == 0 else {
            let text = String(decoding: output.standardError + output.standardOutput, as: UTF8.self)
            let tail = String(text.split(separator: "\n").suffix(3).joined(separator: " | ").suffix(500))
            throw BenchmarkError("\(what) failed (exit \(output.status)): \(tail)")
        }
    }
}
