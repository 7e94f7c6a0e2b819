public import Foundation

/// Settings for every operation of a ``Storage``: how uploads are split, how
/// long uploads, downloads and the other operations (metadata, delete, list,
/// download URLs) keep retrying, and when a request times out.
///
/// ```swift
/// var configuration = StorageConfiguration()
/// try configuration.setChunkSize(16 * 1024 * 1024)  // at most 16 MiB per request
/// configuration.maxUploadRetryTime = .seconds(120)
/// configuration.maxOperationRetryTime = .seconds(30)  // metadata, delete, list
/// let storage = Storage(bucket: "my-bucket", configuration: configuration)
/// ```
public struct StorageConfiguration: Sendable, Hashable {
    /// The unit in which resumable uploads must send every request but the
    /// last: 256 KiB.
    public static let chunkGranularity: Int64 = 256 * 1024

    /// Uploads of at most this many bytes go as one multipart request; larger
    /// ones open a resumable session. Default 8 MiB.
    public var multipartUploadThreshold: Int64 = 8 * 1024 * 1024

    /// The most bytes one request of a resumable upload carries, or nil
    /// (the default) to send everything that remains in one request.
    ///
    /// One request is fastest: every chunk boundary costs a round trip. Files
    /// and `Data` can be re-read from any offset, so after a failure or a
    /// pause the upload asks the server what it has and continues from there
    /// either way. Set a size, with ``setChunkSize(_:)``, to bound how much
    /// one failed request wastes.
    public private(set) var chunkSize: Int64? = nil

    /// Sets ``chunkSize``, refusing a size the protocols do not allow.
    ///
    /// Every request of a resumable upload but the last must carry a
    /// multiple of ``chunkGranularity`` (256 KiB), so a size is checked
    /// here, where it is chosen, rather than when an upload runs.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// try configuration.setChunkSize(16 * 1024 * 1024)  // 16 MiB per request
    /// try configuration.setChunkSize(nil)               // back to one request
    /// ```
    ///
    /// - Parameter size: A positive multiple of ``chunkGranularity``, or nil
    ///   for no bound.
    /// - Throws: ``StorageErrorCode/invalidArgument`` for any other size;
    ///   ``chunkSize`` is then unchanged.
    public mutating func setChunkSize(_ size: Int64?) throws(StorageError) {
        if let size, size <= 0 || size % Self.chunkGranularity != 0 {
            throw .invalidArgument("chunkSize must be a positive multiple of 256 KiB (262144 bytes); it is \(size).")
        }
        chunkSize = size
    }

    /// How long an upload keeps retrying after failures that may pass (HTTP
    /// 408, 429, 5xx, broken connections, time-outs, malformed answers).
    /// Default 600 seconds, as in the Firebase SDKs.
    ///
    /// It is a deadline, not an allowance per retry: the clock starts at the
    /// first such failure, and no retry begins whose wait would end more than
    /// this long after it. Only progress resets the clock — the server's
    /// committed offset reaching a new high in this run of the upload
    /// (offsets it reports again, or reaches again in a new session after it
    /// forgot one, do not); the next failure then starts it again. Resuming a
    /// paused upload starts afresh. When it runs out the upload fails with
    /// ``StorageErrorCode/retryLimitExceeded`` (or
    /// ``StorageErrorCode/quotaExceeded`` if the server kept answering 429,
    /// ``StorageErrorCode/protocolViolation`` if it kept answering malformed).
    /// Zero allows no retry. The same rules hold for ``maxDownloadRetryTime``
    /// and ``maxOperationRetryTime``.
    public var maxUploadRetryTime: Duration = .seconds(600)

    /// How long a download (``StorageReference/getData(maxSize:preconditions:)``,
    /// ``StorageReference/write(toFile:preconditions:)``) keeps retrying after failures that
    /// may pass, resuming from the bytes it has. Default 600 seconds, as in
    /// the Firebase SDKs. A deadline like ``maxUploadRetryTime``: the clock
    /// starts at the first failure, and only a failed request that still
    /// received bytes beyond any received before resets it.
    public var maxDownloadRetryTime: Duration = .seconds(600)

    /// How long every other operation — reading and updating metadata,
    /// deleting, listing, getting download URLs — keeps retrying after failures
    /// that may pass. Default 120 seconds, as in the Firebase SDKs. The clock
    /// starts at the operation's first failure and is never reset.
    public var maxOperationRetryTime: Duration = .seconds(120)

    /// The wait before the first retry; each later wait doubles, up to
    /// ``maxRetryDelay``, with up to 50% random jitter. Default 1 second.
    public var initialRetryDelay: Duration = .seconds(1)

    /// The longest wait between two retries. Default 32 seconds.
    public var maxRetryDelay: Duration = .seconds(32)

    /// How long a request may go without sending or receiving anything before
    /// it counts as failed (and is retried). Default 60 seconds.
    ///
    /// A request that moves no object bytes — reading or updating metadata,
    /// deleting, listing, starting or querying an upload, fetching an access
    /// token — must moreover be over within this time altogether, however
    /// steadily a slow server trickles its bytes; and once an operation has
    /// failed and is retrying, none of these requests, nor a wait for a token,
    /// goes on past the end of its retry time (``maxUploadRetryTime``,
    /// ``maxDownloadRetryTime``, ``maxOperationRetryTime``). Uploads' bodies and
    /// downloads are bounded by this time without progress only: their moving
    /// bytes are progress. The SDK's own transport also lets connecting and the
    /// TLS handshake take at most this long (and at most 30 seconds) together.
    ///
    /// On Linux, `URLSession` counts its time-outs in whole seconds, so
    /// requests it sends (``StorageTransportChoice/urlSession``, and
    /// `https://` where OpenSSL 3 cannot be loaded) wait this long rounded up
    /// to whole seconds.
    public var requestTimeout: Duration = .seconds(60)

    /// Whether uploads send a CRC32C of the object (so the server refuses
    /// corrupted bytes) and compare it with the checksum the server reports.
    /// Default true.
    public var verifiesChecksums = true

    /// Which HTTP implementation carries the requests. Default
    /// ``StorageTransportChoice/automatic``: the SDK's own HTTP/1.1 transport
    /// for `http://` URLs and, on Linux where the system's OpenSSL 3 loads,
    /// for `https://` too; `URLSession` for `https://` elsewhere (Apple
    /// platforms, or Linux without OpenSSL 3).
    public var transport: StorageTransportChoice = .automatic

    /// The most requests the SDK's own HTTP/1.1 transport has in flight to
    /// one `host:port` at once, each on a kept-alive connection of its own.
    /// Default 32.
    ///
    /// Further requests wait their turn (cancellable, without holding a
    /// thread), so a burst of thousands of uploads reuses a few warm
    /// connections instead of opening one each, which a server would refuse
    /// beyond its own limit. The limit belongs to the ``Storage`` created with
    /// this configuration: each such `Storage` has its own connections (its
    /// copies share them), so create one and share it rather than one per
    /// operation. Requests `URLSession` carries follow its own limits. Set it
    /// with ``setMaxConnectionsPerHost(_:)``.
    public private(set) var maxConnectionsPerHost = 32

    /// The range ``maxConnectionsPerHost`` may take: every connection in
    /// flight also holds a thread of the native transport.
    public static let maxConnectionsPerHostRange: ClosedRange<Int> = 1...1024

    /// Sets ``maxConnectionsPerHost``, refusing a limit outside
    /// ``maxConnectionsPerHostRange``.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// try configuration.setMaxConnectionsPerHost(8)  // at most 8 requests in flight per server
    /// let storage = Storage.gcsEmulator(bucket: "b", baseURL: emulatorURL, configuration: configuration)
    /// ```
    ///
    /// - Parameter limit: Between 1 and 1024 requests in flight per `host:port`.
    /// - Throws: ``StorageErrorCode/invalidArgument`` for any other limit;
    ///   ``maxConnectionsPerHost`` is then unchanged.
    public mutating func setMaxConnectionsPerHost(_ limit: Int) throws(StorageError) {
        guard Self.maxConnectionsPerHostRange.contains(limit) else {
            throw .invalidArgument("maxConnectionsPerHost must be between 1 and 1024; it is \(limit).")
        }
        maxConnectionsPerHost = limit
    }

    /// Certificates of private certificate authorities that the SDK's own
    /// transport trusts for `https://` servers, in addition to the system's
    /// trust store (OpenSSL's default locations, which honour `SSL_CERT_FILE`
    /// and `SSL_CERT_DIR`). Empty by default.
    ///
    /// Verification itself is never relaxed: the chain must lead to a trusted
    /// root, and the certificate must name the host and be within its
    /// validity dates. A root that cannot be used (an unreadable file, no
    /// certificate in it) fails each `https://` request with
    /// ``StorageErrorCode/tlsFailure``, naming the problem.
    ///
    /// Used by the native transport, which carries `https://` on Linux by
    /// default (``StorageTransportChoice/automatic``) and with
    /// ``StorageTransportChoice/native``. `URLSession` on Linux cannot use
    /// them: it trusts the system store only, so with
    /// ``StorageTransportChoice/urlSession`` (or where OpenSSL 3 cannot be
    /// loaded) a server signed by a private CA fails with
    /// ``StorageErrorCode/tlsFailure`` as untrusted.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// configuration.additionalTrustRoots = [.file(URL(fileURLWithPath: "/etc/my-company/ca.pem"))]
    /// ```
    public var additionalTrustRoots: [TrustRoot] = []

    /// Where IAM `signBlob` calls go when a signed URL is signed by the metadata server's
    /// account (Google's IAM Credentials API; tests point it at the emulator).
    var iamCredentialsBaseURL = SignedURLSigner.defaultIAMBaseURL

    /// Creates the default configuration.
    public init() {}
}

extension StorageConfiguration {
    /// One or more PEM-encoded CA certificates to trust, given as bytes or as a file.
    ///
    /// ```swift
    /// let fromFile = StorageConfiguration.TrustRoot.file(URL(fileURLWithPath: "/etc/my-company/ca.pem"))
    /// let inline = try StorageConfiguration.TrustRoot.pem(Data(pemText.utf8))
    /// ```
    public struct TrustRoot: Sendable, Hashable {
        enum Source: Sendable, Hashable {
            case bytes([UInt8])
            case file(String)
        }

        let source: Source

        /// Certificates in PEM text (`-----BEGIN CERTIFICATE-----` blocks), checked here for
        /// at least one such block; OpenSSL parses them when the first `https://` request
        /// needs them.
        ///
        /// - Parameter pem: The PEM text.
        /// - Throws: ``StorageErrorCode/invalidArgument`` when `pem` holds no certificate block.
        public static func pem(_ pem: Data) throws(StorageError) -> TrustRoot {
            let bytes = [UInt8](pem)
            let marker = Array("-----BEGIN CERTIFICATE-----".utf8)
            guard bytes.count >= marker.count,
                (0...(bytes.count - marker.count)).contains(where: {
                    bytes[$0..<($0 + marker.count)].elementsEqual(marker)
                })
            else {
                throw .invalidArgument(
                    "A trust root must hold at least one PEM certificate (-----BEGIN CERTIFICATE-----).")
            }
            return TrustRoot(source: .bytes(bytes))
        }

        /// A PEM file of certificates, read when the first `https://` request needs it.
        ///
        /// - Parameter url: A `file:` URL.
        public static func file(_ url: URL) -> TrustRoot {
            TrustRoot(source: .file(url.path))
        }
    }
}
