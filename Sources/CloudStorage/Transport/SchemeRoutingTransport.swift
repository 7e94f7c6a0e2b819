import Foundation
import NativeTLS

/// The ``StorageTransportChoice/automatic`` transport of an `http://`
/// endpoint: `http://` requests go to the native transport, any other scheme
/// (an `https` upload session URL, say) to `URLSession`.
///
/// ``maximumBodyLength`` is the native transport's (none), because the
/// endpoint's own requests all go there. A session URL on another scheme is
/// then sent by `URLSession` with a body that may be longer than it would
/// choose; on Linux that body is gathered in memory. Servers that hand out
/// session URLs on another scheme than their own are not known to exist.
struct SchemeRoutingTransport: HTTPTransport {
    let native: any HTTPTransport
    let other: any HTTPTransport

    var maximumBodyLength: Int64? { native.maximumBodyLength }

    func execute(
        _ request: HTTPRequest,
        progress: (@Sendable (_ bytesSent: Int64) -> Void)?
    ) async throws -> HTTPResponse {
        if request.url.scheme?.lowercased() == "http" {
            return try await native.execute(request, progress: progress)
        }
        return try await other.execute(request, progress: progress)
    }
}

extension StorageTransportChoice {
    /// The transport this choice means for `endpoint`, made for one
    /// ``Storage``: a native transport of its own (its connections, threads and
    /// `maxConnectionsPerHost` leases per `host:port`), never one shared by
    /// the process, so that each `Storage` gets the limit it was configured
    /// with.
    ///
    /// `additionalTrustRoots` are the PEM roots the native transport's TLS
    /// trusts besides the system store (`URLSession` cannot use them on Linux).
    func transport(
        for endpoint: StorageEndpoint,
        maxConnectionsPerHost: Int,
        additionalTrustRoots: [StorageConfiguration.TrustRoot] = []
    ) -> any HTTPTransport {
        func native() -> NativeHTTPTransport {
            var configuration = NativeHTTPTransport.Configuration()
            configuration.maxConnectionsPerHost = maxConnectionsPerHost
            configuration.additionalTrustRoots = additionalTrustRoots.map(\.pemSource)
            return NativeHTTPTransport(configuration: configuration)
        }
        switch self {
        case .native:
            return native()
        case .urlSession:
            return URLSessionTransport.shared
        case .automatic:
            guard endpoint.baseURL.scheme?.lowercased() == "http" else { return URLSessionTransport.shared }
            return SchemeRoutingTransport(native: native(), other: URLSessionTransport.shared)
        }
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
