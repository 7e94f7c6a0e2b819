import Foundation

/// A Google credential and its token cache: what ``StorageAuthorization/applicationDefault``,
/// ``StorageAuthorization/serviceAccount(keyFile:scopes:)`` and the other credential kinds hold.
///
/// A reference type created with the authorization value, so that every copy of that value,
/// and every ``Storage`` using it, shares one cache and one exchange in flight.
final class OAuthCredential: Sendable, CustomStringConvertible {
    /// Where the tokens come from.
    enum Origin: Sendable {
        /// Known at construction.
        case source(CredentialSource)
        /// Found by Application Default Credentials at first use.
        case applicationDefault(ApplicationDefaultCredentials)
    }

    /// Read-write access to Cloud Storage, the scope asked for unless the caller says otherwise.
    static let defaultScopes = ["https://www.googleapis.com/auth/devstorage.read_write"]

    let origin: Origin
    let scopes: [String]
    let cache: TokenCache

    /// - Parameters:
    ///   - origin: Where tokens come from.
    ///   - scopes: The OAuth scopes asked for.
    ///   - now: The clock the cache judges freshness by (tests move it).
    init(
        origin: Origin, scopes: [String] = OAuthCredential.defaultScopes,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.origin = origin
        self.scopes = scopes
        self.cache = TokenCache(now: now) { (context) async throws(StorageError) -> AccessToken in
            try await Self.source(of: origin, context: context).fetchToken(scopes: scopes, context: context)
        }
    }

    /// A fresh token, from the cache or from one exchange shared by every caller waiting.
    ///
    /// - Parameter stale: A token the storage server refused; see ``TokenCache/token(context:replacing:)``.
    func token(context: TokenRequestContext, replacing stale: String? = nil) async throws(StorageError) -> AccessToken {
        try await cache.token(context: context, replacing: stale)
    }

    /// The credential's source, found by Application Default Credentials if need be.
    func source(context: TokenRequestContext) async throws(StorageError) -> CredentialSource {
        try await Self.source(of: origin, context: context)
    }

    private static func source(
        of origin: Origin, context: TokenRequestContext
    ) async throws(StorageError) -> CredentialSource {
        switch origin {
        case .source(let source): source
        case .applicationDefault(let finder): try await finder.resolve(context: context)
        }
    }

    var description: String {
        switch origin {
        case .source(let source): source.summary
        case .applicationDefault: "Application Default Credentials"
        }
    }
}
