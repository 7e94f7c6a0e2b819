/// A route's path, written as the route table shows it: `/storage/v1/b/{bucket}/o/{name...}`.
///
/// Segments are split at every `/` of the still percent-encoded path, so `%2F` stays inside its
/// segment. `{bucket}` and `{id}` are one segment each, percent-decoded. The last segment may take the rest of
/// the path, one segment or more: `{name...}` as an object name (percent-decoded, its slashes
/// kept: the JSON API's clients encode them, but unencoded ones are taken too),
/// `{operation...}` as a ``GCSObjectOperation`` (the route fits only when they name one), and
/// `{path...}` as it is, for a handler that reads the path itself.
struct RoutePattern: Sendable, CustomStringConvertible {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case bucket
        case id
        case name
        case operation
        case path
    }

    let segments: [Segment]
    /// A pattern written with a trailing `/?` fits its path with or without a trailing `/`.
    let allowsTrailingSlash: Bool
    let description: String

    init(_ text: String) {
        description = text
        allowsTrailingSlash = text.hasSuffix("/?")
        segments = text.dropLast(allowsTrailingSlash ? 2 : 0).split(separator: "/", omittingEmptySubsequences: false)
            .dropFirst().map { part in
                switch part {
                case "{bucket}": .bucket
                case "{id}": .id
                case "{name...}": .name
                case "{operation...}": .operation
                case "{path...}": .path
                default: .literal(String(part))
                }
            }
    }

    /// The segments of a request path: what follows each `/`.
    static func parts(of path: String) -> [Substring] {
        Array(path.split(separator: "/", omittingEmptySubsequences: false).dropFirst())
    }

    /// Whether a path has the pattern's shape: the same literals, and as many segments (at least
    /// as many, when the last takes the rest).
    func fits(_ parts: [Substring]) -> Bool {
        var parts = parts[...]
        if allowsTrailingSlash, parts.count == segments.count + 1, parts.last == "" { parts = parts.dropLast() }
        let takesRest = segments.last.map { [.name, .operation, .path].contains($0) } ?? false
        guard takesRest ? parts.count >= segments.count : parts.count == segments.count else { return false }
        for (segment, part) in zip(segments, parts) {
            if case .literal(let text) = segment, text != part { return false }
        }
        return true
    }

    /// The parameters of a path that ``fits(_:)``.
    ///
    /// - Returns: Nil when `{operation...}` names no operation.
    /// - Throws: ``HTTPError`` (400) for a segment that is not valid percent-encoding.
    func parameters(_ parts: [Substring]) throws -> RoutedRequest.Parameters? {
        var parameters = RoutedRequest.Parameters()
        for (index, segment) in segments.enumerated() {
            switch segment {
            case .literal, .path:
                continue
            case .bucket:
                parameters.bucket = try URLText.decode(parts[index])
            case .id:
                parameters.id = try URLText.decode(parts[index])
            case .name:
                parameters.name = try URLText.decode(parts[index...].joined(separator: "/")[...])
            case .operation:
                guard let operation = try GCSObjectOperation(parts[index...]) else { return nil }
                parameters.operation = operation
            }
        }
        return parameters
    }
}
