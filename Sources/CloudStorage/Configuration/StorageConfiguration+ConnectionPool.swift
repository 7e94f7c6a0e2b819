import HTTPClient

extension StorageConfiguration {
    /// How many connections the SDK's own HTTP/1.1 transport keeps to each
    /// server, and for how long. Requests `URLSession` carries follow its own
    /// limits.
    ///
    /// The pool belongs to the ``Storage`` created with this configuration:
    /// each such `Storage` has its own connections (its copies, and the handles
    /// ``Storage/bucket(_:)`` makes, share them), so create one and share it
    /// rather than one per operation.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// try configuration.connectionPool.setMaxConnectionsPerHost(8)  // at most 8 requests in flight per server
    /// try configuration.connectionPool.setIdleTimeout(.seconds(10))
    /// ```
    public struct ConnectionPool: Sendable, Hashable {
        /// The range ``maxConnectionsPerHost`` may take: every connection in
        /// flight also holds a thread of the native transport.
        public static let maxConnectionsPerHostRange: ClosedRange<Int> = 1...1024

        /// The most requests in flight to one `host:port` at once, each on a
        /// kept-alive connection of its own. Default 32. Set it with
        /// ``setMaxConnectionsPerHost(_:)``.
        ///
        /// Further requests wait their turn (cancellable, without holding a
        /// thread), so a burst of thousands of uploads reuses a few warm
        /// connections instead of opening one each, which a server would refuse
        /// beyond its own limit.
        public private(set) var maxConnectionsPerHost = NativeHTTPTransport.Configuration().maxConnectionsPerHost

        /// How long a connection may wait unused in the pool before it is
        /// closed rather than reused. Default 30 seconds. Set it with
        /// ``setIdleTimeout(_:)``.
        ///
        /// Servers and load balancers close idle connections after their own
        /// time; one closed under the pool costs a failed first attempt on it
        /// (resent at once when the request is safe to send twice).
        public private(set) var idleTimeout = NativeHTTPTransport.Configuration().maxIdleTime

        /// Creates the default pool settings.
        public init() {}

        /// Sets ``maxConnectionsPerHost``, refusing a limit outside
        /// ``maxConnectionsPerHostRange``.
        ///
        /// ```swift
        /// var configuration = StorageConfiguration()
        /// try configuration.connectionPool.setMaxConnectionsPerHost(8)
        /// let storage = Storage.gcsEmulator(bucket: "b", baseURL: emulatorURL, configuration: configuration)
        /// ```
        ///
        /// - Parameter limit: Between 1 and 1024 requests in flight per `host:port`.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for any other limit;
        ///   ``maxConnectionsPerHost`` is then unchanged.
        public mutating func setMaxConnectionsPerHost(_ limit: Int) throws(StorageError) {
            guard Self.maxConnectionsPerHostRange.contains(limit) else {
                throw .invalidSetting("connectionPool.maxConnectionsPerHost", must: "between 1 and 1024", is: limit)
            }
            maxConnectionsPerHost = limit
        }

        /// Sets ``idleTimeout``.
        ///
        /// ```swift
        /// try configuration.connectionPool.setIdleTimeout(.seconds(10))
        /// ```
        ///
        /// - Parameter timeout: A positive duration.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for zero or less;
        ///   ``idleTimeout`` is then unchanged.
        public mutating func setIdleTimeout(_ timeout: Duration) throws(StorageError) {
            idleTimeout = try checkedPositive(timeout, "connectionPool.idleTimeout")
        }
    }
}
