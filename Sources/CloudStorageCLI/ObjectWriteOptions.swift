import CloudStorage

/// What the commands that write an object (`cp`, `mv`, `compose`) take about the object they
/// write: its metadata (`--content-type`, `--custom-metadata K=V` and the other headers) and the
/// conditions on the object it replaces (`-n`, `--if-generation-match`, `--if-metageneration-match`).
///
/// Everything is checked while parsing, so a malformed value fails with status 2 before
/// anything is started or contacted.
struct ObjectWriteOptions {
    /// The options that set the written object's metadata, each taking a value.
    static let metadataValued: Set<String> = [
        "--content-type", "--cache-control", "--content-disposition", "--content-encoding", "--content-language",
        "--custom-metadata",
    ]
    /// The options that put conditions on the destination, each taking a number.
    static let preconditionValued: Set<String> = ["--if-generation-match", "--if-metageneration-match"]
    /// `-n` and its long name.
    static let noClobberFlags: Set<String> = ["-n", "--no-clobber"]

    /// The usage lines of the metadata options.
    static let metadataUsage = """
          --content-type T    the object's content type (default: from the file's extension)
          --cache-control V, --content-disposition V, --content-encoding V, --content-language V
                              the object's headers
          --custom-metadata K=V
                              a custom metadata key and value (repeatable; K= sets an empty value)
        """

    /// The usage lines of the conditions.
    static let preconditionUsage = """
          -n, --no-clobber    write only if no object has the destination's name (the server checks
                              it: ifGenerationMatch=0); an existing one is skipped with "Skipping
                              existing destination item (no-clobber): URL" and status 0
          --if-generation-match N
                              write only if the destination's generation is N (0: it does not exist)
          --if-metageneration-match N
                              write only if the destination's metageneration is N
          A condition that does not hold exits with 8 and writes nothing.
        """

    /// The metadata the options set; nil when none was given (an upload then infers the content
    /// type, a copy keeps the source's metadata).
    let metadata: StorageMetadata?
    /// The conditions on the destination; `-n` is `ifGenerationMatch: 0`.
    let preconditions: StoragePreconditions
    /// Whether `-n` was given: a failed condition then means "skip", not "fail".
    let noClobber: Bool

    /// Reads the options out of a command's parsed arguments.
    ///
    /// - Throws: ``UsageError`` for a `--custom-metadata` without `=` or with an empty or
    ///   repeated key, a condition that is not a non-negative number, or `-n` with `--if-generation-match`.
    init(_ arguments: CommandLineArguments) throws(UsageError) {
        var metadata = StorageMetadata()
        var given = false
        let headers: [(String, WritableKeyPath<StorageMetadata, String?>)] = [
            ("--content-type", \.contentType), ("--cache-control", \.cacheControl),
            ("--content-disposition", \.contentDisposition), ("--content-encoding", \.contentEncoding),
            ("--content-language", \.contentLanguage),
        ]
        for (option, field) in headers {
            if let value = arguments.value(option) {
                metadata[keyPath: field] = value
                given = true
            }
        }
        let custom = arguments.values("--custom-metadata")
        if !custom.isEmpty {
            metadata.customMetadata = try Self.customMetadata(custom)
            given = true
        }
        self.metadata = given ? metadata : nil

        noClobber = arguments.has("-n") || arguments.has("--no-clobber")
        var preconditions = StoragePreconditions()
        preconditions.ifGenerationMatch = try arguments.value("--if-generation-match").map {
            text throws(UsageError) in try Self.number(text, option: "--if-generation-match")
        }
        preconditions.ifMetagenerationMatch = try arguments.value("--if-metageneration-match").map {
            text throws(UsageError) in try Self.number(text, option: "--if-metageneration-match")
        }
        if noClobber {
            guard preconditions.ifGenerationMatch == nil else {
                throw UsageError("-n is --if-generation-match 0: give one of them, not both")
            }
            preconditions.ifGenerationMatch = 0
        }
        self.preconditions = preconditions
    }

    /// Whether any condition option was given (`-n` included).
    var hasPreconditions: Bool { !preconditions.isEmpty }

    /// The keys and values of `--custom-metadata K=V` options, strictly: each needs an `=` after
    /// a non-empty key (`K=` sets an empty value), and a key may be given once.
    ///
    /// - Throws: ``UsageError`` naming the first malformed or repeated one.
    static func customMetadata(_ pairs: [String]) throws(UsageError) -> [String: String] {
        var result: [String: String] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "=") else {
                throw UsageError("--custom-metadata: \(pair) is not KEY=VALUE (KEY= sets an empty value)")
            }
            let key = String(pair[..<equals])
            guard !key.isEmpty else { throw UsageError("--custom-metadata: \(pair) has an empty key") }
            guard result[key] == nil else { throw UsageError("--custom-metadata: the key \(key) is given twice") }
            result[key] = String(pair[pair.index(after: equals)...])
        }
        return result
    }

    /// A generation or metageneration: a decimal number from 0.
    static func number(_ text: String, option: String) throws(UsageError) -> Int64 {
        guard let value = Int64(text), value >= 0 else {
            throw UsageError("\(option): \(text) is not a generation number (0 or more)")
        }
        return value
    }

    /// The first metadata or condition option given in `arguments` (`-n` aside), to refuse it
    /// where no object is written (a download), or nil.
    static func firstValued(in arguments: CommandLineArguments) -> String? {
        metadataValued.union(preconditionValued).sorted().first { arguments.value($0) != nil }
    }
}
