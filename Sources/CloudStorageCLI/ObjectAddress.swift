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
    /// - Parameter needsObject: Whether the path must name an object (not be empty).
    func validate(needsObject: Bool) throws(UsageError) {
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
