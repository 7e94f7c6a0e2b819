package import HTTP1

extension EmulatorHTTPServer {
    /// Bounds on what one peer can make the server hold, and for how long.
    package struct Limits: Sendable {
        /// Open connections (one thread each). When all are open, a new connection evicts the one
        /// that has waited longest for its peer (for a request head, idle between requests or with
        /// a head still arriving, or for the next bytes of a request body), so that clients that
        /// trickle heads or bodies, or hold idle connections, cannot starve others; the evicted
        /// one is answered `503` with `Retry-After: 1` unless it was idle. Only when no
        /// connection waits for its peer (every one is being worked on) does a new one get that
        /// `503` and an immediate close, a retryable answer instead of a stall.
        package var maxConnections = 256
        /// How long a kept-alive connection may wait for the first byte of its next request.
        package var idleTimeout: Duration = .seconds(60)
        /// How long any single read may wait while a head or body is under way.
        package var readTimeout: Duration = .seconds(30)
        /// How long a request head may take as a whole, from its first byte to its end
        /// (beyond it `408`): a client sending a byte at a time cannot hold a connection longer.
        package var headTimeout: Duration = .seconds(30)
        /// How long a send may wait for the peer to make room (SO_SNDTIMEO).
        package var writeTimeout: Duration = .seconds(60)
        /// Head size and field count (defaults 64 KiB and 100 fields; beyond them `431`).
        package var head = HTTPHeadLimits()
        /// Chunk size line and trailer bounds for chunked request bodies.
        package var chunked = ChunkedBodyDecoder.Limits()
        /// SO_RCVBUF and SO_SNDBUF, best effort (the kernel may cap them).
        package var socketBufferSize = 4 * 1024 * 1024
        /// The listen(2) backlog.
        package var listenBacklog = 512
        /// After a final answer on a connection that still has unread request bytes, the server
        /// half-closes and discards what arrives for at most this long, so that the peer reads the
        /// answer rather than a reset.
        package var lingerTimeout: Duration = .seconds(2)
        /// The most bytes discarded during that linger.
        package var lingerMaxBytes = 8 * 1024 * 1024

        package init() {}
    }
}
