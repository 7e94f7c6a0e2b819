import Foundation
import StorageEmulator

/// `cloud-storage emulator`: runs the built-in emulator until Ctrl-C.
struct EmulatorCommand {
    static let usage = """
        usage: cloud-storage emulator [options]

        Serves the Google Cloud Storage JSON API and Cloud Storage for Firebase (v0)
        on one port, until Ctrl-C.

        Options:
          --host HOST        address to listen on (default 127.0.0.1)
          --port PORT        port (default 0: any free port; printed at start)
          --dir DIR          keep objects in DIR (default: in memory)
          --discard          count bytes and store nothing; checks CRC32C, no MD5 (for benchmarks)
          --token TOKEN      require this token (Bearer for GCS, Firebase or Bearer for v0)
                             on every request, fault-plan endpoint included; others get 401
          --accept-owner     with --token, also accept `owner` (Bearer or Firebase), the
                             Firebase emulator's administrator; no secret, so off by default
          --app-check-token TOKEN
                             Firebase (v0) requests need X-Firebase-AppCheck: TOKEN, as with
                             App Check enforced; others get 401 (download-token URLs need none)
          --session-lifetime SECONDS
                             how long a resumable upload session lives after it starts
                             (default 604800, a week, as on Cloud Storage); then it answers 404
                             and its staged bytes are deleted
          --max-sessions N   the most upload sessions and XML multipart uploads at once (default
                             1000); a new one evicts the least recently used idle one, or gets
                             503 if all are busy
          --faults LIST      a fault plan applied to every request, comma-separated,
                             e.g. return-503,pass,reset-after-256K or random:seed=1,rate=0.1
                             (clients can also send x-emulator-faults: <plan id>)
          --tls-cert FILE    serve HTTPS with this PEM certificate chain (leaf first);
                             needs --tls-key and the system's OpenSSL 3
          --tls-key FILE     the certificate's PEM private key; needs --tls-cert
          --shape rate=RATE,latency=TIME
                             model a WAN: cap each connection at RATE in each direction
                             (B/s, kB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s) and wait TIME (us, ms,
                             s) before each response, one round trip; either key is optional,
                             e.g. --shape rate=50MB/s,latency=10ms

        Google's authentication servers, on the same port:
          --service-account FILES
                             service-account key files (JSON, comma-separated) whose signed
                             JWTs POST /token accepts; their keys also sign for IAM signBlob
          --authorized-user FILES
                             authorized_user credential files (JSON, comma-separated) whose
                             refresh tokens POST /token accepts
          --metadata-account EMAIL
                             serve the metadata server (/computeMetadata/v1/) for this account
                             (set GCE_METADATA_HOST=<host>:<port> in clients)
          --metadata-project ID
                             the metadata server's project id (default emulator-project)
          --token-lifetime SECONDS
                             how long issued access tokens live (default 3600)
          --require-access-token
                             storage requests need a live token issued by POST /token or the
                             metadata server (each resumable-upload request too); others get 401
        """

    let configuration: StorageEmulator.Configuration

    init(_ words: [String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            words,
            valued: [
                "--host", "--port", "--dir", "--token", "--faults", "--session-lifetime", "--max-sessions",
                "--tls-cert", "--tls-key", "--service-account", "--authorized-user", "--metadata-account",
                "--metadata-project", "--token-lifetime", "--app-check-token", "--shape",
            ],
            flags: ["--discard", "--accept-owner", "--require-access-token"]
        )
        guard arguments.positional.isEmpty else { throw UsageError("unexpected \(arguments.positional[0])") }
        var configuration = StorageEmulator.Configuration()
        if let host = arguments.value("--host") { configuration.host = host }
        if let text = arguments.value("--port") {
            guard let port = Int(text), (0...65535).contains(port) else {
                throw UsageError("--port: not a port: \(text)")
            }
            configuration.port = port
        }
        configuration.backing = try Self.backing(arguments)
        configuration.requiredToken = arguments.value("--token")
        configuration.appCheckToken = arguments.value("--app-check-token")
        if arguments.has("--accept-owner") {
            guard configuration.requiredToken != nil else {
                throw UsageError("--accept-owner needs --token (without a token everything is accepted)")
            }
            configuration.acceptsOwner = true
        }
        if let text = arguments.value("--session-lifetime") {
            guard let seconds = Int64(text), seconds > 0 else {
                throw UsageError("--session-lifetime: not a positive number of seconds: \(text)")
            }
            configuration.uploadSessionLifetime = .seconds(seconds)
        }
        if let text = arguments.value("--max-sessions") {
            guard let count = Int(text), count > 0 else {
                throw UsageError("--max-sessions: not a positive number: \(text)")
            }
            configuration.maxUploadSessions = count
        }
        if let faults = arguments.value("--faults") {
            // A random plan's parameters are separated by commas too: keep it whole.
            configuration.faults =
                faults.hasPrefix("random:") ? [faults] : faults.split(separator: ",").map(String.init)
        }
        configuration.tls = try Self.tls(arguments)
        if let text = arguments.value("--shape") {
            do {
                configuration.networkShape = try StorageEmulator.NetworkShape(parsing: text)
            } catch {
                throw UsageError("--shape: \(error.description)")
            }
        }
        configuration.authentication = try Self.authentication(arguments)
        self.configuration = configuration
    }

    /// Where the objects live: a directory (`--dir`), nowhere (`--discard`), or memory.
    private static func backing(
        _ arguments: CommandLineArguments
    ) throws(UsageError) -> StorageEmulator.Configuration.Backing {
        switch (arguments.value("--dir"), arguments.has("--discard")) {
        case (.some, true):
            throw UsageError("--dir and --discard exclude each other")
        case (.some(let directory), false):
            return .directory(URL(fileURLWithPath: directory))
        case (nil, true):
            return .discard
        case (nil, false):
            return .memory
        }
    }

    /// The HTTPS identity from `--tls-cert` and `--tls-key`, which come together; nil for plain HTTP.
    private static func tls(_ arguments: CommandLineArguments) throws(UsageError) -> StorageEmulator.TLSIdentity? {
        switch (arguments.value("--tls-cert"), arguments.value("--tls-key")) {
        case (.some(let certificate), .some(let key)):
            return .init(certificateChain: .file(certificate), privateKey: .file(key))
        case (.some, nil):
            throw UsageError("--tls-cert needs --tls-key")
        case (nil, .some):
            throw UsageError("--tls-key needs --tls-cert")
        case (nil, nil):
            return nil
        }
    }

    /// The authentication servers' setup from the options, or nil when none is asked for.
    private static func authentication(
        _ arguments: CommandLineArguments
    ) throws(UsageError) -> StorageEmulator.Authentication? {
        let names = [
            "--service-account", "--authorized-user", "--metadata-account", "--metadata-project", "--token-lifetime",
        ]
        guard names.contains(where: { arguments.value($0) != nil }) || arguments.has("--require-access-token") else {
            return nil
        }
        var authentication = StorageEmulator.Authentication(requiresToken: arguments.has("--require-access-token"))
        for path in files(arguments.value("--service-account")) {
            do {
                authentication.serviceAccounts.append(try .init(keyFile: try contents(path, "--service-account")))
            } catch {
                throw UsageError("--service-account: \(path): \(error)", showsUsage: false)
            }
        }
        for path in files(arguments.value("--authorized-user")) {
            do {
                authentication.authorizedUsers.append(
                    try .init(credentialFile: try contents(path, "--authorized-user")))
            } catch {
                throw UsageError("--authorized-user: \(path): \(error)", showsUsage: false)
            }
        }
        if let email = arguments.value("--metadata-account") {
            authentication.metadataServerAccount = .init(
                email: email, projectID: arguments.value("--metadata-project") ?? "emulator-project")
        } else if arguments.value("--metadata-project") != nil {
            throw UsageError("--metadata-project needs --metadata-account")
        }
        if let text = arguments.value("--token-lifetime") {
            guard let seconds = Int64(text), seconds > 0 else {
                throw UsageError("--token-lifetime: not a positive number of seconds: \(text)")
            }
            authentication.tokenLifetime = .seconds(seconds)
        }
        return authentication
    }

    private static func files(_ list: String?) -> [String] {
        (list ?? "").split(separator: ",").map(String.init)
    }

    /// A credential file's bytes.
    private static func contents(_ path: String, _ option: String) throws(UsageError) -> Data {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("\(option): cannot read \(path)", showsUsage: false)
        }
        return data
    }

    func run() async -> ExitCode {
        if case .directory(let directory) = configuration.backing {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                report("cannot create \(directory.path): \(error)")
                return .failure
            }
        }
        let emulator: StorageEmulator
        do {
            emulator = try StorageEmulator.start(configuration)
        } catch {
            report("cannot start the emulator: \(error)")
            return .failure
        }
        let storage: String
        switch configuration.backing {
        case .memory: storage = "in memory"
        case .directory(let directory): storage = "in \(directory.path)"
        case .discard: storage = "discarded (bytes are counted, nothing is stored)"
        }
        // Written unbuffered: a script reading this from a pipe needs the port now, not at exit.
        FileHandle.standardOutput.write(
            Data(
                """
                CloudStorage emulator listening on \(emulator.baseURL.absoluteString)
                  objects are kept \(storage)
                \(shapeLine)  GCS JSON API:  export STORAGE_EMULATOR_HOST=\(emulator.baseURL.absoluteString)
                  Firebase (v0): export FIREBASE_STORAGE_EMULATOR_HOST=\(configuration.host):\(emulator.port)
                \(authenticationLines(emulator))Press Ctrl-C to stop.

                """.utf8))
        let once = OnceFlag()
        var handler: SignalHandler?
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            handler = SignalHandler { _ in
                if once.take() { continuation.resume() }
            }
        }
        withExtendedLifetime(handler) {}
        emulator.stop()
        print("\nStopped after receiving \(emulator.bytesReceived) bytes.")
        return .success
    }

    /// The network model, when there is one.
    private var shapeLine: String {
        guard let shape = configuration.networkShape else { return "" }
        return "  network shape: \(shape) (the rate per connection each way, the latency per answer)\n"
    }

    /// What a client needs to reach the authentication servers, when they run.
    private func authenticationLines(_ emulator: StorageEmulator) -> String {
        guard let authentication = configuration.authentication else { return "" }
        var lines = "  OAuth tokens:  token_uri \(emulator.baseURL.absoluteString)/token\n"
        if authentication.metadataServerAccount != nil {
            lines += "  Metadata:      export GCE_METADATA_HOST=\(configuration.host):\(emulator.port)\n"
        }
        if authentication.requiresToken { lines += "  storage requests need an access token issued here\n" }
        return lines
    }
}
