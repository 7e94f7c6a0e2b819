extension Storage {
    /// A reference to the root of the bucket.
    ///
    /// - Returns: The root reference; its ``StorageReference/fullPath`` is empty.
    public func reference() -> StorageReference {
        StorageReference(storage: self, path: StoragePath.root)
    }

    /// A reference to a path in the bucket, in the Firebase SDKs' path syntax.
    ///
    /// Slashes are normalized as by ``StorageReference/child(_:)``: `/a//b/`
    /// is `a/b`. A name with empty segments or a leading or trailing slash
    /// (`a//b`, `dir/`, `/lead`) is a different object; name it with
    /// ``reference(objectName:)``. Whether the path is a valid object name is
    /// checked when an operation uses it.
    ///
    /// ```swift
    /// let spaceRef = storage.reference(withPath: "images/space.jpg")
    /// ```
    ///
    /// - Parameter path: A path such as `images/space.jpg`.
    /// - Returns: The reference.
    public func reference(withPath path: String) -> StorageReference {
        reference().child(path)
    }

    /// A reference to the object named exactly `objectName`.
    ///
    /// Nothing is normalized: every legal Cloud Storage name is reachable,
    /// including those with empty segments or leading or trailing slashes,
    /// which ``reference(withPath:)`` would turn into another object's name.
    /// Use it for names that come from elsewhere (a database, a listing, a
    /// command line) and must be taken as they are. Whether the name is valid
    /// is checked when an operation uses it: an empty name is not, and its
    /// reference is not the root but the "folder" of the names that start with
    /// `/` (see ``StorageReference``, "Paths").
    ///
    /// ```swift
    /// let placeholder = storage.reference(objectName: "photos/")  // not the object "photos"
    /// let doubled = storage.reference(objectName: "logs//today")  // not "logs/today"
    /// assert(doubled.parent() == storage.reference(objectName: "logs/"))
    /// try await placeholder.delete()
    /// ```
    ///
    /// - Parameter objectName: The object's name, byte for byte.
    /// - Returns: The reference; its ``StorageReference/fullPath`` is `objectName`.
    public func reference(objectName: String) -> StorageReference {
        StorageReference(storage: self, path: StoragePath(exact: objectName))
    }
}
