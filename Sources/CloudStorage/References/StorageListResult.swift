/// One page of a listing: the objects directly under a reference, the
/// "folders" (common prefixes) below it, and where the next page starts.
///
/// ```swift
/// let page = try await storage.reference(withPath: "photos").list(maxResults: 100)
/// for folder in page.prefixes { print("folder", folder.fullPath) }
/// for item in page.items { print("object", item.fullPath) }
/// if let next = page.pageToken {
///     let following = try await storage.reference(withPath: "photos").list(maxResults: 100, pageToken: next)
///     print(following.items.count)
/// }
/// ```
public struct StorageListResult: Sendable, Hashable {
    /// References to the prefixes ("folders") directly below the listed
    /// reference, such as `photos/2024` when `photos/2024/a.jpg` exists.
    public let prefixes: [StorageReference]
    /// References to the objects directly below the listed reference.
    public let items: [StorageReference]
    /// The token that continues the listing with
    /// ``StorageReference/list(maxResults:pageToken:)``; nil on the last page.
    public let pageToken: String?
    /// The metadata the listing answer carried, by item.
    private let itemMetadata: [StorageReference: StorageMetadata]

    /// Creates a listing page. The SDK creates these; tests may too.
    ///
    /// ```swift
    /// let empty = StorageListResult(prefixes: [], items: [], pageToken: nil)
    /// ```
    ///
    /// - Parameters:
    ///   - prefixes: Prefix references.
    ///   - items: Object references.
    ///   - pageToken: The next page's token, if any.
    ///   - itemMetadata: The metadata of those items that came with theirs; entries
    ///     for references not among `items` are ignored.
    public init(
        prefixes: [StorageReference], items: [StorageReference], pageToken: String?,
        itemMetadata: [StorageReference: StorageMetadata] = [:]
    ) {
        self.prefixes = prefixes
        self.items = items
        self.pageToken = pageToken
        let listed = itemMetadata.isEmpty ? [] : Set(items)
        self.itemMetadata = itemMetadata.filter { listed.contains($0.key) }
    }

    /// The metadata of a listed object as the listing answer carried it, so that
    /// a listing shows sizes, times or checksums without one
    /// ``StorageReference/getMetadata()`` request per object.
    ///
    /// The GCS JSON API endpoint sends each object's resource with the listing:
    /// this is then what `getMetadata()` would have answered when the page was
    /// read (`size`, `generation`, `contentType`, `crc32c`, `updated`, custom
    /// metadata and the rest). It is nil for a Firebase Storage v0 endpoint,
    /// whose listings carry only names, for an item whose resource the server
    /// did not send in full or sent malformed, and for a reference that is not
    /// among ``items``; call `getMetadata()` for those.
    ///
    /// ```swift
    /// let page = try await storage.reference(withPath: "photos").list(maxResults: 100)
    /// for item in page.items {
    ///     let size = page.metadata(for: item)?.size
    ///     print(item.fullPath, size.map(String.init) ?? "?")
    /// }
    /// ```
    ///
    /// - Parameter item: One of ``items``.
    /// - Returns: Its listed metadata, or nil.
    public func metadata(for item: StorageReference) -> StorageMetadata? {
        itemMetadata[item]
    }
}
