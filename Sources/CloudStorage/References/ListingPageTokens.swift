/// The page tokens one listing was given, so that a server that hands back a token it gave
/// before — which would list the same pages for ever — ends the listing with
/// ``StorageErrorCode/protocolViolation`` instead.
///
/// Holds one token per page read: a listing of a million objects keeps a thousand.
struct ListingPageTokens {
    private var seen: Set<String> = []
    /// The token of the page to fetch next; nil before the first page and after the last.
    private(set) var next: String?
    /// Whether the last page was read (or the listing failed).
    private(set) var finished = false

    /// Starts at the page `token` names, or at the first page.
    init(startingAt token: String? = nil) {
        next = token
        if let token { seen.insert(token) }
    }

    /// Records the token a page ended with: the listing goes on at it, or ends when it is nil.
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation`` when `token` was given before.
    mutating func advance(to token: String?) throws(StorageError) {
        next = token
        guard let token else {
            finished = true
            return
        }
        guard seen.insert(token).inserted else {
            finished = true
            throw .protocolViolation(
                "The server gave the page token \"\(token)\" a second time in one listing, "
                    + "which would list the same pages for ever.")
        }
    }

    /// Ends the listing, after an error.
    mutating func finish() { finished = true }
}
