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
