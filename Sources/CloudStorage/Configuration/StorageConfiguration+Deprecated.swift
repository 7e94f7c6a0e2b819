// The flat names of earlier releases, forwarding to the groups.
//
// Their setters cannot throw, so a value the group's setter refuses (which never had a use:
// a negative retry time or time-out) is clamped to the nearest value it allows instead:
// zero for retry times, the shortest positive duration for delays and time-outs. That keeps
// what such a value did before (no retry; an immediate time-out or retry).
extension StorageConfiguration {
    /// The unit in which resumable uploads must send every request but the last: 256 KiB.
    @available(*, deprecated, renamed: "Uploads.chunkGranularity")
    public static var chunkGranularity: Int64 { Uploads.chunkGranularity }

    /// Uploads of at most this many bytes go as one multipart request.
    @available(*, deprecated, renamed: "uploads.multipartThreshold")
    public var multipartUploadThreshold: Int64 {
        get { uploads.multipartThreshold }
        set { uploads.multipartThreshold = newValue }
    }

    /// The most bytes one request of a resumable upload carries, or nil for no bound.
    @available(*, deprecated, renamed: "uploads.chunkSize")
    public var chunkSize: Int64? { uploads.chunkSize }

    /// Sets the chunk size of resumable uploads.
    ///
    /// - Parameter size: A positive multiple of 256 KiB, or nil for no bound.
    /// - Throws: ``StorageErrorCode/invalidArgument`` for any other size.
    @available(*, deprecated, renamed: "uploads.setChunkSize(_:)")
    public mutating func setChunkSize(_ size: Int64?) throws(StorageError) {
        try uploads.setChunkSize(size)
    }

    /// How long an upload keeps retrying; a negative time is taken as zero.
    @available(*, deprecated, message: "Use retry.maxUploadTime, set with retry.setMaxUploadTime(_:)")
    public var maxUploadRetryTime: Duration {
        get { retry.maxUploadTime }
        set { try? retry.setMaxUploadTime(max(newValue, .zero)) }
    }

    /// How long a download keeps retrying; a negative time is taken as zero.
    @available(*, deprecated, message: "Use retry.maxDownloadTime, set with retry.setMaxDownloadTime(_:)")
    public var maxDownloadRetryTime: Duration {
        get { retry.maxDownloadTime }
        set { try? retry.setMaxDownloadTime(max(newValue, .zero)) }
    }

    /// How long other operations keep retrying; a negative time is taken as zero.
    @available(*, deprecated, message: "Use retry.maxOperationTime, set with retry.setMaxOperationTime(_:)")
    public var maxOperationRetryTime: Duration {
        get { retry.maxOperationTime }
        set { try? retry.setMaxOperationTime(max(newValue, .zero)) }
    }

    /// The wait before the first retry; zero or less is taken as the shortest positive wait.
    @available(*, deprecated, message: "Use retry.initialDelay, set with retry.setInitialDelay(_:)")
    public var initialRetryDelay: Duration {
        get { retry.initialDelay }
        set { try? retry.setInitialDelay(max(newValue, Self.shortestPositive)) }
    }

    /// The longest wait between two retries; zero or less is taken as the shortest positive wait.
    @available(*, deprecated, message: "Use retry.maxDelay, set with retry.setMaxDelay(_:)")
    public var maxRetryDelay: Duration {
        get { retry.maxDelay }
        set { try? retry.setMaxDelay(max(newValue, Self.shortestPositive)) }
    }

    /// How long a request may go without progress; zero or less is taken as the shortest
    /// positive time-out.
    @available(*, deprecated, message: "Use timeouts.request, set with timeouts.setRequest(_:)")
    public var requestTimeout: Duration {
        get { timeouts.request }
        set { try? timeouts.setRequest(max(newValue, Self.shortestPositive)) }
    }

    /// The most requests the SDK's own transport has in flight to one `host:port`.
    @available(*, deprecated, renamed: "connectionPool.maxConnectionsPerHost")
    public var maxConnectionsPerHost: Int { connectionPool.maxConnectionsPerHost }

    /// The range the connection limit per host may take.
    @available(*, deprecated, renamed: "ConnectionPool.maxConnectionsPerHostRange")
    public static var maxConnectionsPerHostRange: ClosedRange<Int> { ConnectionPool.maxConnectionsPerHostRange }

    /// Sets the most requests in flight per `host:port`.
    ///
    /// - Parameter limit: Between 1 and 1024.
    /// - Throws: ``StorageErrorCode/invalidArgument`` for any other limit.
    @available(*, deprecated, renamed: "connectionPool.setMaxConnectionsPerHost(_:)")
    public mutating func setMaxConnectionsPerHost(_ limit: Int) throws(StorageError) {
        try connectionPool.setMaxConnectionsPerHost(limit)
    }

    /// Private CA certificates the SDK's own transport trusts besides the system store.
    @available(*, deprecated, renamed: "tls.additionalTrustRoots")
    public var additionalTrustRoots: [TrustRoot] {
        get { tls.additionalTrustRoots }
        set { tls.additionalTrustRoots = newValue }
    }

    /// What the deprecated setters store for a delay or time-out of zero or less.
    private static let shortestPositive = Duration.nanoseconds(1)
}
