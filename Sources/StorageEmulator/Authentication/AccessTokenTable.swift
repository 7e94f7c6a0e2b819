package import Foundation
import Synchronization
import SystemCalls

/// The access tokens the emulator has issued: opaque random strings, each with the principal
/// it speaks for, its scopes and its expiry.
///
/// Checked on every storage request when tokens are required, so it is a small
/// Mutex-protected dictionary rather than an actor. Bounded: past ``capacity`` live tokens,
/// dead ones are swept and then the oldest are dropped (a client holding one gets `401`
/// and asks for another, as after an expiry).
package final class AccessTokenTable: Sendable {
    /// Who a token speaks for.
    package enum Principal: Sendable, Equatable {
        /// A service account, by email (from a JWT grant or the metadata server).
        case serviceAccount(String)
        /// An authorized user, by OAuth client id.
        case user(clientID: String)
    }

    /// What an issued token grants.
    package struct Grant: Sendable {
        package let principal: Principal
        package let scopes: [String]
        package let expiry: Date
        /// Issue order: ``expireAll()`` invalidates every grant at or below a serial.
        let serial: UInt64
    }

    /// Why a presented token does not open anything.
    package enum Refusal: Error, Equatable {
        /// Never issued here (or dropped to keep the table bounded).
        case unknown
        /// Issued, and past its expiry or expired by ``expireAll()``.
        case expired
    }

    private struct State {
        var grants: [String: Grant] = [:]
        var nextSerial: UInt64 = 1
        /// Grants with a serial at or below this are expired.
        var expiredThrough: UInt64 = 0
        var grantCount = 0
    }

    /// The most tokens kept at once.
    let capacity: Int
    private let state = Mutex(State())

    package init(capacity: Int = 100_000) {
        self.capacity = max(1, capacity)
    }

    /// Issues a new token.
    ///
    /// - Parameters:
    ///   - principal: Who it speaks for.
    ///   - scopes: The OAuth scopes granted.
    ///   - lifetime: How long it lives from `now`.
    ///   - now: The emulator's clock.
    /// - Returns: The token and its grant.
    package func issue(
        for principal: Principal, scopes: [String], lifetime: Duration, now: Date
    ) -> (token: String, grant: Grant) {
        let token = Self.newToken()
        let expiry = now.addingTimeInterval(lifetime.inSeconds)
        return state.withLock { state in
            if state.grants.count >= capacity { Self.makeRoom(&state, now: now, capacity: capacity) }
            let grant = Grant(principal: principal, scopes: scopes, expiry: expiry, serial: state.nextSerial)
            state.nextSerial += 1
            state.grants[token] = grant
            state.grantCount += 1
            return (token, grant)
        }
    }

    /// The live grant of a token.
    ///
    /// - Throws: ``Refusal`` for a token never issued, dropped, or expired.
    package func grant(for token: String, now: Date) throws(Refusal) -> Grant {
        let found = state.withLock { state -> (Grant, Bool)? in
            guard let grant = state.grants[token] else { return nil }
            return (grant, grant.serial <= state.expiredThrough)
        }
        guard let (grant, expiredByHook) = found else { throw .unknown }
        guard !expiredByHook, grant.expiry > now else { throw .expired }
        return grant
    }

    /// Makes every token issued so far expired.
    package func expireAll() {
        state.withLock { $0.expiredThrough = $0.nextSerial - 1 }
    }

    /// Tokens issued so far.
    package var grantCount: Int { state.withLock { $0.grantCount } }

    /// Drops dead grants; if that is not enough, the oldest live ones.
    private static func makeRoom(_ state: inout State, now: Date, capacity: Int) {
        let cutoff = state.expiredThrough
        state.grants = state.grants.filter { $0.value.serial > cutoff && $0.value.expiry > now }
        guard state.grants.count >= capacity else { return }
        // Keep the newest three quarters so that the sweep is not repeated on every grant.
        let keep = capacity - capacity / 4 - 1
        let newest = state.grants.sorted { $0.value.serial > $1.value.serial }.prefix(max(0, keep))
        state.grants = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
    }

    /// 256 random bits, base64url, behind Google's access-token prefix so that clients which
    /// recognise tokens by shape treat it as one.
    private static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        for _ in 0..<4 {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return "ya29.emulator-" + Base64URL.encode(bytes)
    }
}
