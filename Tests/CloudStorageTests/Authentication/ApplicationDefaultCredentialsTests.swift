import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Application Default Credentials with an injected environment and home directory (never
/// the real `~/.config` or environment): the order of the places looked at, what is kept,
/// and the message when nothing is found. A missing metadata server is a closed loopback
/// port, refused at once, so no test waits for a time-out.
@Suite("Application Default Credentials", .timeLimit(.minutes(10)))
struct ApplicationDefaultCredentialsTests {
    /// A temporary directory that the test removes, with helpers to place credential files.
    struct Sandbox {
        let root: URL
        var home: URL { root.appendingPathComponent("home") }
        var wellKnownFile: URL { home.appendingPathComponent(".config/gcloud/application_default_credentials.json") }

        init() throws {
            root = try TestSupport.temporaryDirectory()
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        }

        func write(_ data: Data, to url: URL) throws {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }

        func environment(_ variables: [String: String]) -> ApplicationDefaultCredentials.Environment {
            ApplicationDefaultCredentials.Environment(variables: variables, homeDirectory: home.path)
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    static func context(_ fake: GoogleAuthFake) -> TokenRequestContext {
        TokenRequestContext(storage: CredentialFlowTests.storage(fake, .none), operation: .other)
    }

    static func source(
        _ environment: ApplicationDefaultCredentials.Environment, _ fake: GoogleAuthFake
    ) async throws(StorageError) -> CredentialSource {
        try await ApplicationDefaultCredentials(environment: environment).resolve(context: context(fake))
    }

    static func kind(_ source: CredentialSource) -> String {
        switch source {
        case .serviceAccount: "serviceAccount"
        case .authorizedUser: "authorizedUser"
        case .metadataServer: "metadataServer"
        }
    }

    @Test("GOOGLE_APPLICATION_CREDENTIALS comes first, ahead of gcloud's file; an operation uses it")
    func environmentVariableFirst() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let keyFile = sandbox.root.appendingPathComponent("key.json")
        try sandbox.write(try TestKeyFiles.serviceAccountJSON(tokenURI: fake.tokenURI), to: keyFile)
        try sandbox.write(try TestKeyFiles.authorizedUserJSON(tokenURI: fake.tokenURI), to: sandbox.wellKnownFile)
        let environment = sandbox.environment(["GOOGLE_APPLICATION_CREDENTIALS": keyFile.path])

        #expect(Self.kind(try await Self.source(environment, fake)) == "serviceAccount")
        let storage = CredentialFlowTests.storage(fake, .applicationDefault(environment: environment))
        try await CredentialFlowTests.delete(storage)
        #expect(fake.requests(to: "/token").first?.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        #expect(fake.requests(to: "/storage/v1/b/b/o/o").first?.headers["Authorization"] == "Bearer ya29.test-token-1")
    }

    @Test("GOOGLE_APPLICATION_CREDENTIALS naming a missing file is an error, not a reason to look further")
    func environmentVariableNamingNothing() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write(try TestKeyFiles.authorizedUserJSON(tokenURI: fake.tokenURI), to: sandbox.wellKnownFile)
        let missing = sandbox.root.appendingPathComponent("missing.json").path
        let error = await #expect(throws: StorageError.self) {
            try await Self.source(sandbox.environment(["GOOGLE_APPLICATION_CREDENTIALS": missing]), fake)
        }
        #expect(error?.code == .unauthenticated)
        #expect(
            error?.message
                == "GOOGLE_APPLICATION_CREDENTIALS names \(missing), which does not exist or is not a readable file.")
    }

    @Test("gcloud's file in the home directory is found next")
    func wellKnownFileInHome() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write(try TestKeyFiles.authorizedUserJSON(tokenURI: fake.tokenURI), to: sandbox.wellKnownFile)
        let environment = sandbox.environment(["GOOGLE_APPLICATION_CREDENTIALS": ""])
        #expect(Self.kind(try await Self.source(environment, fake)) == "authorizedUser")
        let storage = CredentialFlowTests.storage(fake, .applicationDefault(environment: environment))
        try await CredentialFlowTests.delete(storage)
        #expect(
            fake.requests(to: "/storage/v1/b/b/o/o").first?.headers["x-goog-user-project"] == "cloudstorage-test-quota")
    }

    @Test("CLOUDSDK_CONFIG moves gcloud's file, and the home directory's is then not looked at")
    func cloudSDKConfig() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let config = sandbox.root.appendingPathComponent("gcloud-config")
        try sandbox.write(
            try TestKeyFiles.serviceAccountJSON(tokenURI: fake.tokenURI),
            to: config.appendingPathComponent("application_default_credentials.json"))
        try sandbox.write(try TestKeyFiles.authorizedUserJSON(tokenURI: fake.tokenURI), to: sandbox.wellKnownFile)
        #expect(
            Self.kind(try await Self.source(sandbox.environment(["CLOUDSDK_CONFIG": config.path]), fake))
                == "serviceAccount")

        let empty = sandbox.root.appendingPathComponent("empty-config")
        let port = try TestSupport.closedPort()
        let error = await #expect(throws: StorageError.self) {
            try await Self.source(
                sandbox.environment(["CLOUDSDK_CONFIG": empty.path, "GCE_METADATA_HOST": "127.0.0.1:\(port)"]), fake)
        }
        #expect(error?.message.contains("\(empty.path)/application_default_credentials.json does not exist") == true)
    }

    @Test("nothing found: the operation fails as unauthenticated, listing every place looked at")
    func nothingFound() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let port = try TestSupport.closedPort()
        let environment = sandbox.environment(["GCE_METADATA_HOST": "127.0.0.1:\(port)"])
        let storage = CredentialFlowTests.storage(fake, .applicationDefault(environment: environment))
        let error = await #expect(throws: StorageError.self) { try await CredentialFlowTests.delete(storage) }
        #expect(error?.code == .unauthenticated)
        #expect(
            error?.message
                == "No Application Default Credentials were found: GOOGLE_APPLICATION_CREDENTIALS is not set; "
                + "\(sandbox.wellKnownFile.path) does not exist; no metadata server answered at 127.0.0.1:\(port) "
                + "(connectFailed). Set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, run "
                + "`gcloud auth application-default login`, or run on Google Cloud.")
        #expect(fake.requests(to: "/token").isEmpty && fake.requests(to: "/storage/v1/b/b/o/o").isEmpty)

        // A failure is not kept: a file that appears later is found by the next operation.
        try sandbox.write(try TestKeyFiles.serviceAccountJSON(tokenURI: fake.tokenURI), to: sandbox.wellKnownFile)
        try await CredentialFlowTests.delete(storage)
        #expect(fake.grants == 1)
    }

    @Test("the metadata server is detected (with Metadata-Flavor) and its tokens used")
    func metadataServerDetected() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let environment = sandbox.environment(["GCE_METADATA_HOST": fake.metadataHost])
        let storage = CredentialFlowTests.storage(fake, .applicationDefault(environment: environment))
        try await CredentialFlowTests.delete(storage)
        try await CredentialFlowTests.delete(storage)
        #expect(fake.requests(to: "/computeMetadata/v1/").map { $0.headers["Metadata-Flavor"] } == ["Google"])
        #expect(fake.requests(to: "/computeMetadata/v1/instance/service-accounts/default/token").count == 1)
        #expect(fake.requests(to: "/storage/v1/b/b/o/o").first?.headers["Authorization"] == "Bearer ya29.test-token-1")
    }

    @Test("a server at the metadata address that is not one (no Metadata-Flavor) is not used; the verdict is kept")
    func probeVerdictKept() async throws {
        let impostor = try AuthTestServer { _ in AuthTestServer.Reply(status: 200, body: "captive portal") }
        defer { impostor.stop() }
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let finder = ApplicationDefaultCredentials(
            environment: sandbox.environment(["GCE_METADATA_HOST": "127.0.0.1:\(impostor.port)"]))
        for _ in 0..<3 {
            let error = await #expect(throws: StorageError.self) {
                try await finder.resolve(context: Self.context(fake))
            }
            #expect(
                error?.message.contains(
                    "the metadata server at 127.0.0.1:\(impostor.port) answered without Metadata-Flavor: Google")
                    == true)
        }
        #expect(impostor.requests.count == 1)
    }

    @Test("what was found is kept: the file is not read again")
    func foundCredentialKept() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write(try TestKeyFiles.serviceAccountJSON(tokenURI: fake.tokenURI), to: sandbox.wellKnownFile)
        let finder = ApplicationDefaultCredentials(environment: sandbox.environment([:]))
        _ = try await finder.resolve(context: Self.context(fake))
        try FileManager.default.removeItem(at: sandbox.wellKnownFile)
        #expect(Self.kind(try await finder.resolve(context: Self.context(fake))) == "serviceAccount")
    }

    @Test("a file found that cannot be used fails as unauthenticated naming it")
    func unusableFileFound() async throws {
        let fake = try GoogleAuthFake()
        defer { fake.stop() }
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let file = sandbox.root.appendingPathComponent("external.json")
        try sandbox.write(Data(#"{"type": "external_account", "audience": "//iam"}"#.utf8), to: file)
        let error = await #expect(throws: StorageError.self) {
            try await Self.source(sandbox.environment(["GOOGLE_APPLICATION_CREDENTIALS": file.path]), fake)
        }
        #expect(error?.code == .unauthenticated)
        #expect(
            error?.message
                == "The file GOOGLE_APPLICATION_CREDENTIALS names (\(file.path)) holds \"type\": \"external_account\" "
                + "credentials, which CloudStorage does not support yet; use a service account key, gcloud's "
                + "authorized_user credentials, or the metadata server.")
    }
}
