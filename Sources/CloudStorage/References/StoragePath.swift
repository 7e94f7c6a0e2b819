/// A normalized object path inside a bucket.
///
/// A path has no leading or trailing slash and no empty segment; the empty
/// path is the root of the bucket. Normalizing at construction means two
/// spellings of the same object (`/a//b/` and `a/b`) compare equal and hash
/// alike, so references behave as values.
///
/// Construction never fails: whether the path is a valid object name is only
/// decided by ``validatedObjectName()``, when an operation needs a name. That
/// keeps navigation (`child`, `parent`, `root`) total, as in the Firebase SDKs.
struct StoragePath: Hashable, Sendable {
    /// The path's text: segments joined by single slashes, "" at the root.
    let string: String

    /// The root of the bucket: the empty path.
    static let root = StoragePath(uncheckedNormalized: "")

    /// The most UTF-8 bytes an object name may have (a GCS limit).
    static let maximumObjectNameBytes = 1024

    /// The prefix GCS reserves for ACME HTTP-01 challenges.
    static let reservedACMEPrefix = ".well-known/acme-challenge/"

    /// Normalizes raw text into a path.
    ///
    /// Leading and trailing slashes are removed and runs of slashes collapse
    /// into one: `"/a//b/"` becomes `"a/b"`. Nothing else changes: dots,
    /// spaces and other characters are kept as they are.
    ///
    /// - Parameter raw: Any text, such as `images/space.jpg`.
    init(normalizing raw: String) {
        self.string = raw.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    private init(uncheckedNormalized string: String) {
        self.string = string
    }

    /// Whether this is the root of the bucket.
    var isRoot: Bool { string.isEmpty }

    /// The path of `raw` below this one.
    ///
    /// `raw` may hold several segments (`a/b/c`) and is normalized the same way
    /// as by ``init(normalizing:)``; a raw path that normalizes to nothing
    /// (`""`, `"/"`) gives this path back.
    ///
    /// - Parameter raw: A relative path.
    /// - Returns: The combined, normalized path.
    func child(_ raw: String) -> StoragePath {
        let relative = StoragePath(normalizing: raw)
        if relative.isRoot { return self }
        if isRoot { return relative }
        return StoragePath(uncheckedNormalized: string + "/" + relative.string)
    }

    /// The path one segment up; nil at the root, the root for a single segment.
    var parent: StoragePath? {
        if isRoot { return nil }
        guard let slash = string.lastIndex(of: "/") else { return .root }
        return StoragePath(uncheckedNormalized: String(string[..<slash]))
    }

    /// The last segment, or "" at the root.
    var lastComponent: String {
        guard let slash = string.lastIndex(of: "/") else { return string }
        return String(string[string.index(after: slash)...])
    }

    /// Checks the path against the object-name rules and returns the name to send.
    ///
    /// The rules are those of Google Cloud Storage: 1 to 1024 bytes of UTF-8,
    /// no carriage return or line feed, not `.` or `..`, and not under
    /// `.well-known/acme-challenge/`. `#`, `[`, `]`, `*` and `?` are accepted:
    /// GCS discourages them (they clash with URL and wildcard syntax in other
    /// tools) but stores them.
    ///
    /// - Returns: The object name, the same text as ``string``.
    /// - Throws: ``StorageErrorCode/invalidArgument`` at the root, which names
    ///   no object; ``StorageErrorCode/pathError`` when a rule is broken.
    func validatedObjectName() throws(StorageError) -> String {
        if isRoot {
            throw .invalidArgument("An operation needs an object path; the root reference names no object.")
        }
        let byteCount = string.utf8.count
        if byteCount > Self.maximumObjectNameBytes {
            throw .pathError(
                "The object path is \(byteCount) bytes long in UTF-8; "
                    + "the limit is \(Self.maximumObjectNameBytes) bytes."
            )
        }
        // Scan bytes, not Characters: "\r\n" is a single Character, so
        // `contains("\n")` would miss a CR LF pair.
        if string.utf8.contains(where: { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }) {
            throw .pathError("The object path contains a carriage return or line feed; object names cannot.")
        }
        if string == "." || string == ".." {
            throw .pathError("The object path \"\(string)\" is not allowed: object names cannot be \".\" or \"..\".")
        }
        // Compare bytes: Character-wise `hasPrefix` would let a combining mark
        // after the final slash hide the prefix, which GCS matches bytewise.
        if string.utf8.starts(with: Self.reservedACMEPrefix.utf8) {
            throw .pathError(
                "The object path starts with \"\(Self.reservedACMEPrefix)\", which Cloud Storage reserves."
            )
        }
        return string
    }
}
