import COpenSSLLoader
import Testing

@testable import NativeTLS

/// The system trust file is read when a verification first needs it, and verifies as before.
@Suite struct TLSSystemTrustTests {
    /// A client context that trusts the system store, with `file` as its certificate file.
    static func client(file: String) throws -> TLSContext {
        var configuration = TLSClientConfiguration()
        configuration.systemTrustFile = file
        return try TLSContext(client: configuration)
    }

    /// Certificates in the context's store.
    static func stored(_ context: TLSContext) -> Int32 {
        let api = OpenSSL.api
        return api.OPENSSL_sk_num!(api.X509_STORE_get0_objects!(api.SSL_CTX_get_cert_store!(context.pointer)))
    }

    /// Runs a handshake between a client of `context` and a server with the named identity.
    static func handshake(_ context: TLSContext, server name: String) throws {
        let client = try TLSEngine(client: context, host: "localhost", port: 443)
        let server = try TLSEngine(server: try TLSContext(server: TestPKI.server(name)))
        for _ in 0..<10 where !(client.isEstablished && server.isEstablished) {
            _ = try client.handshake()
            TLSEngineTests.Pair.carry(client, server)
            _ = try? server.handshake()
            TLSEngineTests.Pair.carry(server, client)
        }
        #expect(client.isEstablished)
    }

    @Test func theFileIsReadOnFirstNeedThenVerifiesFromMemory() throws {
        let context = try Self.client(file: TestPKI.path("test-ca.pem"))
        #expect(Self.stored(context) == 0)  // nothing read yet
        try Self.handshake(context, server: "localhost")
        #expect(Self.stored(context) == 1)  // the file's one certificate
        try Self.handshake(context, server: "localhost")
        #expect(Self.stored(context) == 1)
    }

    @Test func aServerTheFileDoesNotVouchForIsRefused() throws {
        let context = try Self.client(file: TestPKI.path("test-ca.pem"))
        let error = #expect(throws: TLSError.self) { try Self.handshake(context, server: "untrusted") }
        #expect(error?.kind == .untrustedIssuer)
    }

    @Test func aMissingFileTrustsNothingFromIt() throws {
        let context = try Self.client(file: "/nonexistent/system-roots.pem")
        let error = #expect(throws: TLSError.self) { try Self.handshake(context, server: "localhost") }
        #expect(error?.kind == .untrustedIssuer)
    }

    /// Many connections verifying at once read the file once and all succeed.
    @Test func concurrentFirstVerificationsAllSucceed() async throws {
        let context = try Self.client(file: TestPKI.path("test-ca.pem"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { try await onThread { try Self.handshake(context, server: "localhost") } }
            }
            try await group.waitForAll()
        }
        #expect(Self.stored(context) == 1)
    }
}
