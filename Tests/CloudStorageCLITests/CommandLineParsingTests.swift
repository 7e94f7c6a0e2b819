import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// How the `cloud-storage` command line is taken apart, without running anything.
@Suite("Command line parsing")
struct CommandLineParsingTests {
    // MARK: CommandLineArguments

    @Test func optionsTakeTheirValueAfterASpaceOrAnEqualsSign() throws {
        let arguments = try CommandLineArguments(
            ["a", "--name", "one", "b", "--other=two=2", "--flag", "c"],
            valued: ["--name", "--other"], flags: ["--flag"]
        )
        #expect(arguments.positional == ["a", "b", "c"])
        #expect(arguments.value("--name") == "one")
        #expect(arguments.value("--other") == "two=2")  // only the first = separates
        #expect(arguments.has("--flag"))
        #expect(!arguments.has("--name"))
        #expect(arguments.value("--missing") == nil)
    }

    @Test func aDoubleDashEndsTheOptionsAndADashIsPositional() throws {
        let arguments = try CommandLineArguments(
            ["-", "--", "--flag", "--name"], valued: ["--name"], flags: ["--flag"]
        )
        #expect(arguments.positional == ["-", "--flag", "--name"])
        #expect(!arguments.has("--flag"))
    }

    @Test func aValuedOptionTakesTheNextWordEvenIfItLooksLikeAnOption() throws {
        let arguments = try CommandLineArguments(["--name", "--flag"], valued: ["--name"], flags: ["--flag"])
        #expect(arguments.value("--name") == "--flag")
        #expect(!arguments.has("--flag"))
    }

    @Test(arguments: [
        (["--unknown"], "unknown option --unknown"),
        (["-x"], "unknown option -x"),
        (["--name"], "--name needs a value"),
        (["--flag=yes"], "--flag takes no value"),
    ])
    func malformedWordsAreUsageErrors(words: [String], message: String) {
        let error = #expect(throws: UsageError.self) {
            try CommandLineArguments(words, valued: ["--name"], flags: ["--flag"])
        }
        #expect(error?.description == message)
    }

    // MARK: CopyCommand.byteCount

    @Test(
        arguments: [
            ("262144", 262_144), ("256K", 262_144), ("256k", 262_144), ("8M", 8 << 20), ("1G", 1 << 30),
            ("0", 0), ("300K", 307_200),
        ] as [(String, Int64)])
    func sizesAreBytesOrPowersOf1024(text: String, bytes: Int64) {
        #expect(CopyCommand.byteCount(text) == bytes)
    }

    @Test(arguments: ["", "abc", "K", "1.5M", "8MB", "8 M", "9999999999999G", "1T"])
    func otherTextIsNotASize(text: String) {
        #expect(CopyCommand.byteCount(text) == nil)
    }

    // MARK: CopyCommand

    static let home = ["XDG_DATA_HOME": "/tmp/xdg-for-tests"]

    @Test func theDestinationNamesBucketAndPathAndASlashAppendsTheFileName() throws {
        let upload = { (words: [String]) throws -> CopyCommand.Direction in
            try CopyCommand(words, environment: Self.home).direction
        }
        let file = URL(fileURLWithPath: "dir/a.txt")
        #expect(
            try upload(["dir/a.txt", "gs://bucket/x/y.txt"])
                == .upload(file: file, to: ObjectAddress(bucket: "bucket", path: "x/y.txt")))
        #expect(
            try upload(["dir/a.txt", "gs://bucket/x/"])
                == .upload(file: file, to: ObjectAddress(bucket: "bucket", path: "x/a.txt")))
        #expect(
            try upload(["dir/a.txt", "gs://bucket/"])
                == .upload(file: file, to: ObjectAddress(bucket: "bucket", path: "a.txt")))
        #expect(
            try upload(["dir/a.txt", "gs://bucket"])
                == .upload(file: file, to: ObjectAddress(bucket: "bucket", path: "a.txt")))
    }

    @Test func theArgumentsTellTheDirection() throws {
        let direction = { (words: [String]) throws -> CopyCommand.Direction in
            try CopyCommand(words, environment: Self.home).direction
        }
        let object = ObjectAddress(bucket: "bkt", path: "p/o")
        #expect(try direction(["-", "gs://bkt/p/o"]) == .uploadStandardInput(to: object))
        #expect(try direction(["gs://bkt/p/o", "-"]) == .downloadToStandardOutput(object))
        #expect(try direction(["gs://bkt/p/o", "out/"]) == .download(object, to: "out/"))
        #expect(
            try direction(["-r", "d", "gs://bkt/p"])
                == .uploadDirectory(URL(fileURLWithPath: "d"), to: ObjectAddress(bucket: "bkt", path: "p")))
        #expect(
            try direction(["-R", "gs://bkt", "d"]) == .downloadPrefix(ObjectAddress(bucket: "bkt", path: ""), to: "d"))
    }

    @Test(arguments: [
        ["a.txt"],
        ["a.txt", "gs://b/c", "extra"],
        ["a.txt", "s3://bucket/c"],
        ["a.txt", "gs:///c"],
        ["a.txt", "b.txt"],
        ["gs://bucket/dir/", "gs://bucket/b"],
        ["-r", "-", "gs://bucket/c"],
        ["-r", "gs://bucket/c", "-"],
        ["-", "gs://bucket/"],
        ["gs://bucket/dir/", "out"],
        ["gs://bucket", "out"],
        ["-r", "--jobs", "0", "d", "gs://bucket/c"],
        ["a\nb", "gs://bucket/"],
        ["gs://Bad_Bucket/x", "out"],
        ["--endpoint", "ftp://127.0.0.1", "a.txt", "gs://bucket/c"],
        ["--endpoint", "not a url", "a.txt", "gs://bucket/c"],
        ["--endpoint", "http://127.0.0.1:1", "--production", "a.txt", "gs://bucket/c"],
        ["--firebase", "http://127.0.0.1:1", "--endpoint", "http://127.0.0.1:2", "a.txt", "gs://bucket/c"],
        ["--chunk-size", "300K", "a.txt", "gs://bucket/c"],
        ["--chunk-size", "0", "a.txt", "gs://bucket/c"],
        ["--chunk-size", "-256K", "a.txt", "gs://bucket/c"],
        ["--chunk-size", "abc", "a.txt", "gs://bucket/c"],
    ])
    func badCopyCommandLinesAreUsageErrors(words: [String]) {
        #expect(throws: UsageError.self) { try CopyCommand(words, environment: Self.home) }
    }

    @Test func chunkSizesAreMultiplesOf256K() throws {
        #expect(
            try CopyCommand(["--chunk-size", "256K", "a", "gs://bkt/c"], environment: Self.home).chunkSize == 262_144)
        #expect(try CopyCommand(["--chunk-size=8M", "a", "gs://bkt/c"], environment: Self.home).chunkSize == 8 << 20)
        #expect(try CopyCommand(["a", "gs://bkt/c"], environment: Self.home).chunkSize == nil)
    }

    @Test func flagsSetContentTypeChecksumsAndQuiet() throws {
        let defaults = try CopyCommand(["a", "gs://bkt/c"], environment: Self.home)
        #expect(defaults.write.metadata == nil && defaults.verifiesChecksums && !defaults.quiet)
        let set = try CopyCommand(
            ["--content-type", "text/plain", "--no-checksum", "--quiet", "a", "gs://bkt/c"], environment: Self.home
        )
        #expect(set.write.metadata?.contentType == "text/plain" && !set.verifiesChecksums && set.quiet)
    }

    /// The endpoint a command line chose, or the built-in emulator's directory.
    static func destination(_ words: [String], _ environment: [String: String]) throws -> String {
        switch try CopyCommand(words + ["a.txt", "gs://bkt/c"], environment: environment).storage.endpoint {
        case .endpoint(let endpoint): "\(endpoint == .googleCloudStorage ? "production" : "\(endpoint)")"
        case .builtInEmulator(let directory): "built-in \(directory.path)"
        }
    }

    @Test func endpointFlagsWinOverTheEnvironmentWhichWinsOverTheBuiltInEmulator() throws {
        let both = [
            "STORAGE_EMULATOR_HOST": "http://127.0.0.1:4443",
            "FIREBASE_STORAGE_EMULATOR_HOST": "127.0.0.1:9199",
            "XDG_DATA_HOME": "/tmp/xdg-for-tests",
        ]
        #expect(try Self.destination(["--endpoint", "http://127.0.0.1:1"], both) == "http://127.0.0.1:1")
        #expect(try Self.destination(["--production"], both) == "production")
        #expect(try Self.destination([], both) == "http://127.0.0.1:9199")
        var gcsOnly = both
        gcsOnly["FIREBASE_STORAGE_EMULATOR_HOST"] = nil
        #expect(try Self.destination([], gcsOnly) == "http://127.0.0.1:4443")
        #expect(try Self.destination([], Self.home) == "built-in /tmp/xdg-for-tests/cloud-storage/emulator")
        #expect(try Self.destination(["--emulator-dir", "/tmp/elsewhere"], Self.home) == "built-in /tmp/elsewhere")
    }

    @Test func theProtocolFollowsTheFlagOrVariable() throws {
        func endpoint(_ words: [String], _ environment: [String: String]) throws -> StorageEndpoint? {
            if case .endpoint(let endpoint) = try CopyCommand(words + ["a", "gs://bkt/c"], environment: environment)
                .storage.endpoint
            {
                return endpoint
            }
            return nil
        }
        let url = URL(string: "http://127.0.0.1:9199")!
        #expect(try endpoint(["--firebase", "http://127.0.0.1:9199"], [:]) == .firebase(url))
        #expect(try endpoint(["--endpoint", "http://127.0.0.1:9199"], [:]) == .gcs(url))
        #expect(try endpoint([], ["FIREBASE_STORAGE_EMULATOR_HOST": "127.0.0.1:9199"]) == .firebase(url))
        #expect(try endpoint([], ["STORAGE_EMULATOR_HOST": "127.0.0.1:9199"]) == .gcs(url))
    }

    @Test func aMalformedEmulatorVariableIsAUsageError() {
        #expect(throws: UsageError.self) {
            try CopyCommand(["a", "gs://bkt/c"], environment: ["STORAGE_EMULATOR_HOST": "ftp://x:1"])
        }
        #expect(throws: UsageError.self) {
            try CopyCommand(["a", "gs://bkt/c"], environment: ["FIREBASE_STORAGE_EMULATOR_HOST": "127.0.0.1"])
        }
    }

    @Test func withoutXDGDataHomeTheEmulatorLivesUnderTheHomeDirectory() {
        let expected = FileManager.default.homeDirectoryForCurrentUser
            .appendingPathComponent(".local/share/cloud-storage/emulator").path
        #expect(StorageOptions.defaultEmulatorDirectory([:]).standardizedFileURL.path == expected)
    }

    @Test func theTokenComesFromTheFlagOrTheEnvironment() throws {
        let fromEnvironment = ["CLOUD_STORAGE_TOKEN": "from-env"]
        #expect(try CopyCommand(["a", "gs://bkt/c"], environment: fromEnvironment).storage.token == "from-env")
        #expect(
            try CopyCommand(["--token", "from-flag", "a", "gs://bkt/c"], environment: fromEnvironment).storage.token
                == "from-flag")
        #expect(try CopyCommand(["a", "gs://bkt/c"], environment: [:]).storage.token == nil)
    }

    // MARK: EmulatorCommand

    @Test func emulatorOptionsFillTheConfiguration() throws {
        let command = try EmulatorCommand([
            "--host", "0.0.0.0", "--port", "9199", "--dir", "/tmp/objects", "--token", "secret",
            "--faults", "return-503,pass,reset-after-256K", "--accept-owner", "--session-lifetime", "3600",
            "--max-sessions", "50",
        ])
        let configuration = command.configuration
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 9199)
        guard case .directory(let directory) = configuration.backing else {
            Issue.record("expected a directory backing")
            return
        }
        #expect(directory.path == "/tmp/objects")
        #expect(configuration.requiredToken == "secret")
        #expect(configuration.acceptsOwner)
        #expect(configuration.uploadSessionLifetime == .seconds(3600))
        #expect(configuration.maxUploadSessions == 50)
        #expect(configuration.faults == ["return-503", "pass", "reset-after-256K"])
        #expect(configuration.autoCreateBuckets)
        #expect(configuration.tls == nil)
        let tls = try EmulatorCommand(["--tls-cert", "a.pem", "--tls-key", "a.key"]).configuration.tls
        #expect(tls == .init(certificateChain: .file("a.pem"), privateKey: .file("a.key")))
    }

    @Test func emulatorDefaultsAreMemoryOnAFreeLoopbackPort() throws {
        let configuration = try EmulatorCommand([]).configuration
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 0)
        guard case .memory = configuration.backing else {
            Issue.record("expected memory backing")
            return
        }
        #expect(configuration.requiredToken == nil)
        #expect(!configuration.acceptsOwner)
        #expect(configuration.uploadSessionLifetime == .seconds(7 * 24 * 3600))
        #expect(configuration.maxUploadSessions == 1000)
        #expect(configuration.faults.isEmpty)
        // `owner` without a token would change nothing: a usage error rather than a false sense of security.
        #expect(throws: UsageError.self) { try EmulatorCommand(["--accept-owner"]) }
        #expect(throws: UsageError.self) { try EmulatorCommand(["--session-lifetime", "0"]) }
        #expect(throws: UsageError.self) { try EmulatorCommand(["--max-sessions", "-1"]) }
        guard case .discard = try EmulatorCommand(["--discard"]).configuration.backing else {
            Issue.record("expected discard backing")
            return
        }
    }

    @Test func emulatorAuthenticationOptionsReadGoogleCredentialFiles() throws {
        let serviceAccount = TestCredentials.url("conformance/test_service_account.not-a-test.json").path
        let user = FileManager.default.temporaryDirectory.appendingPathComponent("user-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: user) }
        try Data(
            #"{"type":"authorized_user","client_id":"id","client_secret":"secret","refresh_token":"1//r"}"#.utf8
        ).write(to: user)
        // Every field a service account needs, but declared as another kind of credential.
        let mislabelled = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: mislabelled) }
        var fields = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: serviceAccount)))
                as? [String: Any])
        fields["type"] = "authorized_user"
        try JSONSerialization.data(withJSONObject: fields).write(to: mislabelled)
        let command = try EmulatorCommand([
            "--service-account", serviceAccount, "--authorized-user", user.path, "--metadata-account", "vm@p.iam",
            "--metadata-project", "p", "--token-lifetime", "60", "--require-access-token",
        ])
        let authentication = try #require(command.configuration.authentication)
        #expect(
            authentication.serviceAccounts.map(\.email) == [
                "test-iam-credentials@dummy-project-id.iam.gserviceaccount.com"
            ])
        #expect(authentication.serviceAccounts.first?.keyID == "ffffffffffffffffffffffffffffffffffffffff")
        #expect(authentication.authorizedUsers.map(\.refreshToken) == ["1//r"])
        #expect(authentication.metadataServerAccount?.projectID == "p")
        #expect(authentication.tokenLifetime == .seconds(60))
        #expect(authentication.requiresToken)
        // The key in the file is usable: the emulator starts with it.
        try StorageEmulator.start(command.configuration).stop()
        #expect(try EmulatorCommand([]).configuration.authentication == nil)
        for words in [
            ["--service-account", user.path], ["--service-account", mislabelled.path],
            ["--authorized-user", serviceAccount],
            ["--service-account", "/nonexistent"],
            ["--metadata-project", "p"], ["--token-lifetime", "0"],
        ] {
            #expect(throws: UsageError.self, "\(words)") { try EmulatorCommand(words) }
        }
    }

    @Test func aRandomFaultPlanStaysWhole() throws {
        let command = try EmulatorCommand(["--faults", "random:seed=7,rate=0.25"])
        #expect(command.configuration.faults == ["random:seed=7,rate=0.25"])
        // And the emulator accepts it as one plan.
        let emulator = try StorageEmulator.start(command.configuration)
        emulator.stop()
    }

    @Test(arguments: [
        ["--port", "65536"], ["--port", "-1"], ["--port", "http"], ["--dir", "/tmp/x", "--discard"],
        ["serve"], ["--verbose"], ["--faults"], ["--tls-cert", "a.pem"], ["--tls-key", "a.key"],
    ])
    func badEmulatorCommandLinesAreUsageErrors(words: [String]) {
        #expect(throws: UsageError.self) { try EmulatorCommand(words) }
    }

    @Test func anInvalidFaultPlanStopsTheEmulatorFromStarting() async throws {
        // Parsing keeps the text; the emulator refuses it, and the command fails (exit 1) without serving.
        let command = try EmulatorCommand(["--faults", "explode"])
        #expect(throws: StorageEmulator.EmulatorError.self) { try StorageEmulator.start(command.configuration) }
        #expect(await command.run() == .failure)
    }

    @Test(arguments: [
        (StorageErrorCode.unreadableFile, ExitCode.localFile), (.unwritableFile, .localFile),
        (.fileChanged, .localFile),
        (.nonMatchingChecksum, .integrity), (.objectChanged, .integrity), (.protocolViolation, .failure),
        (.retryLimitExceeded, .unavailable), (.cancelled, .interrupted),
    ])
    func errorCodesMapToTheDocumentedExitStatus(code: StorageErrorCode, status: ExitCode) {
        #expect(ExitCode(StorageError(code, "x")) == status)
    }
}

/// `--retry-policy`: every command retries `always` (as `gcloud storage` does) unless told
/// otherwise, and the value goes into the `Storage` the command makes.
@Suite("Command line retry policy")
struct CommandLineRetryPolicyTests {
    static func options(_ words: [String]) throws -> StorageOptions {
        let arguments = try CommandLineArguments(words, valued: StorageOptions.valued, flags: StorageOptions.flags)
        return try StorageOptions(arguments, environment: ["STORAGE_EMULATOR_HOST": "http://127.0.0.1:9"])
    }

    @Test func everyCommandRetriesAlwaysUnlessToldOtherwise() throws {
        #expect(try Self.options([]).retryPolicy == .always)
        #expect(try Self.options(["--retry-policy", "idempotent-only"]).retryPolicy == .idempotentOnly)
        #expect(try Self.options(["--retry-policy=never"]).retryPolicy == .never)
        #expect(throws: UsageError.self) { try Self.options(["--retry-policy", "sometimes"]) }
    }

    @Test func thePolicyReachesTheStorage() async throws {
        let connection = try await Self.options(["--retry-policy", "never"]).connect(bucket: "b")
        defer { connection.close() }
        #expect(connection.storage.configuration.retry.policy == .never)
    }
}
