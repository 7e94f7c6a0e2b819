import HTTPClient

extension StorageConfiguration {
    /// When connecting and requests time out. A request that times out
    /// counts as failed and is retried within its operation's retry time
    /// (``StorageConfiguration/retry``).
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// try configuration.timeouts.setRequest(.seconds(30))
    /// try configuration.timeouts.setConnect(.seconds(5))
    /// ```
    public struct Timeouts: Sendable, Hashable {
        /// How long a request may go without sending or receiving anything before
        /// it counts as failed (and is retried). Default 60 seconds. Set it with
        /// ``setRequest(_:)``.
        ///
        /// A request that moves no object bytes — reading or updating metadata,
        /// deleting, listing, starting or querying an upload, fetching an access
        /// token — must moreover be over within this time altogether, however
        /// steadily a slow server trickles its bytes; and once an operation has
        /// failed and is retrying, none of these requests, nor a wait for a token,
        /// goes on past the end of its retry time. Uploads' bodies and downloads
        /// are bounded by this time without progress only: their moving bytes are
        /// progress.
        ///
        /// On Linux, `URLSession` counts its time-outs in whole seconds, so
        /// requests it sends (``StorageTransportChoice/urlSession``, and
        /// `https://` where OpenSSL 3 cannot be loaded) wait this long rounded up
        /// to whole seconds.
        public private(set) var request: Duration = .seconds(60)

        /// The longest the SDK's own transport lets connecting and the TLS
        /// handshake take together, counted from the start of connecting (so a
        /// server that sends its handshake a byte at a time cannot stretch it),
        /// and never longer than ``request``. Default 30 seconds. `URLSession`
        /// uses its own. Set it with ``setConnect(_:)``.
        public private(set) var connect = NativeHTTPTransport.Configuration().connectTimeout

        /// Creates the default time-outs.
        public init() {}

        /// Sets ``request``.
        ///
        /// ```swift
        /// try configuration.timeouts.setRequest(.seconds(30))
        /// ```
        ///
        /// - Parameter timeout: A positive duration.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for zero or less;
        ///   ``request`` is then unchanged.
        public mutating func setRequest(_ timeout: Duration) throws(StorageError) {
            request = try checkedPositive(timeout, "timeouts.request")
        }

        /// Sets ``connect``.
        ///
        /// ```swift
        /// try configuration.timeouts.setConnect(.seconds(5))
        /// ```
        ///
        /// - Parameter timeout: A positive duration.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for zero or less;
        ///   ``connect`` is then unchanged.
        public mutating func setConnect(_ timeout: Duration) throws(StorageError) {
            connect = try checkedPositive(timeout, "timeouts.connect")
        }
    }
}
