/// A pointer to an object, or a place for one, in a Cloud Storage bucket.
///
/// A reference is a cheap value: creating one, or navigating with
/// ``child(_:)``, ``parent()`` and ``root()``, never talks to the server and
/// never fails. Get one from ``Storage/reference()``,
/// ``Storage/reference(withPath:)`` or ``Storage/reference(forURL:)-(String)``.
///
/// ```swift
/// let storage = Storage(bucket: "my-bucket")
/// let imagesRef = storage.reference().child("images")
/// let spaceRef = imagesRef.child("space.jpg")
/// print(spaceRef.fullPath)   // "images/space.jpg"
/// print(spaceRef.name)       // "space.jpg"
/// print(spaceRef)            // "gs://my-bucket/images/space.jpg"
/// ```
///
/// ## Paths
///
/// Cloud Storage names are flat text: `a//b`, `dir/` and `/lead` are legal
/// names of three objects, none of them `a/b`, `dir` or `lead`. A reference
/// keeps its path exactly as it was made, and how it was made decides:
/// - ``Storage/reference(withPath:)`` and ``child(_:)`` take the Firebase SDKs'
///   path syntax: leading and trailing slashes are dropped and repeated
///   slashes collapse, so `child("/images//space.jpg/")` and
///   `child("images/space.jpg")` are the same reference.
/// - ``Storage/reference(objectName:)`` takes a name verbatim, and so does
///   everything the server sends (listed items and prefixes, metadata names)
///   and every URL (``Storage/reference(forURL:)-(String)``): the SDK never
///   renames what it is given, so it never acts on another object.
///
/// A reference also stands for the "folder" of the names below it: listing
/// `images` lists the prefix `images/`, and listing the exact `a/` lists
/// `a//`. ``parent()`` and ``name`` split the path at its last slash and keep
/// empty segments: the parent of `a//b` is `a/` and its name `b`; the parent
/// of `dir/` is `dir` and its name is empty; the parent of `/lead` is the
/// exact empty path (the folder whose listing prefix is `/`, which is not the
/// root, although both print as `gs://BUCKET/`), and its parent the root.
///
/// An operation on an object checks its path against the object-name rules of
/// Cloud Storage when the operation is attempted, not when the reference is
/// made. A valid path:
/// - is 1 to 1024 bytes long in UTF-8 (the root reference names no object and
///   fails with ``StorageErrorCode/invalidArgument``);
/// - contains no carriage return or line feed;
/// - is not `.` or `..`, and does not start with `.well-known/acme-challenge/`.
///
/// Breaking a rule fails the operation with ``StorageErrorCode/pathError``.
/// The characters `#`, `[`, `]`, `*` and `?` are allowed but discouraged:
/// other tools read them as URL or wildcard syntax.
///
/// ## Generations
///
/// A reference names the live object unless it is pinned to one
/// ``generation`` with ``atGeneration(_:)``: then reads, metadata updates,
/// deletes and server-side copies act on that generation, live or
/// noncurrent (see ``atGeneration(_:)``).
///
/// ## Equality
///
/// Two references are equal when they have the same bucket, the same
/// ``Storage/endpoint``, the same path, compared byte for byte as Cloud
/// Storage compares names (`é` precomposed and `e` with a combining accent
/// are two objects), and the same ``generation``. Credentials and
/// configuration are not compared.
public struct StorageReference: Sendable, Hashable, CustomStringConvertible {
    /// The service handle this reference came from: its bucket, endpoint,
    /// credentials and settings are the ones operations on the reference use.
    public let storage: Storage
    /// The path inside the bucket.
    let path: StoragePath
    /// The generation of the object this reference is pinned to; nil for the live object.
    ///
    /// Set it with ``atGeneration(_:)``, ``Storage/reference(objectName:generation:)`` or a URL
    /// that names one (`gs://my-bucket/notes.txt#1712345678901234`).
    public let generation: Int64?

    init(storage: Storage, path: StoragePath, generation: Int64? = nil) {
        self.storage = storage
        self.path = path
        self.generation = generation
    }

    /// A reference to a path below this one.
    ///
    /// The child names another object, so it is never pinned to a generation,
    /// even when this reference is.
    ///
    /// The path may hold several segments; it is normalized (leading,
    /// trailing and repeated slashes removed), and an empty path or `/` gives
    /// this reference back. This reference's own path is kept exactly, so a
    /// child of a listed prefix is below that prefix. To name a child whose
    /// name has empty segments, use ``Storage/reference(objectName:)``.
    /// Whether the result is a valid object name is checked when an operation
    /// uses it.
    ///
    /// ```swift
    /// let imagesRef = storage.reference().child("images")
    /// let spaceRef = imagesRef.child("space.jpg")       // images/space.jpg
    /// let sameRef = storage.reference().child("images/space.jpg")
    /// assert(spaceRef == sameRef)
    /// ```
    ///
    /// - Parameter path: A relative path such as `space.jpg` or `images/space.jpg`.
    /// - Returns: The reference to `path` below this one.
    public func child(_ path: String) -> StorageReference {
        StorageReference(storage: storage, path: self.path.child(path))
    }

    /// A reference to the path one level up, or nil at the root.
    ///
    /// The path is cut at its last slash, keeping empty segments (see
    /// "Paths" above): the parent of `a//b` is `a/`, which lists `a//b`.
    /// The parent is never pinned to a generation.
    ///
    /// ```swift
    /// let spaceRef = storage.reference(withPath: "images/space.jpg")
    /// let imagesRef = spaceRef.parent()          // images
    /// let rootRef = imagesRef?.parent()          // the bucket's root
    /// let nilRef = rootRef?.parent()             // nil
    /// ```
    ///
    /// - Returns: The parent reference; nil when this is the root.
    public func parent() -> StorageReference? {
        path.parent.map { StorageReference(storage: storage, path: $0) }
    }

    /// A reference to the root of the bucket, which is never pinned to a generation.
    ///
    /// ```swift
    /// let rootRef = spaceRef.root()
    /// assert(rootRef.fullPath.isEmpty)
    /// ```
    ///
    /// - Returns: The root reference of the same bucket and endpoint.
    public func root() -> StorageReference {
        StorageReference(storage: storage, path: .root)
    }

    /// The path from the root of the bucket, such as `images/space.jpg`;
    /// empty at the root.
    public var fullPath: String { path.string }

    /// The last segment of the path, such as `space.jpg`: the text after its
    /// last slash. Empty at the root, and for a name that ends in a slash
    /// (`dir/`, a folder placeholder).
    public var name: String { path.lastComponent }

    /// The name of the bucket the reference points into.
    public var bucket: String { storage.bucket }

    /// The reference as a `gs://` URL, such as `gs://my-bucket/images/space.jpg`
    /// (`gs://my-bucket/` at the root), with the path exactly as it is, and
    /// `#GENERATION` after it when the reference is pinned to a generation
    /// (`gs://my-bucket/images/space.jpg#1712345678901234`), as `gcloud storage` prints one.
    ///
    /// ``Storage/reference(forURL:)-(String)`` reads this form back to the same
    /// reference, for every path but the exact empty one, which prints as the
    /// root does, and names that themselves end in `#` and digits, which it reads
    /// as a generation (as gcloud does).
    public var description: String {
        "gs://\(storage.bucket)/\(path.string)" + (generation.map { "#\($0)" } ?? "")
    }

    /// Whether two references name the same path and generation in the same
    /// bucket on the same endpoint.
    ///
    /// - Parameters:
    ///   - lhs: A reference.
    ///   - rhs: Another reference.
    /// - Returns: True when bucket, endpoint, path and generation are equal.
    public static func == (lhs: StorageReference, rhs: StorageReference) -> Bool {
        lhs.storage.bucket == rhs.storage.bucket
            && lhs.storage.endpoint == rhs.storage.endpoint
            && lhs.path == rhs.path
            && lhs.generation == rhs.generation
    }

    /// Hashes the bucket, endpoint, path and generation: the parts equality compares.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.bucket)
        hasher.combine(storage.endpoint)
        hasher.combine(path)
        hasher.combine(generation)
    }
}
