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
    public init(prefixes: [StorageReference], items: [StorageReference], pageToken: String?) {
        self.prefixes = prefixes
        self.items = items
        self.pageToken = pageToken
    }
}
