import CloudStorage
import Foundation
import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `--tls`: the test PKI every https row uses, and the one way URLSession on Linux can be made to
/// trust its CA.
///
/// The emulator serves `Tests/TLSTestCertificates/localhost.pem` (issued by `test-ca.pem` for
/// `localhost` and `127.0.0.1`); every client verifies it against `test-ca.pem` with full
/// verification: curl with `--cacert`, the Python client with `REQUESTS_CA_BUNDLE`, the native
/// transport with ``StorageConfiguration/TLS/additionalTrustRoots``.
///
/// URLSession on Linux honours none of those: swift-corelibs-foundation reads
/// `URLSessionCertificateAuthorityInfoFile` only on Android and otherwise keeps libcurl's compiled-in
/// bundle (`/etc/ssl/certs/ca-certificates.crt` on Debian). So when URLSession rows are planned, the
/// benchmark re-executes itself under `unshare --mount` with that path bind-mounted (in the new
/// mount namespace only) to a copy of the system bundle with the test CA appended.
enum BenchmarkTLS {
    /// The package root: this file is `<root>/Benchmarks/upload-benchmarks/BenchmarkTLS.swift`.
    private static let certificates = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/TLSTestCertificates", isDirectory: true)

    /// The test CA, which every client is told to trust.
    static var caFile: String { certificates.appendingPathComponent("test-ca.pem").path }

    /// The emulator's identity: the `localhost`/`127.0.0.1` certificate issued by the test CA.
    static var identity: StorageEmulator.TLSIdentity {
        StorageEmulator.TLSIdentity(
            certificateChain: .file(certificates.appendingPathComponent("localhost.pem").path),
            privateKey: .file(certificates.appendingPathComponent("localhost.key").path))
    }

    /// The native transport's trust roots for the test CA.
    static var trustRoots: [StorageConfiguration.TrustRoot] { [.file(URL(fileURLWithPath: caFile))] }

    /// The bundle libcurl (and so URLSession) loads by default on Debian-like systems.
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    /// Set in the re-executed process: the bundle path shows the system bundle plus the test CA.
    static let namespaceMarker = "UPLOAD_BENCHMARKS_TLS_TRUST_NAMESPACE"

    /// Whether this process runs in the mount namespace where URLSession trusts the test CA.
    static var urlSessionTrustsTestCA: Bool { ProcessInfo.processInfo.environment[namespaceMarker] == "1" }

    /// Re-executes this program under `unshare --mount` so that URLSession trusts the test CA;
    /// returns (with why) only when that cannot be done, and never returns on success.
    ///
    /// - Parameter arguments: The program's arguments, passed on unchanged.
    /// - Returns: Why URLSession cannot trust the test CA here (no `unshare`, no bundle, not
    ///   permitted): its rows are then skipped with that note.
    static func reexecuteTrustingTestCA(arguments: [String]) -> String {
        guard let unshare = ProcessRunner.which("unshare") else { return "unshare(1) is not on PATH" }
        guard FileManager.default.fileExists(atPath: systemBundle) else {
            return "\(systemBundle) (libcurl's default bundle) does not exist"
        }
        let bundle = FileManager.default.temporaryDirectory
            .appendingPathComponent("upload-benchmarks-ca-\(getpid()).pem").path
        do {
            let system = try Data(contentsOf: URL(fileURLWithPath: systemBundle))
            let testCA = try Data(contentsOf: URL(fileURLWithPath: caFile))
            try (system + Data("\n".utf8) + testCA).write(to: URL(fileURLWithPath: bundle))
        } catch {
            return "cannot write a CA bundle with the test CA: \(error)"
        }
        // A trial run first, so that a system that forbids the namespace skips URLSession instead of failing.
        let rootOptions = getuid() == 0 ? ["--mount"] : ["--mount", "--map-root-user"]
        // The bind mount keeps the file's contents reachable after its name is removed.
        let script = "mount --bind \"$0\" \(systemBundle) && rm -f \"$0\" && exec \"$@\""
        let trialScript = "mount --bind \"$0\" \(systemBundle) && exec \"$@\""
        guard
            let trial = try? ProcessRunner.runBlocking(
                unshare, rootOptions + ["sh", "-c", trialScript, bundle, "true"]),
            trial.status == 0
        else {
            try? FileManager.default.removeItem(atPath: bundle)
            return "unshare --mount with a bind mount over \(systemBundle) is not permitted here"
        }
        let program =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let argv = [unshare] + rootOptions + ["sh", "-c", script, bundle, program] + arguments
        setenv(namespaceMarker, "1", 1)
        progress("re-executing under unshare --mount so that URLSession trusts the test CA …\n")
        var cArguments = argv.map { strdup($0) } + [nil]
        execv(unshare, &cArguments)
        let reason = "execv(\(unshare)) failed: errno \(errno)"
        unsetenv(namespaceMarker)
        try? FileManager.default.removeItem(atPath: bundle)
        return reason
    }
}
