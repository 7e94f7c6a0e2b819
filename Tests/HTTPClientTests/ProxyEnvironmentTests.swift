import Foundation
import Testing

@testable import HTTPClient

/// Which URLs the environment sends through a proxy: `no_proxy` entries (names, suffixes,
/// ports, CIDR blocks) and loopback hosts go direct. (What the SDK's `automatic` transport
/// choice makes of it is tested in CloudStorageTests, `AutomaticProxyChoiceTests`.)
@Suite("Proxy environment")
struct ProxyEnvironmentTests {
    @Test func loopbackIsAlwaysDirect() {
        let everything = ProxyEnvironment(["http_proxy": "http://proxy:1", "https_proxy": "http://proxy:1"])
        for url in [
            "http://127.0.0.1:4443", "https://127.0.0.1:8443", "http://127.9.9.9", "http://localhost:9199",
            "https://[::1]:8443", "http://emulator.localhost",
        ] {
            #expect(!everything.usesProxy(for: URL(string: url)!), "\(url)")
        }
        #expect(everything.usesProxy(for: URL(string: "http://10.0.0.7:4443")!))
        #expect(everything.usesProxy(for: URL(string: "https://storage.googleapis.com")!))
    }

    @Test(arguments: [
        // (no_proxy, URL, reached through the proxy)
        ("*", "https://storage.googleapis.com", false),
        ("googleapis.com", "https://storage.googleapis.com", false),
        (".googleapis.com", "https://storage.googleapis.com", false),
        ("*.googleapis.com", "https://storage.googleapis.com", false),
        ("googleapis.com", "https://notgoogleapis.com", true),
        ("storage.googleapis.com:443", "https://storage.googleapis.com", false),
        ("storage.googleapis.com:8443", "https://storage.googleapis.com", true),
        ("10.0.0.0/8", "https://10.1.2.3", false),
        ("10.0.0.0/8", "https://11.1.2.3", true),
        ("10.1.2.3", "https://10.1.2.3:9000", false),
        ("10.1.2.3:9000", "https://10.1.2.3:9000", false),
        ("10.1.2.3:9001", "https://10.1.2.3:9000", true),
        ("fd00::/8", "https://[fd12::7]", false),
        ("fd00::/8", "https://[fe80::7]", true),
        ("[fd12::7]:443", "https://[fd12::7]", false),
        ("fd12::7", "https://[fd12::7]:8443", false),
        (" other.example , STORAGE.googleapis.com ", "https://storage.googleapis.com", false),
        ("10.0.0.0/99", "https://10.1.2.3", true),
        ("", "https://storage.googleapis.com", true),
    ])
    func noProxyEntries(noProxy: String, url: String, proxied: Bool) {
        let environment = ProxyEnvironment(["https_proxy": "http://proxy:3128", "NO_PROXY": noProxy])
        #expect(environment.usesProxy(for: URL(string: url)!) == proxied)
    }

    @Test func lowercaseSpellingWins() {
        let environment = ProxyEnvironment(["https_proxy": "", "HTTPS_PROXY": "http://proxy:3128"])
        #expect(environment.httpsProxy == "http://proxy:3128", "an empty value counts as unset")
        let both = ProxyEnvironment(["no_proxy": "a.example", "NO_PROXY": "b.example"])
        #expect(both.noProxy == ["a.example"])
    }
}
