extension StorageReference {
    /// This reference with `options` merged into its storage's (``Storage/with(_:)``): every
    /// call on it — and every task it starts, with each of its requests — sends them.
    ///
    /// ```swift
    /// let key = try StorageEncryptionKey(base64: keyText)
    /// let secret = storage.reference(withPath: "vault/report.pdf").with(.init(encryptionKey: key))
    /// _ = try await secret.putDataAsync(report)
    /// let metadata = try await secret.getMetadata()  // needs the key for its hashes
    /// ```
    ///
    /// - Parameter options: The options that win over the storage's.
    /// - Returns: The same object's reference, sending the merged options.
    public func with(_ options: StorageRequestOptions) -> StorageReference {
        StorageReference(storage: storage.with(options), path: path, generation: generation)
    }
}
