/// How a ``Storage`` proves who it is to the server.
///
/// ```swift
/// let storage = Storage(
///     bucket: "my-bucket",
///     authorization: .tokenProvider { forceRefresh in
///         try await tokenSource.accessToken(forceRefresh: forceRefresh)
///     }
/// )
/// ```
///
/// Tokens are never sent over plain `http://` to a host other than this
/// machine: such a request fails with ``StorageErrorCode/invalidArgument``
/// before anything is sent.
public struct StorageAuthorization: Sendable {
    enum Kind: Sendable {
        case none
        case bearerToken(String)
        case tokenProvider(@Sendable (_ forceRefresh: Bool) async throws -> String)
    }

    let kind: Kind

    /// No `Authorization` header: for emulators and public buckets.
    public static let none = StorageAuthorization(kind: .none)

    /// The same OAuth 2 access token on every request, as `Authorization: Bearer <token>`.
    ///
    /// - Parameter token: The access token.
    /// - Returns: The authorization.
    public static func bearerToken(_ token: String) -> StorageAuthorization {
        StorageAuthorization(kind: .bearerToken(token))
    }

    /// A token fetched when needed: before each upload session or single
    /// request starts, and once more with `forceRefresh` set after the server
    /// answers HTTP 401.
    ///
    /// The provider should cache its token and return it quickly unless
    /// `forceRefresh` is true. An error it throws fails the operation with
    /// ``StorageErrorCode/unauthenticated``.
    ///
    /// - Parameter provider: Returns an access token.
    /// - Returns: The authorization.
    public static func tokenProvider(
        _ provider: @escaping @Sendable (_ forceRefresh: Bool) async throws -> String
    ) -> StorageAuthorization {
        StorageAuthorization(kind: .tokenProvider(provider))
    }

    /// Whether requests carry a credential at all.
    var sendsCredentials: Bool {
        if case .none = kind { return false }
        return true
    }

    /// The token to send, or nil for none.
    func token(forceRefresh: Bool) async throws(StorageError) -> String? {
        switch kind {
        case .none:
            return nil
        case .bearerToken(let token):
            return token
        case .tokenProvider(let provider):
            do {
                return try await provider(forceRefresh)
            } catch is CancellationError {
                throw .cancelled()
            } catch {
                throw StorageError(.unauthenticated, "The token provider failed.", underlyingError: error)
            }
        }
    }
}
