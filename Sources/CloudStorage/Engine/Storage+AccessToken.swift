extension Storage {
    /// Finds the credential (Application Default Credentials) and fetches a token into its
    /// cache, as the first operation would; nothing for authorizations that are not Google
    /// credentials. Lets a tool fail early, in one line, on a machine without credentials.
    ///
    /// - Throws: What the first operation would: ``StorageErrorCode/unauthenticated`` when
    ///   nothing is found or the token endpoint refuses, and the rest.
    package func fetchAccessToken() async throws(StorageError) {
        guard let credential = authorization.oauthCredential else { return }
        _ = try await credential.token(context: TokenRequestContext(storage: self, operation: .other))
    }
}
