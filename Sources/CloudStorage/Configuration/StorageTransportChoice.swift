/// Which HTTP implementation a ``Storage`` sends its requests with.
///
/// The default, ``automatic``, is right almost always. On Linux every request
/// goes through the SDK's own HTTP/1.1 transport, which streams files from
/// the page cache to the socket (`sendfile(2)` for `http://`, large TLS
/// records for `https://`) and is several times faster than Foundation's
/// `URLSession` there; `https://` runs TLS with the system's OpenSSL 3,
/// loaded at run time, and falls back to `URLSession` only where that cannot
/// be loaded. On Apple platforms `https://` uses `URLSession`.
///
/// ```swift
/// var configuration = StorageConfiguration()
/// configuration.transport = .urlSession   // e.g. to compare with the native transport
/// let storage = Storage.gcsEmulator(bucket: "b", baseURL: emulatorURL, configuration: configuration)
/// ```
public enum StorageTransportChoice: Sendable, Hashable {
    /// Chooses per request by the URL's scheme: the native transport for
    /// `http://`, and for `https://` too on Linux when the system's OpenSSL 3
    /// can be loaded; `URLSession` for the rest (`https://` on Apple
    /// platforms, or on a Linux system without `libssl.so.3`). An upload
    /// session URL the server hands out is routed by its own scheme, so an
    /// `http` endpoint that answers with an `https` session still works.
    ///
    /// Either way a certificate that does not verify fails the request at
    /// once with ``StorageErrorCode/tlsFailure`` naming the cause, never
    /// retried; on Linux so does a plain HTTP server behind an `https://`
    /// address (Apple's `URLSession` reports that as a broken secure
    /// connection, which is retried).
    /// ``StorageConfiguration/TLS/additionalTrustRoots`` apply where the native
    /// transport carries `https://`; `URLSession` on Linux trusts the
    /// system store only.
    ///
    /// The native transport connects directly. So where the environment
    /// names a proxy for the endpoint (`https_proxy` or `HTTPS_PROXY` for an
    /// `https://` endpoint, `http_proxy` or `HTTP_PROXY` for `http://`, unless
    /// `no_proxy` or `NO_PROXY` lists the host, as curl reads them), every
    /// request of that ``Storage`` goes through `URLSession`, which uses the
    /// proxy. Loopback hosts (`localhost`, `127.0.0.1`, `::1`) are always
    /// reached directly. The environment is read when the ``Storage`` is
    /// created.
    case automatic
    /// The native HTTP/1.1 transport for every request, `http://` and
    /// `https://` alike; a request to any other scheme fails at once with
    /// ``StorageErrorCode/invalidArgument``.
    ///
    /// On Linux, `https://` runs TLS over the same sockets with the system's
    /// OpenSSL 3, loaded at run time: the server's certificate is verified
    /// against the system store plus
    /// ``StorageConfiguration/TLS/additionalTrustRoots`` before any request byte
    /// (or credential) is sent, and a failure is
    /// ``StorageErrorCode/tlsFailure`` at once, never retried. Where OpenSSL
    /// cannot be loaded (and on Apple platforms), every `https://` request
    /// fails at once with ``StorageErrorCode/tlsFailure`` saying why (which
    /// library or function was missing); ``automatic`` then uses
    /// `URLSession` for `https://` instead.
    ///
    /// Each ``Storage`` has its own: at most
    /// ``StorageConfiguration/ConnectionPool/maxConnectionsPerHost`` (32 by default)
    /// requests per `host:port` are in flight at once, each on a kept-alive
    /// connection; further requests wait their turn (cancellable, without
    /// holding a thread), so a burst of thousands of uploads reuses a few
    /// warm connections instead of opening one each.
    case native
    /// Foundation's `URLSession` for every request. On Linux it sends each
    /// request's body from memory, so resumable uploads go in requests of at
    /// most 32 MiB, and it trusts only the system's certificate store.
    ///
    /// A certificate failure is ``StorageErrorCode/tlsFailure``, never
    /// retried; on Linux the cause is read from libcurl's message (an
    /// untrusted issuer, an expired certificate, another name, a server that
    /// does not speak TLS), as swift-corelibs-foundation reports every TLS
    /// failure with the same `URLError` code.
    case urlSession
}
