import Foundation
import HTTPTestServers
import Testing

@testable import CloudStorageCLI
@testable import NativeTLS

/// The host's OpenSSL configuration binds the SDK's TLS as it binds curl's: `cloud-storage`
/// runs in a process of its own with `OPENSSL_CONF` naming a configuration (never this
/// process, whose OpenSSL has long read its own), against a TLS server in this one.
@Suite("The host's OpenSSL policy", .timeLimit(.minutes(10)))
struct HostOpenSSLPolicyTests {
    /// Writes an OpenSSL configuration file whose init section holds `body`.
    static func configuration(_ body: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("openssl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("openssl.cnf")
        try Data(("openssl_conf = openssl_init\n[openssl_init]\n" + body).utf8).write(to: file)
        return file
    }

    /// A configuration whose `system_default` TLS settings are `lines`, as a distribution sets them.
    static func systemDefault(_ lines: String) throws -> URL {
        try configuration(
            "ssl_conf = ssl_module\n[ssl_module]\nsystem_default = tls_defaults\n[tls_defaults]\n\(lines)\n")
    }

    /// Runs `cloud-storage stat` of a missing object on `server` under the configuration `file`.
    ///
    /// - Returns: The exit status and what the tool wrote to standard error.
    static func stat(_ server: TLSTestServer, under file: URL) async throws -> (Int32, String) {
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        return try await CommandLineToolTests.runTool(
            [
                "stat", "--token", "test-token", "--ca-file", TLSTestPKI.path("test-ca.pem"), "--endpoint",
                "https://127.0.0.1:\(server.port)", "gs://demo/\(TLSTestServer.notFoundMarker)",
            ],
            environment: ["HOME": file.deletingLastPathComponent().path, "OPENSSL_CONF": file.path])
    }

    /// FIPS default properties with no FIPS provider leave OpenSSL no cipher: curl refuses to
    /// connect, and so does the tool, at once (the retry budget is 600 s), naming the
    /// configuration, before a connection is even opened.
    @Test(.enabled(if: TLSLibrary.isAvailable))
    func aFIPSOnlyHostWithoutAFIPSProviderIsRefusedBeforeAnyByte() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let fips = try Self.configuration("alg_section = algorithms\n[algorithms]\ndefault_properties = fips=yes\n")
        let (status, errors) = try await Self.stat(server, under: fips)
        #expect(status == ExitCode.failure.rawValue, "\(errors)")
        #expect(errors.contains("OpenSSL configuration"), "\(errors)")
        #expect(errors.contains("OPENSSL_CONF"), "\(errors)")
        let reports = try await server.connectionsSoFar()
        #expect(reports.isEmpty, "no connection: \(reports)")
    }

    /// The host's TLS 1.3 suites are the ones offered: a ChaCha20 policy negotiates ChaCha20
    /// (OpenSSL's default and the SDK's old preference both lead with AES-GCM).
    @Test(.enabled(if: TLSLibrary.isAvailable))
    func theHostsCipherSuitesAreTheOnesNegotiated() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let chacha = try Self.systemDefault("Ciphersuites = TLS_CHACHA20_POLY1305_SHA256")
        let (status, errors) = try await Self.stat(server, under: chacha)
        #expect(status == ExitCode.notFound.rawValue, "the request was answered: \(errors)")
        let reports = try await server.connectionsSoFar()
        #expect(reports.count == 1)
        #expect(reports.first?.cipherSuite == "TLS_CHACHA20_POLY1305_SHA256", "\(reports)")
    }

    /// A host that requires TLS 1.3 refuses a server that speaks only TLS 1.2: the SDK's own
    /// minimum (1.2) never lowers the host's.
    @Test(.enabled(if: TLSLibrary.isAvailable))
    func aTLS13OnlyHostRefusesATLS12OnlyServer() async throws {
        let server = try TLSTestServer(.tlsOnly(.tls12))
        defer { server.stop() }
        let modern = try Self.systemDefault("MinProtocol = TLSv1.3")
        let (status, errors) = try await Self.stat(server, under: modern)
        #expect(status == ExitCode.failure.rawValue, "\(errors)")
        #expect(errors.contains("shares no TLS version"), "\(errors)")
        let reports = try await server.connectionsSoFar()
        #expect(reports.count == 1, "one attempt, no retry")
        #expect(reports.allSatisfy { !$0.handshakeSucceeded && $0.requests == 0 }, "\(reports)")
    }

    /// The same server, reached under the host's ordinary configuration, is answered: the
    /// refusal above is the policy's, not the server's.
    @Test(.enabled(if: TLSLibrary.isAvailable))
    func aTLS12OnlyServerIsReachedWithoutAStricterPolicy() async throws {
        let server = try TLSTestServer(.tlsOnly(.tls12))
        defer { server.stop() }
        let ordinary = try Self.systemDefault("MinProtocol = TLSv1.2")
        let (status, errors) = try await Self.stat(server, under: ordinary)
        #expect(status == ExitCode.notFound.rawValue, "\(errors)")
    }
}
