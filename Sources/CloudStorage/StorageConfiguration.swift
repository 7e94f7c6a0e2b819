/// Settings for uploads: how they are split, retried and timed out.
///
/// ```swift
/// var configuration = StorageConfiguration()
/// configuration.chunkSize = 16 * 1024 * 1024      // at most 16 MiB per request
/// configuration.maxUploadRetryTime = .seconds(120)
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
    /// either way. Set a size to bound how much one failed request wastes.
    /// It must be a positive multiple of ``chunkGranularity``; an upload with
    /// any other value fails with ``StorageErrorCode/invalidArgument``.
    public var chunkSize: Int64? = nil

    /// How long an upload keeps retrying after failures that may pass (HTTP
    /// 408, 429, 5xx, broken connections, time-outs), counted from the first
    /// failure since the last progress. Default 600 seconds. When it runs
    /// out the upload fails with ``StorageErrorCode/retryLimitExceeded``
    /// (or ``StorageErrorCode/quotaExceeded`` if the server kept answering 429).
    public var maxUploadRetryTime: Duration = .seconds(600)

    /// The wait before the first retry; each later wait doubles, up to
    /// ``maxRetryDelay``, with up to 50% random jitter. Default 1 second.
    public var initialRetryDelay: Duration = .seconds(1)

    /// The longest wait between two retries. Default 32 seconds.
    public var maxRetryDelay: Duration = .seconds(32)

    /// How long a request may go without sending or receiving anything before
    /// it counts as failed (and is retried). Default 60 seconds.
    ///
    /// On Linux, `URLSession` counts its time-outs in whole seconds, so
    /// requests it sends (``StorageTransportChoice/urlSession``, and
    /// `https://` endpoints) wait this long rounded up to whole seconds.
    public var requestTimeout: Duration = .seconds(60)

    /// Whether uploads send a CRC32C of the object (so the server refuses
    /// corrupted bytes) and compare it with the checksum the server reports.
    /// Default true.
    public var verifiesChecksums = true

    /// Which HTTP implementation carries the requests. Default
    /// ``StorageTransportChoice/automatic``: the SDK's own HTTP/1.1 transport
    /// for `http://` URLs (emulators), `URLSession` for `https://`.
    public var transport: StorageTransportChoice = .automatic

    /// Creates the default configuration.
    public init() {}
}
