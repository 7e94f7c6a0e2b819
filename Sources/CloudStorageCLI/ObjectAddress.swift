import CloudStorage

/// A `gs://BUCKET/PATH` argument: the bucket, and the path after it ("" when there is none).
struct ObjectAddress {
    let bucket: String
    let path: String

    /// Splits `text`, refusing anything but `gs://` with a bucket.
    ///
    /// - Parameter role: What the argument is, for messages ("the destination", "the object").
    init(_ text: String, role: String) throws(UsageError) {
        guard text.hasPrefix("gs://") else { throw UsageError("\(role) must be gs://BUCKET/PATH: \(text)") }
        let rest = text.dropFirst("gs://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        bucket = String(rest[..<slash])
        guard !bucket.isEmpty else { throw UsageError("\(role) names no bucket: \(text)") }
        path = slash < rest.endIndex ? String(rest[rest.index(after: slash)...]) : ""
    }
}

extension ObjectAddress {
    /// Checks the bucket name, and the object name when the command needs one, by the SDK's
    /// rules, so that a typo is refused before anything is started or contacted.
    ///
    /// The SDK's paths drop empty segments (`a//b` is `a/b`, `/a/` is `a`), so a path with one
    /// would name another object than the one typed: such paths are refused, as is an object
    /// path ending in `/` (a folder, or a placeholder object the SDK cannot name).
    ///
    /// - Parameter needsObject: Whether the path must name an object (not be empty, nor end in `/`).
    func validate(needsObject: Bool) throws(UsageError) {
        let named = needsObject || !path.hasSuffix("/") ? path[...] : path.dropLast()
        if !named.isEmpty && named.split(separator: "/", omittingEmptySubsequences: false).contains("") {
            let problem =
                needsObject && path.hasSuffix("/") && !path.dropLast().contains("//") && !path.hasPrefix("/")
                ? "names a folder, not an object"
                : "has an empty segment (a leading / or //), which would name another object"
            throw UsageError("\(url): \(problem)", showsUsage: false)
        }
        do {
            try Storage.validateBucketName(bucket)
            if needsObject || path.contains(where: { $0 != "/" }) {
                try StorageReference.validateObjectName(path)
            }
        } catch {
            throw UsageError("gs://\(bucket)/\(path): \(error.message)", showsUsage: false)
        }
    }

    /// The address as given back to people: `gs://BUCKET/PATH`.
    var url: String { "gs://\(bucket)/\(path)" }
}
