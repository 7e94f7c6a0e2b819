import CloudStorage
import Foundation
import StorageEmulator
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cloud-storage cp FILE gs://BUCKET/PATH`: uploads a file with a progress bar.
struct CopyCommand {
    static let usage = """
        usage: cloud-storage cp [options] FILE gs://BUCKET/[PATH]

        Uploads FILE, a regular file or a link to one (FIFOs, devices, sockets
        and directories are refused with status 3), to the object PATH (or,
        when PATH is empty or ends in /, to PATH followed by the file's name).
        Where it goes:
          --endpoint URL     a Google Cloud Storage JSON API endpoint
          --firebase URL     a Cloud Storage for Firebase (v0) endpoint
          --production       Google Cloud Storage itself
          otherwise STORAGE_EMULATOR_HOST or FIREBASE_STORAGE_EMULATOR_HOST, and
          with none of these the built-in emulator, which keeps objects in
          --emulator-dir DIR (default: $XDG_DATA_HOME/cloud-storage/emulator,
          i.e. ~/.local/share/cloud-storage/emulator).

        Options:
          --token TOKEN       an access token (default: $CLOUD_STORAGE_TOKEN); without one,
                              --production and https:// --endpoint URLs use Application
                              Default Credentials: the file $GOOGLE_APPLICATION_CREDENTIALS
                              names, gcloud's (gcloud auth application-default login), or
                              the metadata server on Google Cloud
          --content-type T    the object's content type (default: from the extension)
          --chunk-size SIZE   at most SIZE bytes per request, a multiple of 256K (e.g. 8M)
          --ca-file FILE      also trust the CA certificates in this PEM file for https://
                              (a private CA; the system's store, which honours SSL_CERT_FILE
                              and SSL_CERT_DIR, stays trusted; needs the system's OpenSSL 3)
          --no-checksum       do not send or verify CRC32C
          --quiet             no progress bar

        Ctrl-C (or SIGTERM) cancels the upload and deletes the server's upload
        session; if the server has not confirmed within 2 seconds, or on a second
        Ctrl-C, the command exits without waiting any longer.
        Exit status: 0 stored, 2 usage, 3 local file problem, 4 credentials refused,
        5 bucket not found, 6 retries ran out, 7 integrity failure, 130 interrupted
        (Ctrl-C), 143 terminated (SIGTERM), 1 other (no credentials found or none could
        be fetched, a server whose certificate does not verify, or that does not speak
        TLS at an https:// address, among them).
        """

    let source: URL
    let bucket: String
    let path: String
    let endpoint: Destination
    let token: String?
    /// Whether, with no token, the command finds Application Default Credentials: for Google
    /// itself and https:// endpoints, never for the emulators (http:// on this machine).
    let usesApplicationDefaultCredentials: Bool
    /// The environment the command was given, where Application Default Credentials look.
    let environment: [String: String]
    let contentType: String?
    let chunkSize: Int64?
    /// The private CA certificates of `--ca-file`, trusted besides the system's store.
    let trustRoot: StorageConfiguration.TrustRoot?
    let verifiesChecksums: Bool
    let quiet: Bool

    enum Destination {
        case endpoint(StorageEndpoint)
        case builtInEmulator(directory: URL)
    }

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            words,
            valued: [
                "--endpoint", "--firebase", "--token", "--emulator-dir", "--content-type", "--chunk-size", "--ca-file",
            ],
            flags: ["--production", "--no-checksum", "--quiet"]
        )
        guard arguments.positional.count == 2 else { throw UsageError("cp needs a FILE and a gs://BUCKET/PATH") }
        let file = arguments.positional[0]
        guard file != "-" else { throw UsageError("reading from standard input is not supported yet; give a file") }
        source = URL(fileURLWithPath: file)
        let destination = try ObjectAddress(arguments.positional[1], role: "the destination")
        bucket = destination.bucket
        var objectPath = destination.path
        if objectPath.isEmpty || objectPath.hasSuffix("/") {
            objectPath += source.lastPathComponent
        }
        path = objectPath

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
        contentType = arguments.value("--content-type")
        if let text = arguments.value("--chunk-size") {
            guard let size = Self.byteCount(text) else { throw UsageError("--chunk-size: not a size: \(text)") }
            // Checked here so a typo fails before any server is started or contacted.
            guard size > 0, size % StorageConfiguration.chunkGranularity == 0 else {
                throw UsageError("--chunk-size: \(text) is not a positive multiple of 256K (262144 bytes)")
            }
            chunkSize = size
        } else {
            chunkSize = nil
        }
        trustRoot = try arguments.value("--ca-file").map(Self.trustRoot(file:))
        verifiesChecksums = !arguments.has("--no-checksum")
        quiet = arguments.has("--quiet")
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

    /// Parses `262144`, `256K`, `8M`, `1G` (powers of 1024).
    static func byteCount(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        if let last = text.uppercased().last, let unit = units[last] {
            return Int64(text.dropLast()).flatMap {
                $0.multipliedReportingOverflow(by: unit).overflow ? nil : $0 * unit
            }
        }
        return Int64(text)
    }

    func run() async -> ExitCode {
        // Before anything is started or opened: a FIFO would block the open for ever.
        if let problem = await SourceFile.problem(at: source.path) {
            report(problem)
            return .localFile
        }
        var emulator: StorageEmulator?
        let storageEndpoint: StorageEndpoint
        switch endpoint {
        case .endpoint(let given):
            storageEndpoint = given
        case .builtInEmulator(let directory):
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                var configuration = StorageEmulator.Configuration()
                configuration.backing = .directory(directory)
                configuration.autoCreateBuckets = true
                let started = try StorageEmulator.start(configuration)
                emulator = started
                storageEndpoint = .gcs(started.baseURL)
            } catch {
                report("cannot start the built-in emulator in \(directory.path): \(error)")
                return .failure
            }
        }
        defer { emulator?.stop() }

        var configuration = StorageConfiguration()
        do {
            try configuration.setChunkSize(chunkSize)
        } catch {
            report("\(error.message)")
            return .usage
        }
        configuration.verifiesChecksums = verifiesChecksums
        configuration.additionalTrustRoots = trustRoot.map { [$0] } ?? []
        let authorization: StorageAuthorization
        if let token {
            authorization = .bearerToken(token)
        } else if usesApplicationDefaultCredentials {
            authorization = .applicationDefault(
                environment: environment,
                homeDirectory: environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path)
        } else {
            authorization = .none
        }
        let storage = Storage(
            bucket: bucket,
            endpoint: storageEndpoint,
            authorization: authorization,
            configuration: configuration
        )
        if usesApplicationDefaultCredentials {
            // Found and exchanged now, so that a machine without credentials fails with one
            // line before anything is uploaded; the token is cached for the upload.
            do {
                try await storage.fetchAccessToken()
            } catch {
                if error.code == .cancelled { return .interrupted }
                let detail = error.serverMessage.map { " (\($0))" } ?? ""
                report(
                    "cannot get credentials: \(error.message)\(detail)".replacingOccurrences(of: "\n", with: " "))
                return .failure
            }
        }
        let reference: StorageReference
        do {
            reference = try storage.reference(forURL: "gs://\(bucket)/\(path)")
        } catch {
            report("\(error.message)")
            return .usage
        }
        var metadata = StorageMetadata()
        metadata.contentType = contentType

        // Signals are taken over before the upload starts, so none can end the
        // process without the upload being cancelled.
        let slot = UploadSlot()
        let interruption = Interruption { slot.cancel() }
        let interrupts = SignalHandler { interruption.interrupt($0) }
        let task = reference.putFile(from: source, metadata: contentType == nil ? nil : metadata)
        slot.set(task)
        // Cancelling the Swift task that runs the command (as a caller embedding
        // it does, and as the tests do) is a Ctrl-C too: `task.value` alone
        // would let the upload carry on.
        let ending = await withTaskCancellationHandler {
            await Self.wait(for: task, showingProgress: !quiet, unless: interruption)
        } onCancel: {
            interruption.interrupt(SIGINT)
        }
        withExtendedLifetime(interrupts) {}

        let outcome: Result<StorageMetadata, StorageError>
        switch ending {
        case .finished(let finished):
            outcome = finished
        case .abandoned(let signal):
            report(
                "interrupted; the server did not confirm the cancellation in time, so an upload session may remain"
                    + " open until it expires (nothing is stored unless the server had all the bytes)")
            return ExitCode(signal: signal)
        }
        do {
            let stored = try outcome.get()
            var location = "\(reference) (\(stored.size) bytes, \(stored.contentType ?? "no content type"))"
            if case .builtInEmulator(let directory) = endpoint {
                location += " in the built-in emulator; its files are in \(directory.path)"
            } else {
                location += " at \(storageEndpoint)"
            }
            print("Stored \(location)")
            return .success
        } catch {
            if error.code == .cancelled {
                report("cancelled; nothing was stored (an upload session, if one was open, was deleted)")
                if let signal = interruption.signal { return ExitCode(signal: signal) }
            } else if error.code == .tlsFailure {
                // The message names the server and the cause; the underlying error would only repeat it.
                let untrusted = error.message.contains("issuer is not trusted")
                report(
                    error.message
                        + (untrusted
                            ? " If a private certificate authority issued it, pass that CA's certificate with --ca-file FILE."
                            : ""))
            } else {
                report(String(describing: error))
            }
            return ExitCode(error)
        }
    }

    /// How waiting for an upload ended.
    enum Ending: Sendable {
        /// The upload ended, this way.
        case finished(Result<StorageMetadata, StorageError>)
        /// A signal's grace period ran out first (or a second signal came).
        case abandoned(signal: Int32)
    }

    /// Waits for `task` to end, showing its progress, or for `interruption`
    /// to give up on it, whichever comes first.
    static func wait(
        for task: StorageUploadTask, showingProgress: Bool, unless interruption: Interruption
    ) async -> Ending {
        await withCheckedContinuation { (continuation: CheckedContinuation<Ending, Never>) in
            let once = OnceFlag()
            interruption.onAbandon { signal in
                if once.take() { continuation.resume(returning: .abandoned(signal: signal)) }
            }
            Task {
                var bar = ProgressBar()
                for await snapshot in task.snapshots where showingProgress {
                    bar.show(snapshot)
                }
                let outcome: Result<StorageMetadata, StorageError>
                do throws(StorageError) {
                    outcome = .success(try await task.value)
                } catch {
                    outcome = .failure(error)
                }
                if once.take() { continuation.resume(returning: .finished(outcome)) }
            }
        }
    }
}

/// The upload a signal cancels, which may arrive before the upload exists.
private final class UploadSlot: Sendable {
    private let state = Mutex<(task: StorageUploadTask?, cancelled: Bool)>((nil, false))

    /// Cancels the upload now, or as soon as it is set.
    func cancel() {
        let task = state.withLock { state -> StorageUploadTask? in
            state.cancelled = true
            return state.task
        }
        if let task { Task { await task.cancel() } }
    }

    func set(_ task: StorageUploadTask) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelled { Task { await task.cancel() } }
    }
}

/// Writes a message for people to standard error.
func report(_ message: String) {
    FileHandle.standardError.write(Data("cloud-storage: \(message)\n".utf8))
}
