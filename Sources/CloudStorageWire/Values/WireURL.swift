package import Foundation

/// Builds request URLs under an endpoint's base URL, with every piece
/// percent-encoded, for the wire protocols.
package enum WireURL {
    /// `base` followed by `path` and a query.
    ///
    /// - Parameters:
    ///   - base: The endpoint's base URL; a trailing slash is dropped.
    ///   - path: The path, already encoded (use ``pathSegment(_:)`` on each piece).
    ///   - query: Names and unencoded values.
    /// - Returns: The URL.
    package static func make(base: URL, path: String, query: [(String, String)] = []) -> URL {
        var text = base.absoluteString
        if text.hasSuffix("/") { text.removeLast() }
        text += path
        if !query.isEmpty {
            text += "?" + query.map { "\($0)=\(queryValue($1))" }.joined(separator: "&")
        }
        // Every piece was percent-encoded, so the URL always parses.
        return URL(string: text) ?? base
    }

    /// Percent-encodes a path segment: everything but RFC 3986 unreserved
    /// characters, so `/` inside an object name becomes `%2F`.
    package static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// Percent-encodes a query value the same way (so `/`, `+`, `&` and `=` are escaped).
    package static func queryValue(_ text: String) -> String {
        pathSegment(text)
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
}
