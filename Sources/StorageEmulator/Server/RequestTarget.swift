/// The path and query of a request target (RFC 9112 §3.2).
struct RequestTarget {
    /// Still percent-encoded.
    var path: String
    /// Percent-decoded; `+` stays `+`.
    var queryItems: [(name: String, value: String)]

    /// Splits origin-form (`/p?q`), absolute-form (`http://h/p?q`) and asterisk-form (`*`) targets.
    ///
    /// - Returns: nil for authority-form or a query whose percent-encoding is broken or not UTF-8.
    init?(_ target: String) {
        var rest = Substring(target)
        if target == "*" {
            path = "*"
            queryItems = []
            return
        }
        if !rest.hasPrefix("/") {
            guard let scheme = rest.range(of: "://") else { return nil }
            rest = rest[scheme.upperBound...]
            if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                rest = rest[slash...]
            } else {
                rest = "/"
            }
            if rest.hasPrefix("?") { rest = "/" + rest }
        }
        let query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        } else {
            query = nil
        }
        path = String(rest)
        var items: [(name: String, value: String)] = []
        for pair in query?.split(separator: "&") ?? [] {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.percentDecoded(parts[0]) else { return nil }
            let value = parts.count > 1 ? Self.percentDecoded(parts[1]) : ""
            guard let value else { return nil }
            items.append((name, value))
        }
        queryItems = items
    }

    /// Decodes `%XX` escapes; nil when an escape is malformed or the result is not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
