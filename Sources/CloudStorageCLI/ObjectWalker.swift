import CloudStorage

/// Walks the listing below a reference page by page, in name order: one level
/// (objects and the prefixes directly below), or, recursively, every object
/// below. A recursive walk is one flat listing (``Storage/objects(_:)`` without a
/// delimiter) where the endpoint has it, a request per page whatever the depth; on
/// Firebase v0, which lists one level at a time, it descends into each prefix where
/// it falls in name order, the same objects in the same order.
///
/// Memory is bounded by one page per level of depth: nothing is collected
/// beyond the pages being walked, so output can go out as pages arrive.
///
/// Every name is the server's, exact: an object whose name ends in `/` (a
/// folder placeholder, such as consoles create) is an object like any other,
/// and the prefix `pfx//` is walked as itself, never as `pfx/` again.
///
/// The walk always ends, whatever the server answers: the SDK refuses a
/// listing whose names or prefixes are not below the prefix asked for (each
/// level is deeper, and names are at most 1024 bytes), and a prefix that does
/// not come after the last one walked at its level, in name order, is not
/// walked again.
struct ObjectWalker {
    /// One entry of a listing.
    enum Entry {
        /// A "folder": names go on below it. Only given when not recursive.
        case prefix(StorageReference)
        /// An object, with its metadata when the listing carried it (GCS JSON API; nil on Firebase v0).
        case object(StorageReference, listed: StorageMetadata?)
    }

    let root: StorageReference
    let recursive: Bool
    /// The most entries a page holds (1 to 1000).
    let pageSize: Int
    /// Every generation of each object, noncurrent ones too (Google Cloud Storage only).
    var versions = false

    private struct Level {
        var pages: StorageListPages.Iterator
        var pending: ArraySlice<(key: [UInt8], entry: Entry)> = []
        /// The last prefix taken, as bytes: one may come back at the start of the next page,
        /// and a prefix that does not sort after it was taken already.
        var lastPrefix: [UInt8] = []
    }

    /// Calls `entry` for each entry, in name order; calls `pageDone` after the entries of
    /// each page were given and before the next page is fetched, and once at the end.
    ///
    /// - Parameters:
    ///   - entry: Takes one entry.
    ///   - pageDone: Returns false to stop walking (the output went away).
    /// - Throws: The first listing error.
    func walk(
        entry: (Entry) -> Void, pageDone: () async -> Bool
    ) async throws(StorageError) {
        // The names below `root`: its path and a slash, or everything at the root.
        let prefix = root.parent() == nil ? "" : root.fullPath + "/"
        var flat = StorageObjectQuery(prefix: prefix, includesVersions: versions, pageSize: pageSize)
        if !recursive { flat.delimiter = "/" }
        if recursive || versions, versions || (try? flat.validate(for: root.storage.endpoint)) != nil {
            // A prefix can come back at the start of the next page: give it once.
            var lastPrefix: [UInt8] = []
            for try await page in root.storage.objects(flat).pages {
                for listed in page.entries {
                    switch listed {
                    case .object(let object, let metadata): entry(.object(object, listed: metadata))
                    case .prefix(let text, let folder?) where lastPrefix.lexicographicallyPrecedes(text.utf8):
                        lastPrefix = Array(text.utf8)
                        entry(.prefix(folder))
                    case .prefix: continue
                    }
                }
                guard await pageDone() else { return }
            }
            return
        }
        var stack = [Self.level(root, pageSize: pageSize)]
        var pagesFetched = 0
        while let top = stack.indices.last {
            guard let (_, next) = stack[top].pending.first else {
                if pagesFetched > 0 { guard await pageDone() else { return } }
                guard let page = try await stack[top].pages.next() else {
                    stack.removeLast()
                    continue
                }
                pagesFetched += 1
                var merged = page.items.map {
                    (key: Array($0.fullPath.utf8), entry: Entry.object($0, listed: page.metadata(for: $0)))
                }
                let prefixes = page.prefixes.map { (key: Array(($0.fullPath + "/").utf8), prefix: $0) }
                for (key, prefix) in prefixes.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) })
                where stack[top].lastPrefix.lexicographicallyPrecedes(key) {
                    stack[top].lastPrefix = key
                    merged.append((key, .prefix(prefix)))
                }
                merged.sort { $0.key.lexicographicallyPrecedes($1.key) }
                stack[top].pending = merged[...]
                continue
            }
            stack[top].pending.removeFirst()
            if case .prefix(let prefix) = next, recursive {
                stack.append(Self.level(prefix, pageSize: pageSize))
            } else {
                entry(next)
            }
        }
        _ = await pageDone()
    }

    private static func level(_ reference: StorageReference, pageSize: Int) -> Level {
        Level(pages: reference.pages(maxResults: pageSize).makeAsyncIterator())
    }
}
