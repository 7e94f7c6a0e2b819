import Testing

@testable import NativeTLS

/// Configuration errors are specific and never crash.
@Suite struct TLSContextTests {
    @Test func malformedTrustRootIsRejected() {
        let pem = Array("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n".utf8)
        let error = #expect(throws: TLSError.self) {
            try TLSContext(client: TLSClientConfiguration(additionalTrustRoots: [.bytes(pem)]))
        }
        #expect(error?.kind == .invalidConfiguration)
    }

    @Test func trustRootWithoutCertificateIsRejected() {
        let error = #expect(throws: TLSError.self) {
            try TLSContext(client: TLSClientConfiguration(additionalTrustRoots: [.bytes(Array("hello".utf8))]))
        }
        #expect(error?.kind == .invalidConfiguration)
        #expect(error?.message.contains("no PEM certificate") == true)
    }

    @Test func missingTrustFileIsNamed() {
        let error = #expect(throws: TLSError.self) {
            try TLSContext(client: TLSClientConfiguration(additionalTrustRoots: [.file("/nonexistent/ca.pem")]))
        }
        #expect(error?.kind == .invalidConfiguration)
        #expect(error?.message.contains("/nonexistent/ca.pem") == true)
    }

    @Test func noTrustRootsAtAllIsRejected() {
        let error = #expect(throws: TLSError.self) {
            try TLSContext(client: TLSClientConfiguration(trustsSystemRoots: false))
        }
        #expect(error?.kind == .invalidConfiguration)
    }

    @Test func aKeyThatDoesNotMatchTheCertificateIsRejected() {
        let configuration = TLSServerConfiguration(
            certificateChain: .file(TestPKI.path("localhost.pem")), privateKey: .file(TestPKI.path("other-name.key")))
        let error = #expect(throws: TLSError.self) { try TLSContext(server: configuration) }
        #expect(error?.kind == .invalidConfiguration)
    }

    @Test func inlineBytesWorkLikeFiles() throws {
        let ca = try TLSPEMSource.file(TestPKI.path("test-ca.pem")).load("test")
        _ = try TLSContext(client: TLSClientConfiguration(additionalTrustRoots: [.bytes(ca)], trustsSystemRoots: false))
        _ = try TLSContext(server: TestPKI.server("localhost"))
    }
}
