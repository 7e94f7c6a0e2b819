import CloudStorage
import Foundation
import StorageEmulator

/// Where a command that talks to a storage server talks, and as whom: the
/// options every such command shares (`--endpoint`, `--firebase`,
/// `--production`, `--emulator-dir`, `--token`, `--ca-file`), the emulator
/// variables of the environment, and the built-in emulator when nothing is
/// configured.
///
/// Parsing checks everything that can be checked without contacting anything
/// (URLs, the environment's variables, the CA file), so a typo fails before a
/// server is started; ``connect(bucket:configuration:)`` then starts the
/// built-in emulator if it is the destination and finds credentials.
struct StorageOptions {
    /// The options that take a value, to pass to ``CommandLineArguments``.
    static let valued: Set<String> = [
        "--endpoint", "--firebase", "--token", "--emulator-dir", "--ca-file", "--retry-policy",
    ]
    /// The options that take none.
    static let flags: Set<String> = ["--production", "--verbose"]

    /// How the tool names itself after the SDK in every request's `User-Agent`.
    static let applicationSuffix = "cloud-storage-cli/\(StorageConfiguration.Identification.sdkVersion)"

    /// The usage text that says where a command goes (indented as a command's usage).
    static let destinationUsage = """
        Where it goes:
          --endpoint URL     a Google Cloud Storage JSON API endpoint
          --firebase URL     a Cloud Storage for Firebase (v0) endpoint
          --production       Google Cloud Storage itself
          otherwise STORAGE_EMULATOR_HOST or FIREBASE_STORAGE_EMULATOR_HOST, and
          with none of these the built-in emulator, which keeps objects in
          --emulator-dir DIR (default: $XDG_DATA_HOME/cloud-storage/emulator,
          i.e. ~/.local/share/cloud-storage/emulator); CLOUD_STORAGE_EMULATOR_FAULTS=LIST
          gives it a fault plan, as `cloud-storage emulator --faults LIST` does.
        """

    /// The usage lines of `--token`.
    static let tokenUsage = """
          --token TOKEN       an access token (default: $CLOUD_STORAGE_TOKEN); without one,
                              --production and https:// --endpoint URLs use Application
                              Default Credentials: the file $GOOGLE_APPLICATION_CREDENTIALS
                              names, gcloud's (gcloud auth application-default login), or
                              the metadata server on Google Cloud
        """

    /// The usage lines of `--ca-file` and `--retry-policy`.
    static let connectionUsage = """
          --ca-file FILE      also trust the CA certificates in this PEM file for https://
                              (a private CA; the system's store, which honours SSL_CERT_FILE
                              and SSL_CERT_DIR, stays trusted; needs the system's OpenSSL 3)
          --retry-policy P    which failed requests are sent again: always (the default of
                              every command, as gcloud storage retries every retryable
                              error), idempotent-only (Google's client libraries' default:
                              writes only under a precondition such as cp -n), or never
        """

    /// The retry policy of every command unless `--retry-policy` says otherwise: `gcloud
    /// storage`, whose verbs this tool follows, retries every retryable failure, idempotent or
    /// not (cloud.google.com/storage/docs/retry-strategy, "gcloud CLI"). A command line names
    /// one object and one intent, and its user sees the outcome: the risk the SDK's default
    /// guards against (a retried write overwriting another writer's) is the user's to take.
    static let defaultRetryPolicy = StorageConfiguration.Retry.Policy.always

    /// A server given by the command line or the environment, or the built-in emulator.
    enum Destination {
        case endpoint(StorageEndpoint)
        case builtInEmulator(directory: URL)
    }

    let endpoint: Destination
    let token: String?
    /// Whether, with no token, the command finds Application Default Credentials: for Google
    /// itself and https:// endpoints, never for the emulators (http:// on this machine).
    let usesApplicationDefaultCredentials: Bool
    /// The environment the command was given, where Application Default Credentials look.
    let environment: [String: String]
    /// The private CA certificates of `--ca-file`, trusted besides the system's store.
    let trustRoot: StorageConfiguration.TrustRoot?
    /// Whether the SDK's events are printed to standard error (`--verbose`).
    let verbose: Bool
    /// Which failed requests are retried (`--retry-policy`, else ``defaultRetryPolicy``).
    let retryPolicy: StorageConfiguration.Retry.Policy

    /// Reads the shared options out of a command's parsed arguments.
    ///
    /// - Throws: ``UsageError`` for conflicting endpoint options, a URL that is not http(s),
    ///   a malformed emulator variable, or a `--ca-file` that is unreadable or holds no certificate.
    init(_ arguments: CommandLineArguments, environment: [String: String]) throws(UsageError) {
        let chosen = [
            arguments.value("--endpoint") != nil, arguments.value("--firebase") != nil, arguments.has("--production"),
        ]
        guard chosen.filter({ $0 }).count <= 1 else {
            throw UsageError("choose one of --endpoint, --firebase and --production")
        }
        if let text = arguments.value("--endpoint") {
            endpoint = .endpoint(.gcs(try Self.url(text)))
        } else if let text = arguments.value("--firebase") {
            endpoint = .endpoint(.firebase(try Self.url(text)))
        } else if arguments.has("--production") {
            endpoint = .endpoint(.googleCloudStorage)
        } else if let fromEnvironment = try Self.endpoint(fromEnvironment: environment) {
            endpoint = .endpoint(fromEnvironment)
        } else {
            let directory =
                arguments.value("--emulator-dir").map { URL(fileURLWithPath: $0) }
                ?? Self.defaultEmulatorDirectory(environment)
            endpoint = .builtInEmulator(directory: directory)
        }
        token = arguments.value("--token") ?? environment["CLOUD_STORAGE_TOKEN"]
        let googleEndpoint =
            arguments.has("--production")
            || arguments.value("--endpoint").map { $0.lowercased().hasPrefix("https://") } == true
        usesApplicationDefaultCredentials = token == nil && googleEndpoint
        self.environment = environment
        trustRoot = try arguments.value("--ca-file").map(Self.trustRoot(file:))
        verbose = arguments.has("--verbose")
        retryPolicy = try Self.retryPolicy(arguments)
    }

    /// `--retry-policy`: `always`, `idempotent-only` or `never`; ``defaultRetryPolicy`` without it.
    static func retryPolicy(_ arguments: CommandLineArguments) throws(UsageError) -> StorageConfiguration.Retry.Policy {
        guard let text = arguments.value("--retry-policy") else { return defaultRetryPolicy }
        guard let policy = StorageConfiguration.Retry.Policy.allCases.first(where: { "\($0)" == text }) else {
            throw UsageError("--retry-policy: \(text) is not one of always, idempotent-only, never")
        }
        return policy
    }

    /// The certificates of a `--ca-file`, read and checked now, so that a wrong path fails
    /// before anything is started or contacted rather than at the first https:// request.
    static func trustRoot(file path: String) throws(UsageError) -> StorageConfiguration.TrustRoot {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw UsageError("--ca-file: cannot read \(path)", showsUsage: false)
        }
        do {
            return try StorageConfiguration.TrustRoot.pem(contents)
        } catch {
            throw UsageError(
                "--ca-file: \(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----)", showsUsage: false)
        }
    }

    static func url(_ text: String) throws(UsageError) -> URL {
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw UsageError("not an http(s) URL: \(text)")
        }
        return url
    }

    static func endpoint(fromEnvironment environment: [String: String]) throws(UsageError) -> StorageEndpoint? {
        do {
            return try StorageEndpoint.fromEnvironment(environment)
        } catch {
            throw UsageError("\(error.message)", showsUsage: false)
        }
    }

    static func defaultEmulatorDirectory(_ environment: [String: String]) -> URL {
        let base =
            environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        return base.appendingPathComponent("cloud-storage/emulator", isDirectory: true)
    }

    /// Connects for `bucket`, runs `body` with the connection and closes it afterwards; a
    /// failure to connect is reported and its status returned instead.
    func withConnection(
        bucket: String, configuration: StorageConfiguration = StorageConfiguration(),
        _ body: (Connection) async -> ExitCode
    ) async -> ExitCode {
        let connection: Connection
        do {
            connection = try await connect(bucket: bucket, configuration: configuration)
        } catch {
            return error.reported()
        }
        defer { connection.close() }
        let status = await body(connection)
        // Every event is printed before the command's last words and its exit.
        await connection.storage.configuration.events.flush()
        return status
    }

    /// Starts the built-in emulator if it is the destination, makes the `Storage` for `bucket`
    /// and, for Application Default Credentials, fetches a token now, so that a machine without
    /// credentials fails with one line before anything is sent (the token is cached for later).
    ///
    /// - Parameters:
    ///   - bucket: The bucket the returned storage addresses.
    ///   - configuration: The command's settings; the trust root of `--ca-file` is added.
    /// - Returns: The connection; call ``Connection/close()`` when done with it.
    /// - Throws: ``CommandFailure`` with the message to show and the exit status.
    func connect(
        bucket: String, configuration: StorageConfiguration = StorageConfiguration()
    ) async throws(CommandFailure) -> Connection {
        var emulator: (server: StorageEmulator, directory: URL)?
        let storageEndpoint: StorageEndpoint
        switch endpoint {
        case .endpoint(let given):
            storageEndpoint = given
        case .builtInEmulator(let directory):
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                var emulatorConfiguration = StorageEmulator.Configuration()
                emulatorConfiguration.backing = .directory(directory)
                emulatorConfiguration.autoCreateBuckets = true
                // As `emulator --faults`: how tests make a run of the tool stop mid-upload.
                emulatorConfiguration.faults =
                    environment["CLOUD_STORAGE_EMULATOR_FAULTS"].map { $0.split(separator: ",").map(String.init) } ?? []
                let started = try BuiltInEmulatorPort.start(emulatorConfiguration, in: directory)
                emulator = (started, directory)
                storageEndpoint = .gcs(started.baseURL)
            } catch {
                throw CommandFailure("cannot start the built-in emulator in \(directory.path): \(error)", .failure)
            }
        }
        var configuration = configuration
        configuration.retry.policy = retryPolicy
        configuration.tls.additionalTrustRoots += trustRoot.map { [$0] } ?? []
        // Printable ASCII well under the length limit, so never refused.
        try? configuration.identification.setApplicationSuffix(Self.applicationSuffix)
        // The default capacity is at least 1, so never refused.
        if verbose { try? configuration.events.setHandler(EventPrinter()) }
        let storage = Storage(
            bucket: bucket,
            endpoint: storageEndpoint,
            authorization: authorization,
            configuration: configuration
        )
        let connection = Connection(
            storage: storage, endpoint: storageEndpoint, emulator: emulator?.server,
            emulatorDirectory: emulator?.directory)
        if usesApplicationDefaultCredentials {
            do {
                try await storage.fetchAccessToken()
            } catch {
                connection.close()
                if error.code == .cancelled { throw CommandFailure(nil, .interrupted) }
                let detail = error.serverMessage.map { " (\($0))" } ?? ""
                throw CommandFailure(
                    "cannot get credentials: \(error.message)\(detail)".replacingOccurrences(of: "\n", with: " "),
                    .failure)
            }
        }
        return connection
    }

    /// How the connection's requests are authorized: `--token`, Application Default
    /// Credentials, or nothing.
    var authorization: StorageAuthorization {
        if let token { return .bearerToken(token) }
        guard usesApplicationDefaultCredentials else { return .none }
        return .applicationDefault(
            environment: environment,
            homeDirectory: environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path)
    }

    /// A `Storage` ready for use, and the built-in emulator serving it, if any.
    struct Connection {
        let storage: Storage
        /// The endpoint the storage talks to (the built-in emulator's address when it is one).
        let endpoint: StorageEndpoint
        /// The built-in emulator, started for this command.
        let emulator: StorageEmulator?
        /// Where the built-in emulator keeps its objects.
        let emulatorDirectory: URL?

        /// Where the objects are, for messages: "in the built-in emulator; …" or "at ENDPOINT".
        var location: String {
            if let directory = emulatorDirectory {
                return "in the built-in emulator; its files are in \(directory.path)"
            }
            return "at \(endpoint)"
        }

        /// A storage for `bucket` on the same server, sharing the connections, credentials and settings.
        func storage(for bucket: String) -> Storage {
            bucket == storage.bucket ? storage : storage.bucket(bucket)
        }

        /// Stops the built-in emulator, if one was started.
        func close() {
            emulator?.stop()
        }
    }
}

/// A command could not go on: what to tell (nil: nothing more to say) and the exit status.
struct CommandFailure: Error {
    let message: String?
    let status: ExitCode

    init(_ message: String?, _ status: ExitCode) {
        self.message = message
        self.status = status
    }

    /// Shows the message on standard error and gives the status.
    func reported() -> ExitCode {
        if let message { report(message) }
        return status
    }
}
