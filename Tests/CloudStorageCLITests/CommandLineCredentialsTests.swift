import CloudStorage
import Foundation
import HTTPTestServers
import NativeTLS
import StorageTestSupport
import Testing

@testable import CloudStorageCLI
@testable import StorageEmulator

/// `cloud-storage cp --production` and `--endpoint https://…` without `--token` use
/// Application Default Credentials; a machine without any fails in one line. In the
/// serialized command suite, as `cp` takes over signals while it runs.
extension CommandLineToolTests {
    @Test func applicationDefaultCredentialsOnlyForGoogleEndpointsWithoutAToken() throws {
        func uses(_ words: [String], _ environment: [String: String] = [:]) throws -> Bool {
            try CopyCommand(words + ["file", "gs://bkt/o"], environment: environment).storage
                .usesApplicationDefaultCredentials
        }
        #expect(try uses(["--production"]))
        #expect(try uses(["--endpoint", "https://storage.example.com"]))
        #expect(try !uses(["--production", "--token", "t"]))
        #expect(try !uses(["--production"], ["CLOUD_STORAGE_TOKEN": "t"]))
        #expect(try !uses(["--endpoint", "http://127.0.0.1:4443"]))
        #expect(try !uses(["--firebase", "https://firebasestorage.googleapis.com"]))
        #expect(try !uses([], ["STORAGE_EMULATOR_HOST": "https://127.0.0.1:4443"]))
        #expect(try !uses([]))
    }

    @Test func cpToProductionWithNoCredentialsFailsInOneLineListingWhereItLooked() async throws {
        let (source, _) = try Self.file(size: 1000)
        let home = source.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: home) }
        let port = try TestSupport.closedPort()
        let (status, errors) = try await Self.runTool(
            ["cp", "--quiet", "--production", source.path, "gs://demo/x.bin"],
            environment: ["HOME": home.path, "GCE_METADATA_HOST": "127.0.0.1:\(port)"])
        #expect(status == ExitCode.failure.rawValue)
        let lines = errors.split(separator: "\n")
        #expect(lines.count == 1, "\(errors)")
        #expect(
            errors.hasPrefix(
                "cloud-storage: cannot get credentials: No Application Default Credentials were found: "
                    + "GOOGLE_APPLICATION_CREDENTIALS is not set; "
                    + "\(home.path)/.config/gcloud/application_default_credentials.json does not exist; "
                    + "no metadata server answered at 127.0.0.1:\(port)"), "\(errors)")
    }

    @Test func cpToProductionWithARefusedKeyFailsInOneLineWithTheEndpointsReason() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        fake.script(.json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#))
        let (source, _) = try Self.file(size: 1000)
        let home = source.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: home) }
        let key = home.appendingPathComponent("key.json")
        try TestKeyFiles.serviceAccountJSON(tokenURI: fake.tokenURI).write(to: key)
        let (status, errors) = try await Self.runTool(
            ["cp", "--quiet", "--production", source.path, "gs://demo/x.bin"],
            environment: ["HOME": home.path, "GOOGLE_APPLICATION_CREDENTIALS": key.path])
        #expect(status == ExitCode.failure.rawValue)
        #expect(
            errors
                == "cloud-storage: cannot get credentials: The token endpoint \(fake.tokenURI) refused the key of "
                + "service account \(TestKeyFiles.email) (invalid_grant). (Invalid JWT Signature.)\n")
    }

    @Test(.enabled(if: TLSLibrary.isAvailable))
    func cpToAnHTTPSEndpointWithoutATokenUsesApplicationDefaultCredentials() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let emulator = try Self.tlsEmulator()
        defer { emulator.stop() }
        let (source, data) = try Self.file(size: 300 * 1024)
        let home = source.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: home) }
        let key = home.appendingPathComponent("key.json")
        try TestKeyFiles.serviceAccountJSON(tokenURI: fake.tokenURI).write(to: key)
        let (status, errors) = try await Self.runTool(
            [
                "cp", "--quiet", "--ca-file", TLSTestPKI.path("test-ca.pem"), "--endpoint",
                "https://127.0.0.1:\(emulator.port)", source.path, "gs://demo/adc.bin",
            ],
            environment: ["HOME": home.path, "GOOGLE_APPLICATION_CREDENTIALS": key.path])
        #expect(status == ExitCode.success.rawValue, "\(errors)")
        #expect(try Self.stored("adc.bin", bucket: "demo", in: emulator) == data)
        #expect(fake.requests(to: "/token").count == 1)
        #expect(fake.grants == 1)
    }
}
