import CloudStorage
import FakeGCSServer
import Foundation
import HTTPTestServers
import NativeTLS
import Testing

@testable import CloudStorageCLI
@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#endif

/// `cloud-storage cp` to `https://` endpoints: a server that cannot be verified ends the
/// command at once with a message that says why, and `--ca-file` (like curl's `--cacert`)
/// or `SSL_CERT_FILE` lets it trust a private CA. In the serialized command suite, as
/// `cp` takes over signals while it runs.
extension CommandLineToolTests {
    /// An emulator serving TLS with the test PKI's localhost certificate.
    static func tlsEmulator() throws -> StorageEmulator {
        try emulator {
            $0.tls = .init(
                certificateChain: .file(TLSTestPKI.path("localhost.pem")),
                privateKey: .file(TLSTestPKI.path("localhost.key")))
        }
    }

    /// The bytes the emulator stores for `name` in `bucket`, or nil.
    static func stored(_ name: String, bucket: String, in emulator: StorageEmulator) throws -> Data? {
        guard let record = emulator.application.store.record(bucket: bucket, name: name) else { return nil }
        return try emulator.application.store.readAll(record)
    }

    /// Runs the built tool with `arguments` and `environment`, until it exits (killed should the
    /// suite's time limit cancel the test).
    ///
    /// - Returns: The exit status and what it wrote to standard error.
    static func runTool(_ arguments: [String], environment: [String: String]) async throws -> (Int32, String) {
        let errors = try CopyResumeTests.ErrorLog()
        let process = try ChildProcess(
            try toolExecutable.path, arguments, environment: environment, errors: .file(errors.url.path))
        await withTaskCancellationHandler {
            await process.exited()
        } onCancel: {
            process.send(SIGKILL)
        }
        return (process.terminationStatus, errors.text)
    }

    @Test(.enabled(if: TLSLibrary.isAvailable))
    func cpToAnUntrustedServerExitsAtOnceSayingWhy() async throws {
        let server = try TLSTestServer(.tls("untrusted"))
        defer { server.stop() }
        let (source, _) = try Self.file(size: 1000)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }

        // The default retry budget is 600 s: had the failure been retried, the tool would still run.
        let (status, errors) = try await Self.runTool(
            [
                "cp", "--quiet", "--token", "secret-token", "--endpoint", "https://127.0.0.1:\(server.port)",
                source.path, "gs://demo/refused.bin",
            ],
            environment: ["HOME": source.deletingLastPathComponent().path])
        #expect(status == ExitCode.failure.rawValue)
        #expect(errors.contains("127.0.0.1:\(server.port)"), "\(errors)")
        #expect(errors.contains("issuer is not trusted"), "\(errors)")
        #expect(errors.contains("--ca-file"), "says how to trust a private CA: \(errors)")
        #expect(!errors.contains("secret-token"))

        let reports = try await server.connectionsSoFar()
        #expect(reports.count == 1, "one connection attempt, no retry")
        #expect(reports.allSatisfy { !$0.handshakeSucceeded && $0.requests == 0 && $0.applicationBytes == 0 })
    }

    @Test(.enabled(if: TLSLibrary.isAvailable))
    func cpTrustsThePrivateCAOfCAFile() async throws {
        let emulator = try Self.tlsEmulator()
        defer { emulator.stop() }
        let (source, data) = try Self.file(size: 300 * 1024)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        // A token, so that neither run looks for Application Default Credentials (this machine's).
        let endpoint = ["--token", "test-token", "--endpoint", emulator.baseURL.absoluteString]

        let refused = await runCommandLine(
            ["cp", "--quiet"] + endpoint + [source.path, "gs://demo/ca.bin"], environment: [:])
        #expect(refused == .failure, "the test CA is in no system store")
        let stored = await runCommandLine(
            ["cp", "--quiet", "--ca-file", TLSTestPKI.path("test-ca.pem")] + endpoint
                + [source.path, "gs://demo/ca.bin"],
            environment: [:])
        #expect(stored == .success)
        #expect(try Self.stored("ca.bin", bucket: "demo", in: emulator) == data)
    }

    @Test(arguments: [("/nonexistent/ca.pem", "cannot read"), ("not-a-certificate", "holds no PEM certificate")])
    func aCAFileThatIsMissingOrHoldsNoCertificateExits2BeforeContactingAnything(
        file: String, problem: String
    )
        async throws
    {
        let (source, _) = try Self.file(size: 10)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        // A file that exists but is no PEM: the source file itself.
        let path = file == "not-a-certificate" ? source.path : file
        let words = ["--ca-file", path, "--endpoint", "https://127.0.0.1:1", source.path, "gs://demo/x"]
        let error = #expect(throws: UsageError.self) { try CopyCommand(words, environment: [:]) }
        #expect(error?.description.contains("--ca-file: ") == true && error?.description.contains(path) == true)
        #expect(error?.description.contains(problem) == true, "\(String(describing: error))")
        #expect(await runCommandLine(["cp", "--quiet"] + words, environment: [:]) == .usage)
    }

    /// The system store is OpenSSL's default paths, which honour `SSL_CERT_FILE`: set for a
    /// process of its own (never for this one, whose other tests run meanwhile), it makes
    /// the tool trust the test CA with no option. `URLSession` on Linux ignores it, so this
    /// also shows `https://` goes through the native transport by default.
    @Test(.enabled(if: TLSLibrary.isAvailable))
    func sslCertFileIsHonouredAsTheSystemStore() async throws {
        let emulator = try Self.tlsEmulator()
        defer { emulator.stop() }
        let (source, data) = try Self.file(size: 200 * 1024)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }

        let (status, errors) = try await Self.runTool(
            [
                "cp", "--quiet", "--token", "test-token", "--endpoint", emulator.baseURL.absoluteString, source.path,
                "gs://demo/system-store.bin",
            ],
            environment: [
                "HOME": source.deletingLastPathComponent().path, "SSL_CERT_FILE": TLSTestPKI.path("test-ca.pem"),
            ])
        #expect(status == ExitCode.success.rawValue, "\(errors)")
        #expect(try Self.stored("system-store.bin", bucket: "demo", in: emulator) == data)
    }
}
