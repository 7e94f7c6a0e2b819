/// Which HTTP implementation a ``Storage`` sends its requests with.
///
/// The default, ``automatic``, is right almost always: plain-HTTP endpoints
/// (emulators, local gateways) get the SDK's own HTTP/1.1 transport, which
/// streams files from the page cache to the socket with `sendfile(2)` and is
/// several times faster than Foundation's `URLSession` on Linux; `https://`
/// endpoints use `URLSession`, which does TLS.
///
/// ```swift
/// var configuration = StorageConfiguration()
/// configuration.transport = .urlSession   // e.g. to compare, or behind an HTTP proxy URLSession knows
/// let storage = Storage.gcsEmulator(bucket: "b", baseURL: emulatorURL, configuration: configuration)
/// ```
public enum StorageTransportChoice: Sendable, Hashable {
    /// Chooses per request by the URL's scheme: the native transport for
    /// `http://`, `URLSession` for everything else (`https://`). An upload
    /// session URL the server hands out is routed by its own scheme, so an
    /// `http` endpoint that answers with an `https` session still works.
    case automatic
    /// The native HTTP/1.1 transport for every request, `http://` and
    /// `https://` alike; a request to any other scheme fails at once with
    /// ``StorageErrorCode/invalidArgument``.
    ///
    /// On Linux, `https://` runs TLS over the same sockets with the system's
    /// OpenSSL 3, loaded at run time: the server's certificate is verified
    /// against the system store plus
    /// ``StorageConfiguration/additionalTrustRoots`` before any request byte
    /// (or credential) is sent, and a failure is
    /// ``StorageErrorCode/tlsFailure`` at once, never retried. Where OpenSSL
    /// cannot be loaded (and on Apple platforms), every `https://` request
    /// fails with ``StorageErrorCode/tlsFailure`` saying why; ``automatic``
    /// then keeps using `URLSession`.
    ///
    /// Each ``Storage`` has its own: at most
    /// ``StorageConfiguration/maxConnectionsPerHost`` (32 by default)
    /// requests per `host:port` are in flight at once, each on a kept-alive
    /// connection; further requests wait their turn (cancellable, without
    /// holding a thread), so a burst of thousands of uploads reuses a few
    /// warm connections instead of opening one each.
    case native
    /// Foundation's `URLSession` for every request. On Linux it sends each
    /// request's body from memory, so resumable uploads go in requests of at
    /// most 32 MiB.
    case urlSession
}
