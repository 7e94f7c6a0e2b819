import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage

/// `signedURL` without a signer: the Storage's own credentials sign — a service-account key
/// here, the metadata server's account through IAM `signBlob` — and the emulator, which
/// verifies V4 signatures with the account's key, serves the URL to a client with no
/// credentials.
@Suite("Signed URLs signed by the Storage's own credentials", .timeLimit(.minutes(10)))
struct DefaultURLSignerTests {
    @Test(
        "each credential kind that can sign yields URLs the emulator serves",
        arguments: [
            CredentialEndToEndTests.Kind.serviceAccountKey, .adcServiceAccount, .metadataServer, .adcMetadataServer,
        ])
    func signsWithOwnCredentials(kind: CredentialEndToEndTests.Kind) async throws {
        let emulator = try CredentialEndToEndTests.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = CredentialEndToEndTests.storage(
            emulator, try CredentialEndToEndTests.authorization(kind, emulator, in: directory)
        ).sendingIAMCalls(to: emulator.baseURL)
        let reference = storage.reference(withPath: "signed/\(kind.rawValue).txt")
        let payload = Data("signed by \(kind.rawValue)".utf8)
        let put = try await reference.signedURL(method: .put, expiresIn: .seconds(600))
        #expect(try await TestSupport.send("PUT", put, body: payload).status == 200)
        let get = try await reference.signedURL(expiresIn: .seconds(600))
        let read = try await TestSupport.send("GET", get)
        #expect(read.status == 200)
        #expect(read.body == payload)
        // The key signs locally and needs no token; the metadata server's account needs one
        // with the cloud-platform scope for signBlob (storage scopes are refused), got once
        // and cached for the second URL.
        let signsRemotely = kind == .metadataServer || kind == .adcMetadataServer
        #expect(emulator.tokenGrantCount == (signsRemotely ? 1 : 0))
        _ = try await reference.signedURL(method: .delete, expiresIn: .seconds(60))
        #expect(emulator.tokenGrantCount == (signsRemotely ? 1 : 0))
    }

    @Test(
        "credentials that cannot sign say so and name the way out",
        arguments: [CredentialEndToEndTests.Kind.authorizedUser, .adcAuthorizedUser])
    func userCredentialsCannotSign(kind: CredentialEndToEndTests.Kind) async throws {
        let emulator = try CredentialEndToEndTests.emulator()
        defer { emulator.stop() }
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = CredentialEndToEndTests.storage(
            emulator, try CredentialEndToEndTests.authorization(kind, emulator, in: directory))
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "x").signedURL(expiresIn: .seconds(60))
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("authorized_user credentials cannot sign") == true)
        #expect(error?.message.contains("Pass a signer.") == true)
    }

    @Test("a token cannot sign: invalidArgument, with no request sent")
    func tokenCannotSign() async throws {
        let storage = Storage(
            bucket: "b", endpoint: .gcs(URL(string: "http://127.0.0.1:1")!),
            authorization: .bearerToken("TEST-ONLY-token"))
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "x").signedURL(expiresIn: .seconds(60))
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("TEST-ONLY-token") == false)
    }
}

extension Storage {
    /// This storage, with IAM `signBlob` calls sent to `baseURL` (an emulator) instead of Google's.
    func sendingIAMCalls(to baseURL: URL) -> Storage {
        Storage(
            bucket: bucket, endpoint: endpoint, authorization: authorization, configuration: configuration,
            transport: transport, iamCredentialsBaseURL: baseURL)
    }
}
