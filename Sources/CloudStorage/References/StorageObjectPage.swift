/// One page of a listing by ``Storage/objects(_:)``: its entries in name order, and the token
/// of the page after it.
///
/// A server that lists on behalf of its own clients hands them ``nextPageToken`` and gets it
/// back with their next call:
///
/// ```swift
/// let listing = storage.objects(StorageObjectQuery(prefix: "users/\(userID)/", pageSize: 100))
/// let page = try await listing.page(token: tokenFromClient)
/// respond(names: page.entries.map(\.name), next: page.nextPageToken)
/// ```
public struct StorageObjectPage: Sendable, Hashable {
    /// The objects and prefixes of the page, in name order (an object before a prefix of the
    /// same text; versions of one name by generation, as listed).
    public let entries: [StorageListEntry]
    /// The token that continues the listing with ``StorageObjectListing/page(token:)``; nil on
    /// the last page.
    public let nextPageToken: String?

    /// Creates a page. The SDK creates these; tests may too.
    ///
    /// ```swift
    /// let empty = StorageObjectPage(entries: [], nextPageToken: nil)
    /// ```
    ///
    /// - Parameters:
    ///   - entries: The entries, in order.
    ///   - nextPageToken: The next page's token, if any.
    public init(entries: [StorageListEntry], nextPageToken: String?) {
        self.entries = entries
        self.nextPageToken = nextPageToken
    }
}
