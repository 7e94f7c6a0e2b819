import Foundation
import HTTPClient
import NativeTLS

/// The ``StorageTransportChoice/automatic`` transport: each request goes to
/// the native transport when its URL's scheme is one the native transport
/// serves here (`http`, and `https` where OpenSSL 3 loaded), otherwise to
/// `URLSession`.
///
/// Routing by each request's own URL, not the endpoint's, keeps a session
/// URL the server hands out on another scheme working (an `http` emulator
/// answering with an `https` session, say).
///
/// ``maximumBodyLength`` is that of the transport the endpoint's own scheme
/// goes to, because the endpoint's requests all go there. A session URL on
/// another scheme is then sent with a body that may be longer than that
/// transport would choose; by `URLSession` on Linux, that body is gathered in
/// memory. Servers that hand out session URLs on another scheme than their
/// own are not known to exist.
///
/// It declares no ``HTTPTransportCapabilities`` of its own: what a request gets is its
/// carrier's (``carrier(for:)``), which is what the engine reads.
struct SchemeRoutingTransport: HTTPTransport {
    let native: any HTTPTransport
    let other: any HTTPTransport
    /// Lowercased schemes that go to ``native``.
    let nativeSchemes: Set<String>
    let maximumBodyLength: Int64?

    /// - Parameters:
    ///   - native: The transport for `nativeSchemes`.
    ///   - other: The transport for every other scheme.
    ///   - nativeSchemes: Lowercased schemes, such as `["http", "https"]`.
    ///   - endpointScheme: The scheme of the endpoint's own URL, which decides ``maximumBodyLength``.
    init(native: any HTTPTransport, other: any HTTPTransport, nativeSchemes: Set<String>, endpointScheme: String?) {
        self.native = native
        self.other = other
        self.nativeSchemes = nativeSchemes
        let endpointIsNative = endpointScheme.map { nativeSchemes.contains($0.lowercased()) } ?? false
        maximumBodyLength = endpointIsNative ? native.maximumBodyLength : other.maximumBodyLength
    }

    /// The native transport's carrier for URLs whose scheme it serves, the other's for the rest.
    func carrier(for url: URL) -> any HTTPTransport {
        if let scheme = url.scheme?.lowercased(), nativeSchemes.contains(scheme) {
            return native.carrier(for: url)
        }
        return other.carrier(for: url)
    }

    func execute(
        _ request: HTTPRequest,
        progress: (@Sendable (_ bytesSent: Int64) -> Void)?
    ) async throws -> HTTPResponse {
        try await carrier(for: request.url).execute(request, progress: progress)
    }

    func shutdown() {
        native.shutdown()
        other.shutdown()
    }
}

extension StorageTransportChoice {
    /// The transport this choice means for `endpoint`, made for one
    /// ``Storage``: a native transport of its own (its connections, threads and
    /// `maxConnectionsPerHost` leases per `host:port`), never one shared by
    /// the process, so that each `Storage` gets the pool it was configured
    /// with.
    ///
    /// - Parameters:
    ///   - endpoint: Where the `Storage` sends its requests.
    ///   - configuration: The `Storage`'s settings, which the native transport takes its pool,
    ///     connect time-out and trust roots from (`URLSession` uses its own; on Linux it cannot
    ///     use the trust roots).
    ///   - tlsUnavailableReason: Why the native transport cannot speak TLS in this process
    ///     (OpenSSL 3 did not load; always so off Linux), or nil when it can. It decides
    ///     where ``automatic`` sends `https://`, and ``native`` fails such requests with it.
    ///     Probed once per process by default (a `dlopen` of libraries FoundationNetworking
    ///     has already loaded through libcurl, so cheap); tests pass their own.
    ///   - proxies: The proxies the environment names. ``automatic`` leaves an endpoint meant to be
    ///     reached through one to `URLSession`, which uses it (the native transport connects directly).
    func transport(
        for endpoint: StorageEndpoint,
        configuration: StorageConfiguration = StorageConfiguration(),
        tlsUnavailableReason: @autoclosure () -> String? = TLSLibrary.unavailableReason,
        proxies: @autoclosure () -> ProxyEnvironment = ProxyEnvironment()
    ) -> any HTTPTransport {
        func native(_ unavailableReason: String?) -> NativeHTTPTransport {
            var nativeConfiguration = NativeHTTPTransport.Configuration(configuration)
            nativeConfiguration.tlsUnavailableReason = unavailableReason
            return NativeHTTPTransport(configuration: nativeConfiguration)
        }
        let events = StorageEventEmitter(noOperationOf: configuration.events.delivery)
        func chose(_ transport: String, because reason: String? = nil) {
            events.emit(
                .transportChosen, reason == nil ? .debug : .info,
                "\(transport) for \(endpoint.baseURL.redactedForEvents)" + (reason.map { ": \($0)" } ?? ""),
                ["transport": .string(transport), "endpoint": .string(endpoint.baseURL.redactedForEvents)].merging(
                    reason.map { ["reason": .string($0)] } ?? [:], uniquingKeysWith: { $1 }))
        }
        switch self {
        case .native:
            chose("native")
            return native(tlsUnavailableReason())
        case .urlSession:
            chose("urlSession")
            return URLSessionTransport.shared
        case .automatic:
            if proxies().usesProxy(for: endpoint.baseURL) {
                chose("urlSession", because: "the environment names a proxy for the endpoint")
                return URLSessionTransport.shared
            }
            let unavailableReason = tlsUnavailableReason()
            let nativeSchemes: Set<String> = unavailableReason == nil ? ["http", "https"] : ["http"]
            let endpointScheme = endpoint.baseURL.scheme?.lowercased()
            // Without native TLS, an https endpoint's requests all go to URLSession: no native transport (and
            // no threads) for the rare session URL on plain http.
            guard let endpointScheme, nativeSchemes.contains(endpointScheme) else {
                chose(
                    "urlSession",
                    because: unavailableReason.map { "TLS falls back to URLSession: \($0)" }
                        ?? "the endpoint's scheme is neither http nor https")
                return URLSessionTransport.shared
            }
            if let unavailableReason {
                chose(
                    "native for http, urlSession for https",
                    because: "TLS falls back to URLSession: \(unavailableReason)")
            } else {
                chose("native")
            }
            return SchemeRoutingTransport(
                native: native(unavailableReason), other: URLSessionTransport.shared, nativeSchemes: nativeSchemes,
                endpointScheme: endpointScheme)
        }
    }
}

extension NativeHTTPTransport.Configuration {
    /// The pool, connect time-out and trust roots `storage` sets (its defaults unless given,
    /// which are this configuration's own); the rest is the transport's own tuning.
    init(_ storage: StorageConfiguration) {
        self.init()
        maxConnectionsPerHost = storage.connectionPool.maxConnectionsPerHost
        maxIdleTime = storage.connectionPool.idleTimeout
        connectTimeout = storage.timeouts.connect
        additionalTrustRoots = storage.tls.additionalTrustRoots.map(\.pemSource)
    }
}

extension StorageConfiguration.TrustRoot {
    /// The same root as NativeTLS takes it.
    var pemSource: TLSPEMSource {
        switch source {
        case .bytes(let bytes): .bytes(bytes)
        case .file(let path): .file(path)
        }
    }
}
