/// What ``Storage/objects(_:)`` lists: the objects of a bucket under any name prefix, flat or
/// grouped by a delimiter, narrowed as Cloud Storage's `objects.list` allows.
///
/// Unlike ``StorageReference/list(maxResults:pageToken:)``, the prefix is any text (`logs/2024-`
/// lists `logs/2024-01.txt` and `logs/2024-02/a`), and there is no delimiter unless one is
/// given, so one listing walks a whole tree, a page at a time. Every option is checked before
/// any request is sent: a query that breaks a rule, or that the endpoint cannot answer exactly,
/// fails with ``StorageErrorCode/invalidArgument`` naming the option.
///
/// ```swift
/// // Every object whose name starts with logs/2024-, however deep, with its size.
/// for try await entry in storage.objects(StorageObjectQuery(prefix: "logs/2024-")) {
///     if case .object(let object, let metadata) = entry { print(object.fullPath, metadata?.size ?? 0) }
/// }
///
/// // One level, as a directory: objects directly under photos/, and the "folders" below it.
/// var query = StorageObjectQuery(prefix: "photos/", delimiter: "/")
/// query.matchGlob = "**.jpg"
/// ```
///
/// Firebase Storage v0 listings take only a prefix, the delimiter `/` and a page size: there,
/// `delimiter` must be `/`, `prefix` empty or ending in `/`, and the other options unset.
public struct StorageObjectQuery: Sendable, Hashable {
    /// Only names that start with these bytes; empty for the whole bucket. Any text: it need
    /// not end with the delimiter.
    public var prefix: String
    /// Groups names by this text: a name whose part after ``prefix`` contains it is not listed
    /// itself; its part up to and including the first occurrence is listed once as a prefix
    /// (``StorageListEntry/prefix(_:folder:)``). Nil, the default, lists every name under the
    /// prefix (a flat listing). Not empty.
    public var delimiter: String?
    /// Only names that match this glob, Cloud Storage's `matchGlob`: `*` matches any
    /// characters but `/`, `**` any characters, `?` one character, `[a-z]` and `{x,y}` as in a
    /// shell. Not empty. Google Cloud Storage only.
    public var matchGlob: String?
    /// Only names at or after this one, byte for byte (inclusive). Google Cloud Storage only.
    public var startOffset: String?
    /// Only names before this one, byte for byte (exclusive). Not empty. Google Cloud Storage only.
    public var endOffset: String?
    /// Every generation of each name, noncurrent ones too, by name then generation; each
    /// entry's metadata tells its ``StorageMetadata/generation``. Google Cloud Storage only.
    public var includesVersions: Bool
    /// Also lists, as an object, each name that ends with its first delimiter after the prefix
    /// (a folder placeholder such as `photos/`), besides its prefix. Needs a ``delimiter``.
    /// Google Cloud Storage only.
    public var includesTrailingDelimiter: Bool
    /// Also lists the bucket's folders (in a bucket with a hierarchical namespace) and managed
    /// folders as prefixes. Needs the delimiter `/`. Google Cloud Storage only.
    public var includesFoldersAsPrefixes: Bool
    /// The most entries (objects and prefixes together) one request asks for, 1 to 1000.
    public var pageSize: Int

    /// A query; with no arguments, every object of the bucket, flat, 1000 a page.
    ///
    /// ```swift
    /// let tree = StorageObjectQuery(prefix: "photos/")
    /// let oneLevel = StorageObjectQuery(prefix: "photos/", delimiter: "/")
    /// ```
    ///
    /// - Parameters:
    ///   - prefix: Only names that start with it.
    ///   - delimiter: Groups names by it; nil lists flat.
    ///   - matchGlob: Only names that match it.
    ///   - startOffset: Only names at or after it.
    ///   - endOffset: Only names before it.
    ///   - includesVersions: Every generation, noncurrent ones too.
    ///   - includesTrailingDelimiter: Names ending with the delimiter are objects too.
    ///   - includesFoldersAsPrefixes: Folders and managed folders are prefixes too.
    ///   - pageSize: Entries per request, 1 to 1000.
    public init(
        prefix: String = "", delimiter: String? = nil, matchGlob: String? = nil, startOffset: String? = nil,
        endOffset: String? = nil, includesVersions: Bool = false, includesTrailingDelimiter: Bool = false,
        includesFoldersAsPrefixes: Bool = false, pageSize: Int = 1000  // ProtocolLimits.maximumListResults
    ) {
        self.prefix = prefix
        self.delimiter = delimiter
        self.matchGlob = matchGlob
        self.startOffset = startOffset
        self.endOffset = endOffset
        self.includesVersions = includesVersions
        self.includesTrailingDelimiter = includesTrailingDelimiter
        self.includesFoldersAsPrefixes = includesFoldersAsPrefixes
        self.pageSize = pageSize
    }

    /// Checks that this query follows the rules and that `endpoint` can answer it exactly,
    /// without sending anything. ``Storage/objects(_:)`` checks it this way before its first
    /// request; call it to choose another way ahead of time.
    ///
    /// ```swift
    /// let flat = StorageObjectQuery(prefix: "photos/")
    /// let canListFlat = (try? flat.validate(for: storage.endpoint)) != nil
    /// ```
    ///
    /// - Parameter endpoint: The endpoint that would answer.
    /// - Throws: ``StorageErrorCode/invalidArgument``, naming the option: `pageSize` outside
    ///   1…1000; an empty `delimiter`, `matchGlob` or `endOffset`;
    ///   `includesTrailingDelimiter` without a delimiter; `includesFoldersAsPrefixes` without
    ///   the delimiter `/`; on Firebase Storage v0, any option it has no equivalent for.
    public func validate(for endpoint: StorageEndpoint) throws(StorageError) {
        let maximum = ProtocolLimits.maximumListResults
        guard (1...maximum).contains(pageSize) else {
            throw .invalidArgument("pageSize must be between 1 and \(maximum); it is \(pageSize).")
        }
        if delimiter == "" { throw .invalidArgument("delimiter must not be empty; nil lists every name (flat).") }
        if matchGlob == "" { throw .invalidArgument("matchGlob must not be empty; nil matches every name.") }
        if endOffset == "" { throw .invalidArgument("endOffset must not be empty; nil lists to the end.") }
        if includesTrailingDelimiter, delimiter == nil {
            throw .invalidArgument("includesTrailingDelimiter needs a delimiter.")
        }
        if includesFoldersAsPrefixes, delimiter != "/" {
            throw .invalidArgument("includesFoldersAsPrefixes needs the delimiter \"/\".")
        }
        guard endpoint.wireProtocol == .firebaseV0 else { return }
        // What the Firebase SDKs send, and so all that a v0 server (or the Firebase emulator,
        // which adds a `/` to any other prefix and lists with `/` when given no delimiter)
        // answers as asked.
        var unsupported: [String] = []
        if delimiter != "/" { unsupported.append(delimiter == nil ? "a flat listing (no delimiter)" : "delimiter") }
        if !prefix.isEmpty && !prefix.hasSuffix("/") { unsupported.append("a prefix that does not end in \"/\"") }
        if matchGlob != nil { unsupported.append("matchGlob") }
        if startOffset != nil { unsupported.append("startOffset") }
        if endOffset != nil { unsupported.append("endOffset") }
        if includesVersions { unsupported.append("includesVersions") }
        if includesTrailingDelimiter { unsupported.append("includesTrailingDelimiter") }
        if includesFoldersAsPrefixes { unsupported.append("includesFoldersAsPrefixes") }
        guard unsupported.isEmpty else {
            throw .invalidArgument(
                "Firebase Storage listings have no \(unsupported.joined(separator: ", ")): they take a prefix "
                    + "that is empty or ends in \"/\", the delimiter \"/\" and a page size; "
                    + "use a Google Cloud Storage endpoint.")
        }
    }
}
