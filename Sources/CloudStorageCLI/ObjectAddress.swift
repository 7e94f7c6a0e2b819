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
    /// Checks the bucket name, and the object name when there is one (or the command needs
    /// one), by the SDK's rules, so that a typo is refused before anything is started or
    /// contacted.
    ///
    /// The path is an object name taken exactly, as gsutil and gcloud take it: `a//b`, `dir/`
    /// and `/lead` are legal names of other objects than `a/b`, `dir` and `lead`.
    ///
    /// - Parameter needsObject: Whether the path must name an object (not be empty).
    func validate(needsObject: Bool) throws(UsageError) {
        do {
            try Storage.validateBucketName(bucket)
            if needsObject || !path.isEmpty {
                try StorageReference.validateObjectName(path)
            }
        } catch {
            throw UsageError("\(url): \(error.message)", showsUsage: false)
        }
    }

    /// The address as given back to people: `gs://BUCKET/PATH`.
    var url: String { "gs://\(bucket)/\(path)" }

    /// The object the path names, byte for byte; the bucket's root when there is no path.
    func reference(in storage: Storage) -> StorageReference {
        path.isEmpty ? storage.reference() : storage.reference(objectName: path)
    }

    /// The name whose "folder" a listing of the address walks: the path without one final
    /// slash (`gs://b/pfx//` lists the prefix `pfx//`, the folder of `pfx/`); nil for the root.
    var folderName: String? {
        guard !path.isEmpty else { return nil }
        return endsInSlash ? String(decoding: path.utf8.dropLast(), as: UTF8.self) : path
    }

    /// Whether the path's last byte is a slash (compared as bytes, as object names are).
    var endsInSlash: Bool { path.utf8.last == UInt8(ascii: "/") }

    /// What `ls`, `rm -r` and `cp -r` walk: the names that start with the path followed by a
    /// slash, or only with the path when it ends in one; everything when there is none.
    func folder(in storage: Storage) -> StorageReference {
        folderName.map { storage.reference(objectName: $0) } ?? storage.reference()
    }
}
