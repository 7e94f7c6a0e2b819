extension Storage {
    /// Lists the objects of this bucket that `query` selects, as Cloud Storage's `objects.list`
    /// offers it: under any name prefix, flat or grouped by any delimiter, with a glob, name
    /// offsets, noncurrent versions and a page size.
    ///
    /// Nothing is sent until the listing is iterated. Each object comes with its metadata from
    /// the listing answer itself (no request per object), and a reference to its exact name.
    /// ``StorageReference/list(maxResults:pageToken:)`` and ``StorageReference/listAll()`` stay
    /// as the Firebase SDKs have them.
    ///
    /// ```swift
    /// // Every version of every object under logs/2024-, flat.
    /// var query = StorageObjectQuery(prefix: "logs/2024-")
    /// query.includesVersions = true
    /// for try await case .object(let object, let metadata?) in storage.objects(query) {
    ///     print(object.fullPath, metadata.generation ?? 0, metadata.size)
    /// }
    /// ```
    ///
    /// - Parameter query: What to list; by default every object of the bucket.
    /// - Returns: The listing, an asynchronous sequence of ``StorageListEntry``; see
    ///   ``StorageObjectListing`` for when it ends and what it throws.
    public func objects(_ query: StorageObjectQuery = StorageObjectQuery()) -> StorageObjectListing {
        StorageObjectListing(storage: self, query: query)
    }
}
