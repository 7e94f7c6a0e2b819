/// Settings for every operation of a ``Storage``, in groups: how uploads are
/// split (``uploads``), how long each kind of operation keeps retrying
/// (``retry``), when a request times out (``timeouts``), how connections are
/// kept (``connectionPool``) and whom TLS trusts (``tls``).
///
/// Each default is written once, in its group, and the SDK's own HTTP transport
/// takes its settings from this value, so what you read here is what runs.
///
/// ## Validation
///
/// A value that can be wrong is checked where it is set: such a property is
/// read-only, and a throwing `set…` method of its group sets it, throwing
/// ``StorageErrorCode/invalidArgument`` (with the allowed range) and leaving
/// the setting unchanged when the value is refused. A configuration therefore
/// never holds a value that would fail later, when an operation runs. Settings
/// that cannot be wrong (``verifiesChecksums``, ``transport``,
/// ``Uploads/multipartThreshold``, ``TLS/additionalTrustRoots``) are plain
/// properties.
///
/// ```swift
/// var configuration = StorageConfiguration()
/// try configuration.uploads.setChunkSize(16 * 1024 * 1024)  // at most 16 MiB per request
/// try configuration.retry.setMaxUploadTime(.seconds(120))
/// try configuration.retry.setMaxOperationTime(.seconds(30))  // metadata, delete, list
/// try configuration.timeouts.setRequest(.seconds(30))
/// try configuration.connectionPool.setMaxConnectionsPerHost(8)
/// let storage = Storage(bucket: "my-bucket", configuration: configuration)
/// ```
public struct StorageConfiguration: Sendable, Hashable {
    /// How uploads are split into requests.
    public var uploads = Uploads()

    /// When file downloads are cut into slices that download in parallel.
    public var downloads = Downloads()

    /// How long uploads, downloads and other operations keep retrying, and
    /// how long they wait between attempts.
    public var retry = Retry()

    /// When connecting and requests time out.
    public var timeouts = Timeouts()

    /// How many connections the SDK's own transport keeps to each server, and
    /// for how long.
    public var connectionPool = ConnectionPool()

    /// Whom the SDK's own transport trusts for `https://` servers.
    public var tls = TLS()

    /// Whether uploads send a CRC32C of the object (so the server refuses
    /// corrupted bytes) and compare it with the checksum the server reports.
    /// Default true.
    public var verifiesChecksums = true

    /// Whether a download of an object stored gzip-compressed (`Content-Encoding: gzip`, as
    /// `gcloud storage cp -Z` stores it) delivers the original bytes, decompressed by the SDK.
    /// Default true; false delivers the stored, compressed bytes.
    ///
    /// Either way the SDK asks for the stored bytes (`Accept-Encoding: gzip`) and checks them
    /// against the object's CRC32C, so the check covers every byte from the server, and a
    /// broken connection resumes with a `Range` over them. A server that decompresses anyway
    /// (or `URLSession`, which decodes gzip itself) is handled: the decompressed bytes cannot be
    /// checked, and a resumption reads them again from the start, skipping what arrived; with
    /// this setting false such a download fails with ``StorageErrorCode/protocolViolation``,
    /// since the stored bytes cannot be had. A ranged download addresses, and delivers, the
    /// stored bytes whatever this says.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// configuration.decompressesDownloads = false  // archive the .gz bytes as stored
    /// let raw = Storage(bucket: "my-bucket", configuration: configuration)
    /// ```
    public var decompressesDownloads = true

    /// Which HTTP implementation carries the requests. Default
    /// ``StorageTransportChoice/automatic``: the SDK's own HTTP/1.1 transport
    /// for `http://` URLs and, on Linux where the system's OpenSSL 3 loads,
    /// for `https://` too; `URLSession` for `https://` elsewhere (Apple
    /// platforms, or Linux without OpenSSL 3).
    public var transport: StorageTransportChoice = .automatic

    /// How requests name this SDK and your application (`User-Agent`, `x-goog-api-client`).
    public var identification = Identification()

    /// Where the SDK reports what it does (requests, retries, sessions, tokens, checksums);
    /// nowhere by default.
    public var events = Events()

    /// Creates the default configuration.
    public init() {}
}

extension StorageError {
    /// The error a configuration setter throws for a value outside what the
    /// setting allows.
    ///
    /// - Parameters:
    ///   - setting: The setting's path from ``StorageConfiguration``, such as `retry.maxUploadTime`.
    ///   - allowed: What it may be, such as `zero or more`.
    ///   - value: The value refused.
    static func invalidSetting(_ setting: String, must allowed: String, is value: Any) -> StorageError {
        .invalidArgument("\(setting) must be \(allowed); it is \(value).")
    }
}
