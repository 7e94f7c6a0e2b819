import CloudStorage

/// A `gs://BUCKET/PATH` argument: the bucket, the path after it ("" when there is none), and the
/// generation a `#GENERATION` suffix names.
struct ObjectAddress {
    let bucket: String
    let path: String
    /// The generation `gs://BUCKET/PATH#GENERATION` names; nil for the live object.
    var generation: Int64? = nil

    /// Splits `text`, refusing anything but `gs://` with a bucket.
    ///
    /// A `#` followed by digits at the end of a non-empty path names a generation, as gcloud reads
    /// it (and ``StorageReference/description`` prints it); any other `#` is part of the name.
    ///
    /// - Parameter role: What the argument is, for messages ("the destination", "the object").
    init(_ text: String, role: String) throws(UsageError) {
        guard text.hasPrefix("gs://") else { throw UsageError("\(role) must be gs://BUCKET/PATH: \(text)") }
        let rest = text.dropFirst("gs://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        bucket = String(rest[..<slash])
        guard !bucket.isEmpty else { throw UsageError("\(role) names no bucket: \(text)") }
        var path = slash < rest.endIndex ? rest[rest.index(after: slash)...] : ""
        if let hash = path.lastIndex(of: "#"), hash > path.startIndex {
            let digits = path[path.index(after: hash)...]
            if !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                guard let generation = Int64(digits), generation > 0 else {
                    throw UsageError(
                        "\(role) names the generation \(digits), which is not a positive 64-bit number: \(text)")
                }
                self.generation = generation
                path = path[..<hash]
            }
        }
        self.path = String(path)
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
    /// - Parameters:
    ///   - needsObject: Whether the path must name an object (not be empty).
    ///   - allowsGeneration: Whether the command acts on one object and can take its generation
    ///     (`gs://BUCKET/PATH#GENERATION`); when not, an address with one is refused.
    func validate(needsObject: Bool, allowsGeneration: Bool = false) throws(UsageError) {
        if let generation, !allowsGeneration {
            throw UsageError(
                "\(url): a generation (#\(generation)) names one version of one object, which this does not take",
                showsUsage: false)
        }
        do {
            try Storage.validateBucketName(bucket)
            if needsObject || !path.isEmpty || generation != nil {
                try StorageReference.validateObjectName(path)
            }
        } catch {
            throw UsageError("\(url): \(error.message)", showsUsage: false)
        }
    }

    /// The address as given back to people: `gs://BUCKET/PATH`, and `#GENERATION` when it names one.
    var url: String { "gs://\(bucket)/\(path)" + (generation.map { "#\($0)" } ?? "") }

    /// The URLs a listing command was given: at least one, each a bucket or a prefix in one,
    /// or, where `allowsGeneration`, one generation of an object (`gs://BUCKET/NAME#GENERATION`).
    ///
    /// - Throws: ``UsageError`` when there is none, or one is not a `gs://` URL a listing takes.
    static func listings(
        _ texts: [String], command: String, allowsGeneration: Bool = false
    ) throws(UsageError) -> [ObjectAddress] {
        guard !texts.isEmpty else { throw UsageError("\(command) needs a gs://BUCKET[/PREFIX]") }
        return try texts.map { text throws(UsageError) in
            let address = try ObjectAddress(text, role: "a listing")
            try address.validate(needsObject: address.generation != nil, allowsGeneration: allowsGeneration)
            return address
        }
    }

    /// The object the path names, byte for byte, at the generation the address names; the
    /// bucket's root when there is no path.
    func reference(in storage: Storage) -> StorageReference {
        path.isEmpty ? storage.reference() : storage.reference(objectName: path, generation: generation)
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
