/// How a ``Storage`` proves who it is to the server.
///
/// On Google Cloud, or wherever `gcloud` or a key file provides credentials, let the SDK
/// find them (``applicationDefault``); otherwise bring a token:
///
/// ```swift
/// let production = Storage(bucket: "my-bucket", authorization: .applicationDefault)
/// ```
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
/// The header's scheme is the endpoint's: `Authorization: Bearer <token>`
/// for the Google Cloud Storage JSON API (OAuth 2 access tokens),
/// `Authorization: Firebase <token>` for Firebase Storage v0 (Firebase ID
/// tokens).
///
/// Tokens are never sent over plain `http://` to a host other than this
/// machine: such a request fails with ``StorageErrorCode/invalidArgument``
/// before anything is sent. ``emulatorOwner`` is the one exception: it is
/// not a secret.
/// Google credentials (``applicationDefault``, ``serviceAccount(keyFile:scopes:)``,
/// ``authorizedUser(file:)``, ``metadataServer(scopes:)``) are always sent as
/// `Authorization: Bearer <access token>`, plus `x-goog-user-project` when the credential
/// names a quota project. Their tokens are cached until shortly before they expire, shared
/// by every copy of the value and every `Storage` using it, and refreshed by one request
/// however many operations need a new one at once.
///
/// A value's descriptions (`print`, `dump`, string interpolation) never show a token or
/// other secret.
public struct StorageAuthorization: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    enum Kind: Sendable {
        case none
        case bearerToken(String)
        case tokenProvider(@Sendable (_ forceRefresh: Bool) async throws -> String)
        case emulatorOwner
        /// A Google credential with its shared token cache.
        case credential(OAuthCredential)
    }

    let kind: Kind

    /// No `Authorization` header: for emulators and public buckets.
    public static let none = StorageAuthorization(kind: .none)

    /// The same token on every request: an OAuth 2 access token, sent as
    /// `Authorization: Bearer <token>` to the GCS JSON API, or a Firebase ID
    /// token, sent as `Authorization: Firebase <token>` to Firebase Storage.
    ///
    /// ```swift
    /// let storage = Storage(bucket: "my-bucket", authorization: .bearerToken(accessToken))
    /// ```
    ///
    /// - Parameter token: The token.
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

    /// The Firebase emulator's administrator, `owner`: requests bypass the
    /// emulator's Security Rules, as those of the Firebase Admin SDKs do.
    ///
    /// Sent as `Authorization: Firebase owner` to a ``StorageEndpoint/firebase(_:)``
    /// endpoint and `Authorization: Bearer owner` to a ``StorageEndpoint/gcs(_:)``
    /// one; the Firebase emulator accepts both. The word `owner` is no secret,
    /// so unlike real tokens it may travel over plain HTTP to any host (an
    /// emulator in another container, say). Real servers refuse it.
    ///
    /// ```swift
    /// let storage = Storage(
    ///     bucket: "my-app.appspot.com",
    ///     endpoint: .firebase(URL(string: "http://127.0.0.1:9199")!),
    ///     authorization: .emulatorOwner
    /// )
    /// ```
    public static let emulatorOwner = StorageAuthorization(kind: .emulatorOwner)

    /// Whether the credential must be kept from eavesdroppers (every one but
    /// ``emulatorOwner``).
    var isSecret: Bool {
        if case .emulatorOwner = kind { return false }
        return true
    }

    /// Whether a request the server answers with HTTP 401 is sent once more with a new token
    /// (only a credential that can fetch one).
    var refreshesAfterRefusal: Bool {
        switch kind {
        case .tokenProvider, .credential: true
        case .none, .bearerToken, .emulatorOwner: false
        }
    }

    /// The token to send, or nil for none. Not for ``Kind/credential(_:)``, whose tokens come
    /// from its cache (see ``CallExecutor``).
    func token(forceRefresh: Bool) async throws(StorageError) -> String? {
        switch kind {
        case .none, .credential:
            return nil
        case .bearerToken(let token):
            return token
        case .emulatorOwner:
            return "owner"
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

    /// What the value is, without any secret: `StorageAuthorization.bearerToken(<redacted>)`.
    public var description: String {
        switch kind {
        case .none: "StorageAuthorization.none"
        case .bearerToken: "StorageAuthorization.bearerToken(<redacted>)"
        case .tokenProvider: "StorageAuthorization.tokenProvider(<function>)"
        case .emulatorOwner: "StorageAuthorization.emulatorOwner"
        case .credential(let credential): "StorageAuthorization(\(credential))"
        }
    }

    /// The same as ``description``: never a secret.
    public var debugDescription: String { description }

    /// No children, so that `dump` and debuggers show ``description`` and never a secret.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
