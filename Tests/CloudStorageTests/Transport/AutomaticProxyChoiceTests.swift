import Foundation
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// ``StorageTransportChoice/automatic`` leaves an endpoint the environment
/// sends through a proxy to `URLSession` (the native transport connects
/// directly); `no_proxy` and loopback hosts stay native.
@Suite("Automatic transport choice behind a proxy")
struct AutomaticProxyChoiceTests {
    static let https = StorageEndpoint.gcs(URL(string: "https://storage.example.com")!)

    @Test func automaticLeavesAProxiedEndpointToURLSession() {
        let proxied = ProxyEnvironment(["HTTPS_PROXY": "http://proxy.corp:3128"])
        let viaProxy = StorageTransportChoice.automatic.transport(
            for: Self.https, tlsUnavailableReason: nil, proxies: proxied)
        #expect(viaProxy is URLSessionTransport)

        let direct = StorageTransportChoice.automatic.transport(
            for: Self.https, tlsUnavailableReason: nil,
            proxies: ProxyEnvironment(["https_proxy": "http://proxy.corp:3128", "no_proxy": ".example.com"]))
        #expect(direct is SchemeRoutingTransport)

        // A proxy for http:// says nothing about https://, and an explicit choice is kept.
        let otherScheme = StorageTransportChoice.automatic.transport(
            for: Self.https, tlsUnavailableReason: nil,
            proxies: ProxyEnvironment(["http_proxy": "http://proxy.corp:3128"]))
        #expect(otherScheme is SchemeRoutingTransport)
        let native = StorageTransportChoice.native.transport(
            for: Self.https, tlsUnavailableReason: nil, proxies: proxied)
        #expect(native is NativeHTTPTransport)
    }
}
