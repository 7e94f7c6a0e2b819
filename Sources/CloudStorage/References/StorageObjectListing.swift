/// The objects and prefixes a ``StorageObjectQuery`` selects, as an asynchronous sequence of
/// ``StorageListEntry``, fetched a page at a time as they are iterated.
///
/// Created by ``Storage/objects(_:)``. Each page is one request, sent when the entries before
/// it have been taken — never more than the page being iterated is held — so a bucket of any
/// size is listed in bounded memory. The query is checked before the first request; every
/// name is the server's, exact; prefixes come once each, in name order with the objects.
///
/// Termination: the sequence ends after the entries of the page without a next page token.
/// An error ends it by being thrown: ``StorageErrorCode/invalidArgument`` for a query the
/// endpoint cannot answer (before any request); ``StorageErrorCode/protocolViolation`` when the
/// server lists an object outside the query's prefix or offsets, a prefix that is not one
/// delimiter below the query's prefix, an object without its resource (Google Cloud Storage),
/// or a page token it gave before in this listing (which would loop for ever);
/// ``StorageErrorCode/bucketNotFound``; ``StorageErrorCode/cancelled`` when the iterating task
/// is cancelled (checked before each page, and the request in flight is cancelled). Iterating
/// again starts the listing over.
///
/// ```swift
/// var total: Int64 = 0
/// for try await entry in storage.objects(StorageObjectQuery(prefix: "logs/2024-")) {
///     if case .object(_, let metadata?) = entry { total += metadata.size }
/// }
/// print(total, "bytes")
/// ```
///
/// ``pages`` gives the same listing a page at a time, and ``page(token:)`` one page at a
/// token, for a server that hands page tokens to its own clients.
public struct StorageObjectListing: AsyncSequence, Sendable {
    /// Each element is an object or a prefix.
    public typealias Element = StorageListEntry
    /// Errors are ``StorageError``s.
    public typealias Failure = StorageError

    /// The bucket listed.
    public let storage: Storage
    /// What is listed.
    public let query: StorageObjectQuery

    /// The listing a page at a time: each element is one ``StorageObjectPage``.
    ///
    /// ```swift
    /// for try await page in storage.objects(StorageObjectQuery(prefix: "photos/")).pages {
    ///     print(page.entries.count, "entries")
    /// }
    /// ```
    public var pages: Pages { Pages(listing: self) }

    /// Reads one page: the first, or the one `token` names.
    ///
    /// ```swift
    /// let listing = storage.objects(StorageObjectQuery(prefix: "photos/", pageSize: 50))
    /// let first = try await listing.page()
    /// if let token = first.nextPageToken {
    ///     let second = try await listing.page(token: token)
    ///     print(second.entries.map(\.name))
    /// }
    /// ```
    ///
    /// - Parameter token: A ``StorageObjectPage/nextPageToken`` of this query's listing; nil
    ///   (or empty) for the first page.
    /// - Returns: The page.
    /// - Throws: As iterating the listing does (see ``StorageObjectListing``), and
    ///   ``StorageErrorCode/protocolViolation`` when the server answers with `token` itself as
    ///   the next page's token.
    public func page(token: String? = nil) async throws(StorageError) -> StorageObjectPage {
        let token = token.flatMap { $0.isEmpty ? nil : $0 }
        try query.validate(for: storage.endpoint)
        if Task.isCancelled { throw .cancelled() }
        let wire = storage.objectProtocol
        var executor = CallExecutor(storage: storage, operation: .other)
        let response = try await executor.execute(
            wire.list(bucket: storage.bucket, query, pageToken: token), idempotency: .idempotent, accepting: [200],
            about: .bucket(storage.bucket))
        let listed = try wire.listPage(from: response)
        var tokens = ListingPageTokens(startingAt: token)
        try tokens.advance(to: listed.nextPageToken)
        return StorageObjectPage(entries: try entries(of: listed), nextPageToken: listed.nextPageToken)
    }

    /// The entries of a page the server answered, checked against the query, in name order.
    private func entries(of page: ObjectListPage) throws(StorageError) -> [StorageListEntry] {
        let prefix = Array(query.prefix.utf8)
        let delimiter = query.delimiter.map { Array($0.utf8) }
        let needsResources = storage.endpoint.wireProtocol == .gcsJSON
        var keyed: [KeyedEntry] = []
        keyed.reserveCapacity(page.items.count + page.prefixes.count)
        for (index, name) in page.items.enumerated() {
            let bytes = Array(name.utf8)
            try checkListedObject(name, bytes, prefix: prefix, delimiter: delimiter)
            let metadata = index < page.metadata.count ? page.metadata[index] : nil
            if needsResources, metadata == nil {
                throw .protocolViolation(
                    "The server listed the object \"\(name)\" without a complete, well-formed object resource.")
            }
            // In a listing of versions each item is one generation, and its reference names that one.
            let object = StorageReference(
                storage: storage, path: StoragePath(exact: name),
                generation: query.includesVersions ? metadata?.generation : nil)
            keyed.append((bytes, index, .object(object, metadata)))
        }
        try appendPrefixes(of: page, to: &keyed, prefix: prefix, delimiter: delimiter)
        // Name order; an object before the prefix of the same text (a trailing-delimiter object),
        // and otherwise as listed, which keeps a name's versions in generation order.
        keyed.sort { $0.key == $1.key ? $0.rank < $1.rank : $0.key.lexicographicallyPrecedes($1.key) }
        return keyed.map(\.entry)
    }

    /// A listed entry with its name's bytes (the sort key) and its rank in the page as listed.
    private typealias KeyedEntry = (key: [UInt8], rank: Int, entry: StorageListEntry)

    /// Checks that the object the server listed as `name` (whose UTF-8 is `bytes`) is one the
    /// query selects: under its prefix, within its offsets, and not past a delimiter.
    private func checkListedObject(
        _ name: String, _ bytes: [UInt8], prefix: [UInt8], delimiter: [UInt8]?
    ) throws(StorageError) {
        guard bytes.starts(with: prefix) else {
            throw .protocolViolation(
                "The server listed the object \"\(name)\" when asked for the names that start with "
                    + "\"\(query.prefix)\".")
        }
        if let start = query.startOffset, bytes.lexicographicallyPrecedes(start.utf8) {
            throw .protocolViolation(
                "The server listed the object \"\(name)\", before the startOffset \"\(start)\".")
        }
        if let end = query.endOffset, !bytes.lexicographicallyPrecedes(end.utf8) {
            throw .protocolViolation(
                "The server listed the object \"\(name)\", not before the endOffset \"\(end)\".")
        }
        if let delimiter, let end = Self.endOfFirst(delimiter, in: bytes, from: prefix.count),
            !(query.includesTrailingDelimiter && end == bytes.count)
        {
            throw .protocolViolation(
                "The server listed the object \"\(name)\", whose name goes on past the delimiter "
                    + "after \"\(query.prefix)\", instead of its prefix.")
        }
    }

    /// Checks the prefixes the server listed in `page` — each one delimiter below the query's
    /// prefix, and none without a delimiter — and appends their entries to `keyed`, ranked after
    /// the page's objects.
    private func appendPrefixes(
        of page: ObjectListPage, to keyed: inout [KeyedEntry], prefix: [UInt8], delimiter: [UInt8]?
    ) throws(StorageError) {
        if delimiter == nil, let listed = page.prefixes.first {
            throw .protocolViolation("The server listed the prefix \"\(listed)\" in a listing without a delimiter.")
        }
        for (index, listed) in page.prefixes.enumerated() {
            let bytes = Array(listed.utf8)
            // One delimiter below the query's prefix: its first delimiter ends it.
            guard let delimiter, bytes.starts(with: prefix),
                Self.endOfFirst(delimiter, in: bytes, from: prefix.count) == bytes.count
            else {
                throw .protocolViolation(
                    "The server listed the prefix \"\(listed)\", which is not the prefix \"\(query.prefix)\" "
                        + "followed by names' text up to a delimiter.")
            }
            let folder =
                bytes.last == UInt8(ascii: "/")
                ? StorageReference(
                    storage: storage, path: StoragePath(exact: String(decoding: bytes.dropLast(), as: UTF8.self)))
                : nil
            keyed.append((bytes, page.items.count + index, .prefix(listed, folder: folder)))
        }
    }

    /// The index just past the first occurrence of `needle` in `bytes` at or after `start`.
    private static func endOfFirst(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        for index in start...(bytes.count - needle.count)
        where bytes[index..<index + needle.count].elementsEqual(needle) {
            return index + needle.count
        }
        return nil
    }

    /// Starts a new listing.
    ///
    /// - Returns: An iterator before the first entry.
    public func makeAsyncIterator() -> Iterator {
        Iterator(pages: pages.makeAsyncIterator())
    }

    /// Gives the entries of one listing in order, fetching the next page when the entries
    /// before it have been taken. Not `Sendable`: iterate it from one task.
    public struct Iterator: AsyncIteratorProtocol {
        private var pages: Pages.Iterator
        private var buffered: ArraySlice<StorageListEntry> = []
        /// The last prefix given, as bytes: a prefix can come back on the next page.
        private var lastPrefix: [UInt8]?

        init(pages: Pages.Iterator) {
            self.pages = pages
        }

        /// The next entry, or nil after the last one.
        ///
        /// - Returns: The entry.
        /// - Throws: See ``StorageObjectListing``.
        public mutating func next() async throws(StorageError) -> StorageListEntry? {
            try await next(isolation: nil)
        }

        /// The next entry, or nil after the last one.
        ///
        /// - Parameter actor: The caller's isolation.
        /// - Returns: The entry.
        /// - Throws: See ``StorageObjectListing``.
        public mutating func next(
            isolation actor: isolated (any Actor)?
        ) async throws(StorageError) -> StorageListEntry? {
            while true {
                while let entry = buffered.popFirst() {
                    guard case .prefix(let prefix, _) = entry else { return entry }
                    let key = Array(prefix.utf8)
                    if let lastPrefix, !lastPrefix.lexicographicallyPrecedes(key) { continue }
                    lastPrefix = key
                    return entry
                }
                guard let page = try await pages.next(isolation: actor) else { return nil }
                buffered = page.entries[...]
            }
        }
    }

    /// The pages of a listing, fetched one at a time as they are iterated; see ``pages``.
    public struct Pages: AsyncSequence, Sendable {
        /// Each element is one page.
        public typealias Element = StorageObjectPage
        /// Errors are ``StorageError``s.
        public typealias Failure = StorageError

        let listing: StorageObjectListing

        /// Starts a new listing.
        ///
        /// - Returns: An iterator at the first page.
        public func makeAsyncIterator() -> Iterator {
            Iterator(listing: listing)
        }

        /// Fetches the pages of one listing in order. Not `Sendable`: iterate it from one task.
        public struct Iterator: AsyncIteratorProtocol {
            let listing: StorageObjectListing
            private var tokens = ListingPageTokens()

            init(listing: StorageObjectListing) {
                self.listing = listing
            }

            /// The next page, or nil after the last one.
            ///
            /// - Returns: The page.
            /// - Throws: See ``StorageObjectListing``.
            public mutating func next() async throws(StorageError) -> StorageObjectPage? {
                try await next(isolation: nil)
            }

            /// The next page, or nil after the last one.
            ///
            /// - Parameter actor: The caller's isolation.
            /// - Returns: The page.
            /// - Throws: See ``StorageObjectListing``.
            public mutating func next(
                isolation actor: isolated (any Actor)?
            ) async throws(StorageError) -> StorageObjectPage? {
                guard !tokens.finished else { return nil }
                do throws(StorageError) {
                    let page = try await listing.page(token: tokens.next)
                    try tokens.advance(to: page.nextPageToken)
                    return page
                } catch {
                    tokens.finish()
                    throw error
                }
            }
        }
    }
}

@available(*, unavailable)
extension StorageObjectListing.Iterator: Sendable {}

@available(*, unavailable)
extension StorageObjectListing.Pages.Iterator: Sendable {}
