import Foundation
import HTTPTestServers
import NativeTLS
import Testing

@testable import CloudStorage

/// What the SDK makes of the native transport's TLS: a server that cannot be verified is one
/// `tlsFailure` that names the cause and never sees the request, and a trust root is checked
/// where the configuration is given it. (The transport's own TLS tests are in HTTPClientTests,
/// `NativeTLSTransportTests`.)
@Suite("Native TLS through the SDK", .timeLimit(.minutes(10)), .enabled(if: TLSLibrary.isAvailable))
struct NativeTLSTransportWithSDKTests {
    // MARK: - Verification failures

    @Test(arguments: [
        ("untrusted", "not trusted"), ("other-name", "another name"), ("expired", "expired"), ("plain", "plain HTTP"),
    ])
    func aServerThatCannotBeVerifiedFailsOnceWithoutSeeingTheRequest(certificate: String, cause: String) async throws {
        let server = try TLSTestServer(certificate == "plain" ? .plainHTTP : .tls(certificate))
        defer { server.stop() }
        var configuration = StorageConfiguration()
        configuration.transport = .native
        configuration.tls.additionalTrustRoots = [.file(URL(fileURLWithPath: TLSTestPKI.path("test-ca.pem")))]
        try configuration.retry.setMaxOperationTime(.seconds(60))
        let storage = Storage(
            bucket: "bucket", endpoint: .gcs(URL(string: "https://127.0.0.1:\(server.port)")!),
            authorization: .bearerToken("secret"), configuration: configuration)
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "object").getMetadata()
        }
        #expect(error?.code == .tlsFailure)
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains(cause))
        #expect(!message.contains("secret"))

        let reports = try await server.connectionsSoFar()
        #expect(reports.count == 1)
        #expect(reports.allSatisfy { !$0.handshakeSucceeded && $0.requests == 0 && !$0.sawAuthorization })
        if certificate != "plain" {
            #expect(reports.allSatisfy { $0.applicationBytes == 0 })
        }
    }

    // MARK: - Trust roots

    @Test func aTrustRootIsCheckedWhereItIsGiven() throws {
        let pem = try Data(contentsOf: URL(fileURLWithPath: TLSTestPKI.path("test-ca.pem")))
        _ = try StorageConfiguration.TrustRoot.pem(pem)
        let error = #expect(throws: StorageError.self) {
            _ = try StorageConfiguration.TrustRoot.pem(Data("not a certificate".utf8))
        }
        #expect(error?.code == .invalidArgument)
    }
}
