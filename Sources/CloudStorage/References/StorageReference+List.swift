extension StorageReference {
    /// The largest page ``list(maxResults:pageToken:)`` may ask for.
    public static let maximumListResults = ProtocolLimits.maximumListResults

    /// Lists one page of the objects and prefixes directly below this reference.
    ///
    /// Lists the names that start with this reference's path and a slash
    /// (everything at the root). Objects in deeper "folders" are not listed;
    /// their first path segment below this reference appears once in
    /// ``StorageListResult/prefixes``. Items and prefixes are the server's
    /// names taken exactly (see ``StorageReference``, "Paths"): an item can be
    /// a folder placeholder such as `photos/`, and the prefix `a//` is the
    /// reference `a/`, whose own listing holds `a//b`.
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
    ///   when the bucket does not exist; ``StorageErrorCode/protocolViolation``
    ///   when the server lists a name that is not below this reference, or a
    ///   prefix that is not one level below it, or `pageToken` itself as the next page's token;
    ///   ``StorageErrorCode/cancelled``
    ///   when the calling task is cancelled.
    public func list(maxResults: Int, pageToken: String? = nil) async throws(StorageError) -> StorageListResult {
        guard (1...Self.maximumListResults).contains(maxResults) else {
            throw .invalidArgument("maxResults must be between 1 and \(Self.maximumListResults); it is \(maxResults).")
        }
        let wire = storage.objectProtocol
        let prefix = path.listingPrefix
        var executor = CallExecutor(storage: storage, operation: .other)
        let query = StorageObjectQuery(prefix: prefix, delimiter: "/", pageSize: maxResults)
        let request = wire.list(bucket: storage.bucket, query, pageToken: pageToken)
        let response = try await executor.execute(
            request, idempotency: .idempotent, accepting: [200], about: .bucket(storage.bucket))
        let page = try wire.listPage(from: response)
        var tokens = ListingPageTokens(startingAt: pageToken)
        try tokens.advance(to: page.nextPageToken)
        // Names from the server are taken exactly: normalizing them would list `a//b` as the
        // object `a/b`, and make the prefix `a//` the reference `a`, listed again for ever.
        var items: [StorageReference] = []
        for name in page.items {
            guard name.utf8.starts(with: prefix.utf8) else {
                throw .protocolViolation(
                    "The server listed the object \"\(name)\" when asked for the names below \"\(prefix)\".")
            }
            items.append(StorageReference(storage: storage, path: StoragePath(exact: name)))
        }
        var prefixes: [StorageReference] = []
        for listed in page.prefixes {
            guard let folder = Self.folder(listed, below: prefix) else {
                throw .protocolViolation(
                    "The server listed the prefix \"\(listed)\", which is not one level below \"\(prefix)\".")
            }
            prefixes.append(StorageReference(storage: storage, path: folder))
        }
        var itemMetadata: [StorageReference: StorageMetadata] = [:]
        for (item, metadata) in zip(items, page.metadata) {
            if let metadata { itemMetadata[item] = metadata }
        }
        return StorageListResult(
            prefixes: prefixes,
            items: items,
            pageToken: page.nextPageToken,
            itemMetadata: itemMetadata
        )
    }

    /// The path whose listing is `listed`, a prefix the server gave in a listing of `prefix`:
    /// `listed` without its final slash. Nil unless `listed` is `prefix`, then one segment
    /// (possibly empty) and a slash, and no longer than an object name can be, so that walking
    /// the prefixes of listings always goes down and always ends, whatever a server answers.
    static func folder(_ listed: String, below prefix: String) -> StoragePath? {
        let slash = UInt8(ascii: "/")
        let bytes = listed.utf8
        guard bytes.count <= StoragePath.maximumObjectNameBytes, bytes.starts(with: prefix.utf8),
            bytes.last == slash
        else { return nil }
        let segment = bytes.dropFirst(prefix.utf8.count).dropLast()
        // `listed` is longer than `prefix` (it has the slash after it), and holds a single segment.
        guard bytes.count > prefix.utf8.count, !segment.contains(slash) else { return nil }
        return StoragePath(exact: String(decoding: bytes.dropLast(), as: UTF8.self))
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
