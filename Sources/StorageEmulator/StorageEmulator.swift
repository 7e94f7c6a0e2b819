public import Foundation
import NativeTLS

/// A strict local server for the GCS JSON API and Firebase Storage v0, with
/// memory, directory or discarding storage and scriptable fault injection.
///
/// Start one per test (port 0 picks a free port) and point the SDK at
/// ``baseURL``:
///
/// ```swift
/// var configuration = StorageEmulator.Configuration()
/// configuration.faults = ["return-503", "pass"]
/// let emulator = try StorageEmulator.start(configuration)
/// defer { emulator.stop() }
/// try emulator.createBucket("my-bucket")
/// // STORAGE_EMULATOR_HOST=\(emulator.baseURL)
/// ```
///
/// Uploads follow the real services exactly: 256 KiB chunk granularity, `308`
/// with `Range`, re-sent bytes ignored, checksums verified, sessions that can be
/// queried, cancelled and re-answered. Fault plans (see ``installFaultPlan(_:)``)
/// make requests fail in the ways networks and servers do, without ever
/// corrupting what is stored.
public final class StorageEmulator: Sendable {
    /// How to run an emulator.
    public struct Configuration: Sendable {
        /// Where objects are kept.
        public enum Backing: Sendable {
            /// In memory, gone when the emulator stops.
            case memory
            /// In this directory (created if needed), which survives restarts.
            case directory(URL)
            /// Nowhere: uploads succeed with the correct size and CRC32C, bytes are only counted,
            /// and objects then read as not found. For throughput benchmarks: a sink that hashes
            /// only what clients verify (CRC32C, not MD5), so objects report no `md5Hash` and an
            /// upload that declares an MD5 to check is refused with `400`.
            case discard
        }

        /// The address to listen on.
        public var host = "127.0.0.1"
        /// The port to listen on; 0 picks a free one.
        public var port = 0
        /// Where objects are kept.
        public var backing: Backing = .memory
        /// When set, GCS requests need `Authorization: Bearer <token>`, Firebase requests
        /// `Authorization: Firebase <token>` (or `Bearer <token>`), and the control endpoint
        /// `POST /_emulator/v1/faults` either; everything else gets 401. The upload session URLs
        /// of the JSON API and of signed URLs need no header (they are capabilities, as with Cloud
        /// Storage; unless ``Authentication/requiresToken`` is set, which a signed URL's session
        /// ignores); a Firebase upload's commands need the token, whichever URL carries them; and
        /// a Firebase download token opens its own object. When nil, the emulator is open to every request.
        public var requiredToken: String? = nil
        /// With ``requiredToken`` set, also accept the Firebase emulator's administrator, `owner`
        /// (`Bearer owner` or `Firebase owner`), as the SDK's `StorageAuthorization.emulatorOwner`
        /// sends. Off by default: `owner` is a well-known word, not a secret. Without a required
        /// token it changes nothing (everything is accepted).
        public var acceptsOwner = false
        /// When set, Firebase requests must carry this Firebase App Check token in
        /// `X-Firebase-AppCheck`, as a Firebase project that enforces App Check requires; others
        /// get 401. A Firebase download token's URL needs none, nor do JSON API requests.
        public var appCheckToken: String? = nil
        /// A fault plan applied to every request without an `x-emulator-faults` header:
        /// instructions such as `["return-503", "reset-after-256K"]`, or `["random:seed=1,rate=0.05"]`.
        public var faults: [String] = []
        /// Create a bucket the first time a request names it.
        public var autoCreateBuckets = true
        /// How long a resumable upload session, or an XML API multipart upload, lives after it
        /// starts: one week, as resumable sessions on Cloud Storage (which keeps an unfinished
        /// multipart upload until it is completed or aborted: the emulator bounds those too).
        ///
        /// An expired upload answers as an unknown one (GCS `404`, Firebase v0 `404`, XML
        /// `NoSuchUpload`) and its staged bytes are deleted; expired uploads are swept as others
        /// are used, so uploads abandoned by killed clients do not accumulate.
        public var uploadSessionLifetime: Duration = .seconds(7 * 24 * 3600)
        /// The most resumable upload sessions and XML API multipart uploads at once, together.
        ///
        /// A new one beyond it evicts the least recently used idle ones (no request in progress
        /// on them; they then answer as unknown, `404` or `NoSuchUpload`); if every one is in use
        /// the new one gets `503` with `Retry-After: 1`, which clients retry. Idle ones hold no
        /// file descriptor, so the bound is about disk and memory, not descriptors.
        public var maxUploadSessions = 1000
        /// The least every part of an XML API multipart upload but the last must hold when the
        /// upload completes: 5 MiB, as on Cloud Storage (smaller ones are refused with
        /// `EntityTooSmall`). Tests lower it to exercise many parts with small files.
        public var minimumMultipartPartSize: Int64 = 5 * 1024 * 1024
        /// When set, the emulator serves HTTPS with this identity and ``StorageEmulator/baseURL``
        /// is `https://…`; every connection starts with a TLS handshake, and one that fails (a
        /// plain-HTTP client, an untrusting one) is closed without reaching a fault plan.
        /// Needs the system's OpenSSL 3, loaded at run time; without it ``StorageEmulator/start(_:)``
        /// fails and says why.
        public var tls: TLSIdentity? = nil
        /// Google's authentication servers on the emulator's port — the OAuth token endpoint
        /// (`POST /token`), the metadata server, IAM `signBlob` — and, with
        /// ``Authentication/requiresToken``, storage requests that need a token they issued.
        /// Nil (the default) serves none of them. Keys are read when the emulator starts.
        ///
        /// ```swift
        /// configuration.authentication = .init(
        ///     serviceAccounts: [.init(email: "uploader@demo.iam.gserviceaccount.com", publicKeyPEM: pem)],
        ///     requiresToken: true)
        /// ```
        public var authentication: Authentication? = nil
        /// A network model every connection is paced by: a rate cap per connection in each
        /// direction and a round-trip latency, as across a WAN (see ``NetworkShape``). Nil (the
        /// default) serves at loopback speed.
        ///
        /// ```swift
        /// configuration.networkShape = .init(rate: 50_000_000, latency: .milliseconds(10))
        /// ```
        public var networkShape: NetworkShape? = nil

        /// The defaults: loopback, a free port, memory, no auth, no faults, buckets created on use.
        public init() {}
    }

    /// Why the emulator could not start, or refused a bucket or a fault plan.
    public struct EmulatorError: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    let application: EmulatorApplication
    private let server: EmulatorHTTPServer
    private let host: String
    private let scheme: String

    private init(application: EmulatorApplication, server: EmulatorHTTPServer, host: String, scheme: String) {
        self.application = application
        self.server = server
        self.host = host
        self.scheme = scheme
    }

    /// Starts an emulator and returns once it is listening.
    ///
    /// ```swift
    /// let emulator = try StorageEmulator.start()
    /// print(emulator.baseURL)   // http://127.0.0.1:<port>
    /// ```
    ///
    /// - Parameter configuration: Address, storage, auth and faults.
    /// - Returns: The running emulator; call ``stop()`` when done.
    /// - Throws: ``EmulatorError`` for an invalid fault plan or storage directory, for a TLS certificate or
    ///   key that cannot be read or used, for a service account key that cannot be read, or when TLS (or
    ///   authentication) is asked for and OpenSSL 3 cannot be loaded (all
    ///   before listening); the server's error when the address cannot be bound.
    public static func start(_ configuration: Configuration = .init()) throws -> StorageEmulator {
        let tls = try configuration.tls.map { identity throws(EmulatorError) in try identity.makeContext() }
        let store: any ObjectStore
        var journal: SessionJournal?
        switch configuration.backing {
        case .memory:
            store = MemoryObjectStore()
        case .discard:
            store = DiscardObjectStore()
        case .directory(let url):
            do {
                let directoryStore = try DirectoryObjectStore(root: url)
                store = directoryStore
                journal = try SessionJournal(root: directoryStore.root)
            } catch {
                throw EmulatorError(description: "Cannot use the storage directory: \(error)")
            }
        }
        var settings = EmulatorApplication.Settings()
        settings.requiredToken = configuration.requiredToken
        settings.acceptsOwner = configuration.acceptsOwner
        settings.appCheckToken = configuration.appCheckToken
        settings.autoCreateBuckets = configuration.autoCreateBuckets
        settings.sessionLifetime = configuration.uploadSessionLifetime
        settings.maxSessions = configuration.maxUploadSessions
        settings.minimumPartSize = configuration.minimumMultipartPartSize
        settings.scheme = configuration.tls == nil ? "http" : "https"
        settings.authentication = try configuration.authentication.map { authentication throws(EmulatorError) in
            try AuthenticationService(authentication)
        }
        guard configuration.maxUploadSessions > 0, configuration.uploadSessionLifetime > .zero else {
            throw EmulatorError(description: "Upload sessions need a positive lifetime and maximum.")
        }
        let application: EmulatorApplication
        do {
            application = try EmulatorApplication(
                store: store, settings: settings, globalFaults: configuration.faults, journal: journal)
        } catch {
            throw EmulatorError(description: error.message)
        }
        let server = EmulatorHTTPServer(
            host: configuration.host, port: configuration.port, application: application, tls: tls,
            shape: configuration.networkShape)
        _ = try server.start()
        return StorageEmulator(
            application: application, server: server, host: configuration.host, scheme: tls == nil ? "http" : "https")
    }

    /// The port the emulator listens on.
    public var port: Int { server.port }

    /// `http://<host>:<port>` (`https://` with ``Configuration/tls``), the value for
    /// `STORAGE_EMULATOR_HOST` or the SDK's emulator endpoint.
    public var baseURL: URL {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return URL(string: "\(scheme)://\(hostPart):\(port)") ?? URL(fileURLWithPath: "/")
    }

    /// Creates a bucket (an existing one is fine).
    ///
    /// ```swift
    /// try emulator.createBucket("my-project.appspot.com")
    /// ```
    ///
    /// - Parameter name: A GCS bucket name.
    /// - Throws: ``EmulatorError`` for an invalid name or a storage failure.
    public func createBucket(_ name: String) throws {
        do {
            try application.createBucket(name)
        } catch {
            throw EmulatorError(description: error.description)
        }
    }

    /// Installs a fault plan that requests opt into with the header `x-emulator-faults: <id>`.
    ///
    /// Each request carrying the header consumes the plan's next instruction;
    /// once the plan is used up requests pass. The grammar:
    /// `pass`, `return-<status>`, `return-<status>-after-<N>`, `reset-after-<N>`,
    /// `stall-<ms>ms-after-<N>`, `stall-after-<N>`, `drop-response`, `hold-response`, where N is a
    /// byte count with an optional `K`/`M` (1024-based) suffix; or one
    /// `random:seed=<n>,rate=<0..1>`. For a media download N counts response body
    /// bytes: `reset-after-<N>` and the stalls act after sending N of them (see
    /// `FaultInstruction`).
    ///
    /// Stalls never race a time-out when used as meant: `stall-<ms>ms-after-<N>`
    /// is a short delay after which the request succeeds (keep `<ms>` orders of
    /// magnitude below the client's request time-out), while `stall-after-<N>`
    /// holds the connection until the client gives up and closes it (or the
    /// emulator stops), so the client's time-out is the only way forward.
    ///
    /// A plan lists at most 10,000 instructions (more is refused; over HTTP,
    /// `POST /_emulator/v1/faults` answers `413`, as it does for a body above
    /// 512 KiB). At most 256 plans are kept: installing another drops the
    /// oldest plan whose instructions are all used, or else the oldest plan
    /// (random plans never finish); a request naming a dropped plan gets `400`.
    ///
    /// ```swift
    /// let plan = try emulator.installFaultPlan(["return-503-after-512K", "pass"])
    /// // send requests with the header  x-emulator-faults: \(plan)
    /// ```
    ///
    /// - Parameter instructions: The plan, in order.
    /// - Returns: The plan's id.
    /// - Throws: ``EmulatorError`` naming the first invalid instruction.
    public func installFaultPlan(_ instructions: [String]) throws -> String {
        do {
            return try application.installFaultPlan(instructions)
        } catch {
            throw EmulatorError(description: error.message)
        }
    }

    /// Request body bytes received so far, over all requests (for `--discard` benchmarks).
    public var bytesReceived: Int64 { application.bytesReceived }

    /// XML API multipart uploads initiated and neither completed nor aborted: what a client that
    /// cancels or fails an upload must leave at zero.
    public var multipartUploadsInProgress: Int { application.multipartUploadsInProgress }

    /// Part bytes that multipart Completes copied, over all uploads: zero while every Complete
    /// names parts 1…k of equal length but the last, each sent once (for tests).
    package var multipartBytesCopied: Int64 { application.multipartBytesCopied }

    /// Requests received so far, over all connections (for tests that count a client's requests).
    package var requestsReceived: Int { application.requestsReceived }

    /// The waits the network model computed so far, over all connections (for tests; zero
    /// without ``Configuration/networkShape``).
    package var shapingTotals: ShapingCounters.Totals { server.shapingCounters.totals }

    /// Stops listening, closes every connection and cancels unfinished upload sessions; idempotent.
    ///
    /// With ``Configuration/Backing/directory(_:)`` unfinished resumable upload sessions are
    /// kept instead (in `<directory>/.upload-sessions/`), as they are when the process dies:
    /// an emulator started again on the directory resumes them, at the same URLs if it listens
    /// on the same port, until they expire.
    ///
    /// ```swift
    /// let emulator = try StorageEmulator.start()
    /// defer { emulator.stop() }
    /// ```
    public func stop() {
        server.stop()
        application.shutdown()
    }

    /// Stops listening and closes every connection, and nothing else: upload sessions are
    /// neither cancelled nor released, as when the process is killed. For tests of what
    /// survives a crash.
    func stopAbruptly() {
        server.stop()
    }
}
