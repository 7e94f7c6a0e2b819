import SystemCalls

/// Host names and IP-address literals as URLs carry them: which are this
/// machine, and the bytes of an address.
package enum HostAddress {
    /// Whether `host` (lowercased or not, IPv6 with or without brackets) is this machine:
    /// `localhost` or a name below it, an address in `127.0.0.0/8`, or `::1` in any spelling.
    package static func isLoopback(_ host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        guard let bytes = bytes(host) else { return false }
        if bytes.count == 4 { return bytes[0] == 127 }
        return bytes == [UInt8](repeating: 0, count: 15) + [1]
    }

    /// The bytes of an IPv4 (4) or IPv6 (16) address written as text, or nil for a name.
    static func bytes(_ text: String) -> [UInt8]? {
        POSIXSocket.addressBytes(text)
    }
}
