import Foundation
import Synchronization

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

    /// The scope IAM's `signBlob` requires (a storage scope is not enough).
    static let cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

    let origin: Origin
    let scopes: [String]
    let cache: TokenCache
    /// This credential with ``cloudPlatformScope``, made on first use and kept, so its tokens are cached too.
    private let cloudPlatformScoped = Mutex<OAuthCredential?>(nil)

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
        let fetches = Atomic<Int>(0)
        self.cache = TokenCache(now: now) { (context) async throws(StorageError) -> AccessToken in
            let refresh = fetches.add(1, ordering: .relaxed).oldValue > 0
            let started = ContinuousClock.now
            var kind = origin.kind
            do throws(StorageError) {
                let source = try await Self.source(of: origin, context: context)
                kind = origin.kind(resolvedTo: source)
                let token = try await source.fetchToken(scopes: scopes, context: context)
                Self.report(kind: kind, refresh: refresh, since: started, failure: nil, to: context.events)
                return token
            } catch {
                Self.report(kind: kind, refresh: refresh, since: started, failure: error, to: context.events)
                throw error
            }
        }
    }

    /// A fresh token, from the cache or from one exchange shared by every caller waiting.
    ///
    /// - Parameter stale: A token the storage server refused; see ``TokenCache/token(context:replacing:)``.
    func token(context: TokenRequestContext, replacing stale: String? = nil) async throws(StorageError) -> AccessToken {
        try await cache.token(context: context, replacing: stale)
    }

    /// The same credential asking for ``cloudPlatformScope``, for IAM `signBlob` calls: itself
    /// when it already has that scope, otherwise one sibling kept for the life of this one.
    func withCloudPlatformScope() -> OAuthCredential {
        if scopes.contains(Self.cloudPlatformScope) { return self }
        return cloudPlatformScoped.withLock { sibling in
            if let sibling { return sibling }
            let made = OAuthCredential(origin: origin, scopes: [Self.cloudPlatformScope])
            sibling = made
            return made
        }
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

    /// Reports a token fetch: the credential's kind, whether it replaced a token, how it ended. Never the token.
    private static func report(
        kind: String, refresh: Bool, since start: ContinuousClock.Instant, failure: StorageError?,
        to events: StorageEventEmitter
    ) {
        let milliseconds = (ContinuousClock.now - start).milliseconds
        let what = refresh ? "refreshed" : "fetched"
        let outcome = failure == nil ? "fetched" : "failed"
        events.emit(
            .tokenFetched, failure == nil ? .debug : .warning,
            failure.map { "access token from \(kind) failed in \(milliseconds) ms: \($0.message)" }
                ?? "access token \(what) from \(kind) in \(milliseconds) ms",
            ["source": .string(kind), "refresh": .bool(refresh), "outcome": .string(outcome), "duration_ms": .integer(milliseconds)])
    }

    var description: String {
        switch origin {
        case .source(let source): source.summary
        case .applicationDefault: "Application Default Credentials"
        }
    }
}

extension OAuthCredential.Origin {
    /// The credential's kind for events, before Application Default Credentials found its source.
    var kind: String {
        switch self {
        case .source(let source): source.kind
        case .applicationDefault: "Application Default Credentials"
        }
    }

    /// The credential's kind for events once its source is known.
    func kind(resolvedTo source: CredentialSource) -> String {
        switch self {
        case .source: source.kind
        case .applicationDefault: "\(source.kind) (Application Default Credentials)"
        }
    }
}
