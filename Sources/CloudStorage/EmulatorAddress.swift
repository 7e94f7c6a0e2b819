import Foundation

/// Reads and checks the address of a local emulator: `host:port` or
/// `scheme://host[:port]`, as the `*_EMULATOR_HOST` variables hold it.
///
/// Strict on purpose: a typo in an emulator variable must fail loudly rather
/// than send requests (and credentials) somewhere unexpected.
enum EmulatorAddress {
    /// Parses an address.
    ///
    /// Accepted: `host:port`, `[ipv6]:port`, and the same after `http://` or
    /// `https://` (without a scheme, `http`), with at most one trailing `/`.
    /// The host is a name or IPv4 address (letters, digits, `-`, `.`, `_`)
    /// or a bracketed IPv6 address.
    ///
    /// - Parameters:
    ///   - value: The text; surrounding whitespace is ignored.
    ///   - source: What the text came from, for error messages.
    ///   - requiresPort: Whether a missing port is an error (otherwise the
    ///     scheme's default port is meant).
    /// - Returns: `scheme://host[:port]`, or nil when `value` is empty or blank.
    /// - Throws: ``StorageErrorCode/invalidArgument`` saying what is wrong.
    static func parse(_ value: String, source: String, requiresPort: Bool) throws(StorageError) -> URL? {
        let text = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { return nil }
        // The value may hold user information ("user:password@host"); never repeat it then.
        let shown = text.contains("@") ? "the value" : "\"\(text)\""
        func failure(_ reason: String) -> StorageError {
            .invalidArgument("\(source) must be host:port or http(s)://host[:port]; \(shown) \(reason).")
        }

        var rest = Substring(text)
        var scheme = "http"
        if let separator = rest.range(of: "://") {
            scheme = rest[..<separator.lowerBound].lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw failure("has a scheme other than http or https")
            }
            rest = rest[separator.upperBound...]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if let bad = rest.first(where: { "/?#@ \t\\".contains($0) }) {
            throw failure(bad == "@" ? "holds user information" : "holds more than a host and a port")
        }

        let host: Substring
        let portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw failure("has an unclosed [") }
            host = rest[...close]
            let after = rest[rest.index(after: close)...]
            if after.isEmpty {
                portText = nil
            } else {
                guard after.first == ":" else { throw failure("has text after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw failure("has more than one colon (put IPv6 addresses in brackets)") }
            host = parts[0]
            portText = parts.count == 2 ? parts[1] : nil
        }
        let port: Int?
        if let portText {
            guard let number = Self.port(portText) else { throw failure("has a port that is not 1 to 65535") }
            port = number
        } else {
            port = nil
        }
        if requiresPort && port == nil { throw failure("has no port") }
        guard let url = Self.url(scheme: scheme, host: String(host), port: port) else {
            throw failure("has no usable host")
        }
        return url
    }

    /// `scheme://host[:port]` after checking the host, or nil when it is not a
    /// name, an IPv4 address or an IPv6 address (bare or in brackets).
    static func url(scheme: String, host: String, port: Int?) -> URL? {
        var host = host
        if host.contains(":") && !host.hasPrefix("[") { host = "[\(host)]" }
        let valid: Bool
        if host.hasPrefix("[") {
            let inner = host.dropFirst().dropLast()
            valid =
                host.hasSuffix("]") && inner.contains(":")
                && inner.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        } else {
            valid =
                !host.isEmpty && !host.hasPrefix("-") && !host.hasPrefix(".")
                && host.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || "-._".contains($0) }
        }
        guard valid else { return nil }
        if let port, !(1...65535).contains(port) { return nil }
        return URL(string: "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? ""))
    }

    private static func port(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
            let number = Int(text), (1...65535).contains(number)
        else { return nil }
        return number
    }
}
