import Foundation
import HTTPClient

/// A handle for one bucket on one endpoint: the starting point for references.
///
/// `Storage` is a small value; create it once and share it freely across
/// tasks. It hands out ``StorageReference`` values, which name objects and
/// upload to them.
///
/// ```swift
/// let storage = Storage(bucket: "my-app.appspot.com")
/// let spaceRef = storage.reference(withPath: "images/space.jpg")
/// let metadata = try await spaceRef.putDataAsync(imageData)
/// ```
public struct Storage: Sendable {
    /// Google's IAM Credentials API, where signed URLs without a private key get their signature.
    static let defaultIAMCredentialsBaseURL = URL(string: "https://iamcredentials.googleapis.com")!

    /// The client this handle belongs to: the endpoint, credentials, settings, options and
    /// connection pool it shares with every handle made from the same client.
    public let client: StorageClient
    /// The bucket every reference from this handle lives in.
    public let bucket: String
    /// Where requests go and which protocol they speak.
    public var endpoint: StorageEndpoint { client.endpoint }
    /// The credentials sent with requests.
    public var authorization: StorageAuthorization { client.authorization }
    /// Settings for every operation: uploads, retries, time-outs, connections, TLS.
    public var configuration: StorageConfiguration { client.configuration }
    /// What every call of this handle's references sends: user project, encryption key, extra
    /// headers and the like (see ``with(_:)``). Its retry rules and time-outs are already in
    /// ``configuration``.
    public var options: StorageRequestOptions { client.options }
    var transport: any HTTPTransport { client.transport }
    /// Where IAM `signBlob` calls go when a signed URL is signed by the metadata server's
    /// account (see ``StorageClient``).
    var iamCredentialsBaseURL: URL { client.iamCredentialsBaseURL }

    /// Creates a handle for a bucket, with a client of its own
    /// (``StorageClient/init(endpoint:authorization:configuration:)``): a connection pool and
    /// credentials that only this handle and those made from it share. Where an application
    /// uses several buckets, make one ``StorageClient`` and take each bucket from it.
    ///
    /// - Parameters:
    ///   - bucket: The bucket name, without `gs://`.
    ///   - endpoint: Where the bucket is served; Google Cloud Storage by default.
    ///   - authorization: The credentials to send; none by default.
    ///   - configuration: Settings for every operation (chunking, retry times, time-outs), including which HTTP transport
    ///     carries the requests (``StorageConfiguration/transport``).
    public init(
        bucket: String,
        endpoint: StorageEndpoint = .googleCloudStorage,
        authorization: StorageAuthorization = .none,
        configuration: StorageConfiguration = .init()
    ) {
        self.init(
            client: StorageClient(endpoint: endpoint, authorization: authorization, configuration: configuration),
            bucket: bucket)
    }

    init(
        bucket: String,
        endpoint: StorageEndpoint,
        authorization: StorageAuthorization,
        configuration: StorageConfiguration,
        transport: any HTTPTransport,
        iamCredentialsBaseURL: URL = Storage.defaultIAMCredentialsBaseURL,
        options: StorageRequestOptions = .init()
    ) {
        self.init(
            client: StorageClient(
                endpoint: endpoint, authorization: authorization, configuration: configuration, transport: transport,
                iamCredentialsBaseURL: iamCredentialsBaseURL, options: options),
            bucket: bucket)
    }

    /// A handle for `bucket` of `client`.
    init(client: StorageClient, bucket: String) {
        self.client = client
        self.bucket = bucket
    }

    /// A handle for another bucket on the same endpoint, with the same credentials, settings and options.
    ///
    /// The two handles share everything below the bucket: the connection pool (the HTTP
    /// transport), and the credentials with their token cache, so a token fetched for one is
    /// used by the other and a server that serves several buckets is reached over the same
    /// connections. References from both can be copied and moved into each other
    /// (``StorageReference/copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)``).
    /// Like ``init(bucket:endpoint:authorization:configuration:)`` it checks nothing; see
    /// ``validateBucketName(_:)``.
    ///
    /// ```swift
    /// let uploads = Storage(bucket: "uploads", authorization: .applicationDefault)
    /// let archive = uploads.bucket("archive")
    /// let report = uploads.reference(withPath: "2024/report.pdf")
    /// _ = try await report.copy(to: archive.reference(withPath: "2024/report.pdf"))
    /// ```
    ///
    /// - Parameter name: The other bucket's name, without `gs://`.
    /// - Returns: A handle for that bucket; this one is unchanged.
    public func bucket(_ name: String) -> Storage {
        client.bucket(name)
    }

    /// Closes the connections this handle keeps, and refuses every request it has not yet sent.
    ///
    /// The connection pool belongs to this handle and to every handle made from it
    /// (``bucket(_:)``, ``with(_:)``), so all of them are shut down together; handles made
    /// with their own ``init(bucket:endpoint:authorization:configuration:)`` are not. A request
    /// already on a connection runs to its end and its connection closes after it; any other,
    /// including a retry or the next request of a running upload, fails with
    /// ``StorageErrorCode/cancelled`` before a byte is sent. Call it when the application stops
    /// (a server's shutdown hook, the end of a test), so that no socket or idle connection
    /// outlives the code that used it. Calling it again does nothing; a handle cannot be
    /// started again.
    ///
    /// A ``Storage`` that carries requests with `URLSession` (``StorageConfiguration/transport``)
    /// uses the process's shared session, which it never closes: there shutting down refuses
    /// nothing.
    ///
    /// ```swift
    /// let storage = Storage(bucket: "uploads", authorization: .applicationDefault)
    /// defer { storage.shutdown() }
    /// let bytes = try await storage.reference(withPath: "hello.txt").data(maxSize: 1 << 20)
    /// ```
    public func shutdown() {
        client.shutdown()
    }
}

extension Storage: CustomReflectable {
    /// What `dump` and debuggers show of a handle: its bucket, endpoint, credentials, settings and
    /// options (the credentials and options as their own redacted mirrors), and the transport by
    /// its type only. The transport's live state (connections, I/O threads, locks) is never
    /// walked: reading it unlocked while its threads change it would be a data race.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "bucket": bucket as Any, "client": client,
            ],
            displayStyle: .struct)
    }
}
