import Foundation
import HTTPClient

/// A long-lived client of one endpoint: it owns the connection pool and the credentials (with
/// their token cache), is shared by every part of an application that talks to that endpoint,
/// and shuts down explicitly. It hands out bucket handles (``Storage``), which hand out object
/// references (``StorageReference``) — the shape of Google's libraries (`Client` → bucket →
/// object), around the Firebase-shaped handles.
///
/// ```swift
/// let client = StorageClient(authorization: .applicationDefault)
/// defer { client.shutdown() }
/// let uploads = client.bucket("uploads")
/// let archive = client.bucket("archive")  // the same connections and token cache
/// let report = uploads.reference(withPath: "2024/report.pdf")
/// _ = try await report.copy(to: archive.reference(withPath: "2024/report.pdf"))
/// ```
///
/// A value: copies share the pool and the credentials. ``with(_:)`` makes a client whose calls
/// send more options, over the same pool.
public struct StorageClient: Sendable {
    /// Where requests go and which protocol they speak.
    public let endpoint: StorageEndpoint
    /// The credentials sent with requests.
    public let authorization: StorageAuthorization
    /// Settings for every operation: uploads, retries, time-outs, connections, TLS.
    public let configuration: StorageConfiguration
    /// What every call sends: user project, encryption key, extra headers and the like (see
    /// ``with(_:)``). Its retry rules and time-outs are already in ``configuration``.
    public let options: StorageRequestOptions
    /// The connection pool (the HTTP transport ``StorageConfiguration/transport`` chose).
    let transport: any HTTPTransport
    /// Where IAM `signBlob` calls go when a signed URL is signed by the metadata server's
    /// account: Google's IAM Credentials API, or an emulator a test injects through the
    /// internal initializer (it is no setting, so it has no place in ``configuration``).
    let iamCredentialsBaseURL: URL

    /// Creates a client with a connection pool of its own.
    ///
    /// - Parameters:
    ///   - endpoint: Where the buckets are served; Google Cloud Storage by default.
    ///   - authorization: The credentials to send; none by default.
    ///   - configuration: Settings for every operation, including which HTTP transport carries
    ///     the requests (``StorageConfiguration/transport``).
    public init(
        endpoint: StorageEndpoint = .googleCloudStorage,
        authorization: StorageAuthorization = .none,
        configuration: StorageConfiguration = .init()
    ) {
        self.init(
            endpoint: endpoint, authorization: authorization, configuration: configuration,
            transport: configuration.transport.transport(for: endpoint, configuration: configuration))
    }

    init(
        endpoint: StorageEndpoint,
        authorization: StorageAuthorization,
        configuration: StorageConfiguration,
        transport: any HTTPTransport,
        iamCredentialsBaseURL: URL = Storage.defaultIAMCredentialsBaseURL,
        options: StorageRequestOptions = .init()
    ) {
        self.endpoint = endpoint
        self.authorization = authorization
        self.configuration = configuration
        self.transport = transport
        self.iamCredentialsBaseURL = iamCredentialsBaseURL
        self.options = options
    }

    /// A handle for one bucket of this client's endpoint, sharing its connections, credentials,
    /// settings and options. It checks nothing; see ``Storage/validateBucketName(_:)``.
    ///
    /// - Parameter name: The bucket's name, without `gs://`.
    /// - Returns: The bucket's handle.
    public func bucket(_ name: String) -> Storage {
        Storage(client: self, bucket: name)
    }

    /// This client with `options` merged into its own (``StorageRequestOptions/merging(_:)``):
    /// every call of its buckets' references sends them, over the same connections.
    /// ``StorageRequestOptions/retry``, ``StorageRequestOptions/timeouts``,
    /// ``StorageRequestOptions/chunkSize`` and ``StorageRequestOptions/decompressesDownloads``
    /// replace those of the copy's ``configuration``, where the engines read them.
    ///
    /// - Parameter options: The options that win over this client's.
    /// - Returns: A client like this one that sends the merged options.
    public func with(_ options: StorageRequestOptions) -> StorageClient {
        let merged = self.options.merging(options)
        var configuration = self.configuration
        if let retry = merged.retry { configuration.retry = retry }
        if let timeouts = merged.timeouts { configuration.timeouts = timeouts }
        if let decompresses = merged.decompressesDownloads { configuration.decompressesDownloads = decompresses }
        // A size the protocols refuse stays in the options, which refuse every call (`validate`).
        if let chunkSize = merged.chunkSize { try? configuration.uploads.setChunkSize(chunkSize) }
        return StorageClient(
            endpoint: endpoint, authorization: authorization, configuration: configuration, transport: transport,
            iamCredentialsBaseURL: iamCredentialsBaseURL, options: merged)
    }

    /// Closes the connections of this client, and refuses every request of its buckets that is
    /// not yet sent, as ``Storage/shutdown()`` describes: the pool belongs to the client and to
    /// every client and handle made from it.
    public func shutdown() {
        transport.shutdown()
    }
}

extension StorageClient: CustomReflectable {
    /// What `dump` and debuggers show of a client: its endpoint, credentials, settings and
    /// options (the credentials and options as their own redacted mirrors), and the transport by
    /// its type only. The transport's live state (connections, I/O threads, locks) is never
    /// walked: reading it unlocked while its threads change it would be a data race.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "endpoint": endpoint as Any, "authorization": authorization, "configuration": configuration,
                "options": options, "transport": "\(type(of: transport))",
            ],
            displayStyle: .struct)
    }
}
