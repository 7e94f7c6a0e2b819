package import Foundation

/// The HTTP proxies a process's environment names, as curl and Go read them:
/// `https_proxy` / `HTTPS_PROXY` for `https://`, `http_proxy` / `HTTP_PROXY`
/// for `http://`, and `no_proxy` / `NO_PROXY` for the hosts reached
/// directly.
///
/// The native transport connects directly, so a caller that chooses between
/// transports asks this whether a server is meant to be reached through a proxy
/// and then leaves it to `URLSession`, whose libcurl uses that proxy. Loopback
/// hosts (`localhost`, `127.0.0.0/8`, `::1`) are always reached directly, as
/// Go does, so that a proxy set for the outside world never swallows a local
/// emulator.
///
/// `no_proxy` entries are separated by commas: `*` (everything), a domain
/// (`example.com` or `.example.com`, matching it and every name below it),
/// an IP address, or a CIDR block (`10.0.0.0/8`, `fd00::/8`); an entry may
/// end in `:port` to match only that port.
package struct ProxyEnvironment: Sendable, Equatable {
    /// The proxy for `https://` URLs, if any.
    var httpsProxy: String?
    /// The proxy for `http://` URLs, if any.
    var httpProxy: String?
    /// The `no_proxy` entries, lowercased and trimmed.
    var noProxy: [String]

    /// Reads the variables from `environment`; the lowercase spelling wins, as in curl.
    package init(_ environment: [String: String] = ProcessInfo.processInfo.environment) {
        func value(_ name: String) -> String? {
            for spelling in [name, name.uppercased()] {
                if let value = environment[spelling]?.trimmingCharacters(in: .whitespaces), !value.isEmpty {
                    return value
                }
            }
            return nil
        }
        httpsProxy = value("https_proxy")
        httpProxy = value("http_proxy")
        noProxy = (value("no_proxy") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }.filter { !$0.isEmpty }
    }

    /// Whether a request to `url` is meant to go through a proxy.
    package func usesProxy(for url: URL) -> Bool {
        let proxy: String? =
            switch url.scheme?.lowercased() {
            case "https": httpsProxy
            case "http": httpProxy
            default: nil
            }
        guard proxy != nil, var host = url.host?.lowercased() else { return false }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if HostAddress.isLoopback(host) { return false }
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        return !noProxy.contains { Self.entry($0, matchesHost: host, port: port) }
    }

    /// Whether one `no_proxy` entry covers `host` (lowercased, no brackets) on `port`.
    static func entry(_ entry: String, matchesHost host: String, port: Int) -> Bool {
        if entry == "*" { return true }
        var pattern = Substring(entry)
        var entryPort: Int?
        if pattern.hasPrefix("[") {
            // `[v6]` or `[v6]:port`.
            guard let close = pattern.firstIndex(of: "]") else { return false }
            let rest = pattern[pattern.index(after: close)...]
            if rest.hasPrefix(":") {
                guard let number = Int(rest.dropFirst()) else { return false }
                entryPort = number
            } else if !rest.isEmpty {
                return false
            }
            pattern = pattern[pattern.index(after: pattern.startIndex)..<close]
        } else if pattern.filter({ $0 == ":" }).count == 1, let colon = pattern.firstIndex(of: ":") {
            // `name:port` or `v4:port`; a bare IPv6 address has two colons or more.
            guard let number = Int(pattern[pattern.index(after: colon)...]) else { return false }
            entryPort = number
            pattern = pattern[..<colon]
        }
        if let entryPort, entryPort != port { return false }
        var name = String(pattern)
        if name.contains("/") { return cidr(name, contains: host) }
        if let entryAddress = HostAddress.bytes(name) { return HostAddress.bytes(host) == entryAddress }
        if name.hasPrefix("*.") { name.removeFirst(2) } else if name.hasPrefix(".") { name.removeFirst() }
        guard !name.isEmpty else { return false }
        return host == name || host.hasSuffix("." + name)
    }

    /// Whether the CIDR block `block` (`10.0.0.0/8`) contains the address `host`.
    static func cidr(_ block: String, contains host: String) -> Bool {
        let parts = block.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, let network = HostAddress.bytes(String(parts[0])),
            let hostAddress = HostAddress.bytes(host),
            network.count == hostAddress.count, let bits = Int(parts[1]), (0...(network.count * 8)).contains(bits)
        else { return false }
        for index in 0..<network.count {
            let remaining = bits - index * 8
            if remaining <= 0 { break }
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if network[index] & mask != hostAddress[index] & mask { return false }
        }
        return true
    }
}
