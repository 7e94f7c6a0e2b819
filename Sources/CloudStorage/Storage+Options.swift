import HTTPClient

extension Storage {
    /// This handle with `options` merged into its own (``StorageRequestOptions/merging(_:)``):
    /// every call of its references sends them.
    ///
    /// The copy shares the connections and credentials of this one, so making one per call costs
    /// nothing. ``StorageRequestOptions/retry``, ``StorageRequestOptions/timeouts``,
    /// ``StorageRequestOptions/chunkSize`` and ``StorageRequestOptions/decompressesDownloads``
    /// replace those of the copy's ``configuration``, where the engines read them.
    ///
    /// ```swift
    /// let billed = storage.with(.init(userProject: "my-billing-project"))
    /// for try await page in billed.reference(withPath: "logs").listPages(maxResults: 100) { … }
    /// ```
    ///
    /// - Parameter options: The options that win over this handle's.
    /// - Returns: A handle like this one that sends the merged options.
    public func with(_ options: StorageRequestOptions) -> Storage {
        Storage(client: client.with(options), bucket: bucket)
    }
}
