extension StorageReference {
    /// The largest page ``list(maxResults:pageToken:)`` may ask for.
    public static let maximumListResults = 1000

    /// Lists one page of the objects and prefixes directly below this reference.
    ///
    /// Objects in deeper "folders" are not listed; their first path segment
    /// below this reference appears once in ``StorageListResult/prefixes``.
    /// Pass the ``StorageListResult/pageToken`` of one page to get the next.
    /// Listing the root reference lists the top of the bucket. On a GCS JSON API
    /// endpoint the page also holds each object's metadata
    /// (``StorageListResult/metadata(for:)``).
    ///
    /// ```swift
    /// let first = try await storage.reference(withPath: "photos").list(maxResults: 50)
    /// if let token = first.pageToken {
    ///     let second = try await storage.reference(withPath: "photos").list(maxResults: 50, pageToken: token)
    ///     print(second.items.map(\.name))
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - maxResults: The most items and prefixes the page holds together, 1 to 1000.
    ///   - pageToken: The token of the previous page; nil for the first page.
    /// - Returns: The page.
    /// - Throws: ``StorageError``: ``StorageErrorCode/invalidArgument`` when
    ///   `maxResults` is outside 1…1000; ``StorageErrorCode/bucketNotFound``
    ///   when the bucket does not exist; ``StorageErrorCode/cancelled`` when
    ///   the calling task is cancelled.
    public func list(maxResults: Int, pageToken: String? = nil) async throws(StorageError) -> StorageListResult {
        guard (1...Self.maximumListResults).contains(maxResults) else {
            throw .invalidArgument("maxResults must be between 1 and \(Self.maximumListResults); it is \(maxResults).")
        }
        let wire = storage.endpoint.objectProtocol
        let prefix = path.isRoot ? "" : path.string + "/"
        var runner = RequestRunner(storage: storage, operation: .other)
        let request = wire.list(bucket: storage.bucket, prefix: prefix, maxResults: maxResults, pageToken: pageToken)
        let response = try await runner.sendRetrying(request, accepting: [200], about: .bucket(storage.bucket))
        let page = try wire.listPage(from: response)
        let root = root()
        let items = page.items.map { root.child($0) }
        var itemMetadata: [StorageReference: StorageMetadata] = [:]
        for (item, metadata) in zip(items, page.metadata) {
            if let metadata { itemMetadata[item] = metadata }
        }
        return StorageListResult(
            prefixes: page.prefixes.map { root.child($0) },
            items: items,
            pageToken: page.nextPageToken,
            itemMetadata: itemMetadata
        )
    }

    /// Lists every object and prefix directly below this reference, fetching
    /// page after page.
    ///
    /// Everything is held in memory at once; for a large listing iterate
    /// ``pages(maxResults:)`` instead.
    ///
    /// ```swift
    /// let all = try await storage.reference(withPath: "photos").listAll()
    /// print(all.items.count, "objects in", all.prefixes.count, "folders")
    /// ```
    ///
    /// - Returns: One result holding every item and prefix, and the metadata
    ///   of every item whose page carried it
    ///   (``StorageListResult/metadata(for:)``); its
    ///   ``StorageListResult/pageToken`` is nil.
    /// - Throws: As ``list(maxResults:pageToken:)``.
    public func listAll() async throws(StorageError) -> StorageListResult {
        var prefixes: [StorageReference] = []
        var items: [StorageReference] = []
        var itemMetadata: [StorageReference: StorageMetadata] = [:]
        var seenPrefixes = Set<StorageReference>()
        var pages = pages(maxResults: Self.maximumListResults).makeAsyncIterator()
        while let page = try await pages.next() {
            // A prefix can come back on several pages; list it once.
            for prefix in page.prefixes where seenPrefixes.insert(prefix).inserted {
                prefixes.append(prefix)
            }
            for item in page.items {
                items.append(item)
                if let metadata = page.metadata(for: item) { itemMetadata[item] = metadata }
            }
        }
        return StorageListResult(prefixes: prefixes, items: items, pageToken: nil, itemMetadata: itemMetadata)
    }

    /// The pages of a listing of this reference, as an asynchronous sequence
    /// that fetches each page when it is needed.
    ///
    /// ```swift
    /// for try await page in storage.reference().pages(maxResults: 1000) {
    ///     for item in page.items { print(item.fullPath) }
    /// }
    /// ```
    ///
    /// - Parameter maxResults: The most items and prefixes per page, 1 to 1000.
    /// - Returns: The pages; iterating fails with
    ///   ``StorageErrorCode/invalidArgument`` when `maxResults` is outside 1…1000.
    public func pages(maxResults: Int = StorageReference.maximumListResults) -> StorageListPages {
        StorageListPages(reference: self, maxResults: maxResults)
    }
}
