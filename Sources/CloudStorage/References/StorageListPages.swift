/// The pages of a listing, fetched one at a time as they are iterated.
///
/// Created by ``StorageReference/pages(maxResults:)``. Each `next()` sends one
/// request, so a bucket of any size is listed in bounded memory. The sequence
/// ends after the page without a ``StorageListResult/pageToken``; an error
/// ends it by being thrown, and a page token the server gave before in the
/// listing (which would list the same pages for ever) is
/// ``StorageErrorCode/protocolViolation``. Cancelling the iterating task cancels the request
/// in flight. Iterating the sequence again starts the listing over.
///
/// ```swift
/// var count = 0
/// for try await page in storage.reference(withPath: "logs").pages(maxResults: 500) {
///     count += page.items.count
/// }
/// print(count, "objects")
/// ```
public struct StorageListPages: AsyncSequence, Sendable {
    /// Each element is one page.
    public typealias Element = StorageListResult
    /// Errors are ``StorageError``s.
    public typealias Failure = StorageError

    let reference: StorageReference
    let maxResults: Int

    /// Starts a new listing.
    ///
    /// - Returns: An iterator at the first page.
    public func makeAsyncIterator() -> Iterator {
        Iterator(reference: reference, maxResults: maxResults)
    }

    /// Fetches the pages of one listing in order. Not `Sendable`: iterate it
    /// from one task.
    public struct Iterator: AsyncIteratorProtocol {
        let reference: StorageReference
        let maxResults: Int
        private var tokens = ListingPageTokens()

        init(reference: StorageReference, maxResults: Int) {
            self.reference = reference
            self.maxResults = maxResults
        }

        /// The next page, or nil after the last one.
        ///
        /// - Returns: The page.
        /// - Throws: As ``StorageReference/list(maxResults:pageToken:)``.
        public mutating func next() async throws(StorageError) -> StorageListResult? {
            try await next(isolation: nil)
        }

        /// The next page, or nil after the last one.
        ///
        /// - Parameter actor: The caller's isolation.
        /// - Returns: The page.
        /// - Throws: As ``StorageReference/list(maxResults:pageToken:)``.
        public mutating func next(
            isolation actor: isolated (any Actor)?
        ) async throws(StorageError)
            -> StorageListResult?
        {
            guard !tokens.finished else { return nil }
            do throws(StorageError) {
                let page = try await reference.list(maxResults: maxResults, pageToken: tokens.next)
                try tokens.advance(to: page.pageToken)
                return page
            } catch {
                tokens.finish()
                throw error
            }
        }
    }
}

@available(*, unavailable)
extension StorageListPages.Iterator: Sendable {}
