/// An object path inside a bucket: the root, or a name taken byte for byte.
///
/// Cloud Storage names are flat: `a//b`, `dir/` and `/lead` are three legal
/// names, none the same object as `a/b`, `dir` or `lead`. So a path keeps its
/// text exactly as it was made, and the only question is how it was made:
/// - ``init(exact:)`` takes a name verbatim. Everything the server sends (list
///   items and prefixes, metadata names) and every URL is read this way, so the
///   SDK never acts on another object than the one it was given.
/// - ``init(normalizing:)`` is the Firebase SDKs' path syntax for
///   ``Storage/reference(withPath:)`` and ``StorageReference/child(_:)``:
///   leading, trailing and repeated slashes go, so `/a//b/` is `a/b`.
///
/// The root is not a name: it is kept apart from the exact empty text, which
/// is the "folder" of the names that start with `/` (their listing prefix is
/// `/`, the root's is empty). Keeping them apart is what lets navigation and
/// listing reach every name and always move strictly down or up.
///
/// Equality and hashing compare the UTF-8 bytes, as Cloud Storage does: `é`
/// precomposed and `e` with a combining accent are two objects, although
/// Swift's `String` calls them equal.
///
/// Construction never fails: whether the path is a valid object name is only
/// decided by ``validatedObjectName()``, when an operation needs a name. That
/// keeps navigation (`child`, `parent`, `root`) total, as in the Firebase SDKs.
package struct StoragePath: Hashable, Sendable {
    /// The path's text: the object name, "" at the root.
    package let string: String
    /// Whether this is the root of the bucket, which names no object.
    package let isRoot: Bool

    /// The root of the bucket.
    package static let root = StoragePath(string: "", isRoot: true)

    /// The most UTF-8 bytes an object name may have (a GCS limit).
    package static let maximumObjectNameBytes = 1024

    /// The prefix GCS reserves for ACME HTTP-01 challenges.
    package static let reservedACMEPrefix = ".well-known/acme-challenge/"

    private static let slash = UInt8(ascii: "/")

    private init(string: String, isRoot: Bool) {
        self.string = string
        self.isRoot = isRoot
    }

    /// The path of the object named exactly `name`, which may hold any bytes,
    /// empty segments and leading or trailing slashes included.
    ///
    /// - Parameter name: An object name such as `a//b` or `dir/`.
    package init(exact name: String) {
        self.init(string: name, isRoot: false)
    }

    /// Normalizes raw text into a path, the Firebase way.
    ///
    /// Leading and trailing slashes are removed and runs of slashes collapse
    /// into one: `"/a//b/"` becomes `"a/b"`; text without any other character
    /// is the root. Nothing else changes: dots, spaces and other characters are
    /// kept as they are.
    ///
    /// - Parameter raw: Any text, such as `images/space.jpg`.
    package init(normalizing raw: String) {
        let segments = raw.utf8.split(separator: Self.slash, omittingEmptySubsequences: true)
        let joined = Array(segments.joined(separator: [Self.slash]))
        self.init(string: String(decoding: joined, as: UTF8.self), isRoot: segments.isEmpty)
    }

    /// The path of `raw` below this one.
    ///
    /// `raw` may hold several segments (`a/b/c`) and is normalized as by
    /// ``init(normalizing:)``; a raw path that normalizes to nothing (`""`,
    /// `"/"`) gives this path back. This path itself is kept as it is, so a
    /// child of the exact `a/` (the folder of `a//…`) is `a//b`.
    ///
    /// - Parameter raw: A relative path.
    /// - Returns: The combined path.
    package func child(_ raw: String) -> StoragePath {
        let relative = StoragePath(normalizing: raw)
        if relative.isRoot { return self }
        if isRoot { return relative }
        return StoragePath(exact: string + "/" + relative.string)
    }

    /// The path one segment up: the text before the last slash; the root for
    /// a path without a slash; nil at the root.
    ///
    /// On exact names this keeps empty segments: the parent of `a//b` is `a/`,
    /// whose listing (prefix `a//`) holds `a//b`; the parent of `/lead` is the
    /// exact empty path, whose listing prefix is `/`.
    package var parent: StoragePath? {
        if isRoot { return nil }
        guard let slash = string.utf8.lastIndex(of: Self.slash) else { return .root }
        return StoragePath(exact: String(decoding: string.utf8[..<slash], as: UTF8.self))
    }

    /// The text after the last slash: "" at the root, and for a name that ends
    /// in a slash (`dir/`).
    package var lastComponent: String {
        guard let slash = string.utf8.lastIndex(of: Self.slash) else { return string }
        return String(decoding: string.utf8[string.utf8.index(after: slash)...], as: UTF8.self)
    }

    /// The prefix that lists what lies below this path: "" at the root,
    /// otherwise the text and one slash (`a/` lists `a//b`).
    package var listingPrefix: String { isRoot ? "" : string + "/" }

    /// Whether two paths are the same: both the root, or the same bytes.
    ///
    /// - Parameters:
    ///   - lhs: A path.
    ///   - rhs: Another path.
    /// - Returns: True when they name the same place.
    package static func == (lhs: StoragePath, rhs: StoragePath) -> Bool {
        lhs.isRoot == rhs.isRoot && lhs.string.utf8.elementsEqual(rhs.string.utf8)
    }

    /// Hashes what equality compares: whether it is the root, and the bytes.
    ///
    /// - Parameter hasher: The hasher to feed.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(isRoot)
        hasher.combine(string.utf8.count)
        for byte in string.utf8 { hasher.combine(byte) }
    }

    /// Checks the path against the object-name rules and returns the name to send.
    ///
    /// The rules are those of Google Cloud Storage: 1 to 1024 bytes of UTF-8,
    /// no carriage return or line feed, not `.` or `..`, and not under
    /// `.well-known/acme-challenge/`. `#`, `[`, `]`, `*` and `?` are accepted:
    /// GCS discourages them (they clash with URL and wildcard syntax in other
    /// tools) but stores them. Empty segments and leading or trailing slashes
    /// are legal and kept.
    ///
    /// - Returns: The object name, the same text as ``string``.
    /// - Throws: ``StorageErrorCode/invalidArgument`` at the root, which names
    ///   no object; ``StorageErrorCode/pathError`` when a rule is broken.
    package func validatedObjectName() throws(StorageError) -> String {
        if isRoot {
            throw .invalidArgument("An operation needs an object path; the root reference names no object.")
        }
        let byteCount = string.utf8.count
        if byteCount == 0 {
            throw .pathError("The object name is empty; object names are 1 to 1024 bytes long.")
        }
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
