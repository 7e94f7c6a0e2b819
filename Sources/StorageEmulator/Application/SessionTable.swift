import Foundation
import Synchronization
import SystemCalls

/// What the session table bounds and expires: a resumable upload session, or an XML API
/// multipart upload (``MultipartUploadLease``).
protocol BoundedUpload: AnyObject, Sendable {
    /// The id a client names it by.
    var id: String { get }
    /// Ends it and throws its staged bytes away, waiting for a request in progress on it.
    func cancel()
    /// Ends it unless a request holds it: whether it was idle (and is now over, or was already).
    func cancelIfIdle() -> Bool
    /// Lets go of it when the emulator stops: what is persisted stays for the next one.
    func detach()
}

/// The live uploads, by id: resumable upload sessions and XML API multipart uploads, bounded
/// together in number and in age.
///
/// Uploads expire ``Policy/lifetime`` after they started (a week, as resumable sessions do
/// on Cloud Storage; Cloud Storage keeps an unfinished multipart upload until it is completed,
/// aborted or removed by a lifecycle rule, which a local emulator cannot afford); an expired
/// upload answers as an unknown one and its staged bytes are deleted. Expired sessions are swept when a session is looked up or added (at most
/// once a second by the table's clock), so abandoned ones do not pile up.
///
/// At most ``Policy/maxSessions`` exist at once. A new one beyond that evicts the
/// least recently used *idle* uploads (those no request is sending to), since a
/// client that has not touched its session for longest is the likeliest to have gone;
/// if every session is busy the new one is refused with `503` and `Retry-After`, which
/// clients retry. Eviction and expiry never wait behind a request in progress.
final class SessionTable: Sendable {
    /// Bounds on sessions, and the clock they are measured with.
    struct Policy: Sendable {
        /// How long a session lives after it starts.
        var lifetime: Duration = .seconds(7 * 24 * 3600)
        /// The most sessions at once.
        var maxSessions = 1000
        /// The current time; tests inject their own clock.
        var now: @Sendable () -> Date = { Date() }
    }

    private struct Entry {
        let session: any BoundedUpload
        let created: Date
        var lastUsed: Date
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var lastSweep = Date.distantPast
    }

    let policy: Policy
    private let state = Mutex(State())

    init(policy: Policy = Policy()) {
        self.policy = policy
    }

    private var lifetime: TimeInterval { policy.lifetime.inSeconds }

    private func isExpired(_ entry: Entry, at now: Date) -> Bool {
        now.timeIntervalSince(entry.created) >= lifetime
    }

    /// Puts back a session restored from disk, created at `created` (it expires a lifetime after
    /// that). Makes no room: the next ``add(_:created:)`` evicts as usual.
    func restore(_ session: any BoundedUpload, created: Date) {
        state.withLock { state in
            state.entries[session.id] = Entry(session: session, created: created, lastUsed: created)
        }
    }

    /// Whether a session has expired if it was created at `created`.
    func hasExpired(created: Date) -> Bool {
        policy.now().timeIntervalSince(created) >= lifetime
    }

    /// Adds a new session, making room first.
    ///
    /// - Parameter created: When it starts; now when nil.
    /// - Throws: ``HTTPError`` (503, retryable) when the table is full of sessions in use.
    func add(_ session: any BoundedUpload, created: Date? = nil) throws {
        let now = created ?? policy.now()
        sweepExpired(at: now, force: true)
        // The least recently used first; chosen under the lock, cancelled outside it.
        let candidates = state.withLock { state -> [any BoundedUpload] in
            let excess = state.entries.count - (policy.maxSessions - 1)
            guard excess > 0 else { return [] }
            return state.entries.values.sorted { $0.lastUsed < $1.lastUsed }.map(\.session)
        }
        for candidate in candidates {
            let full = state.withLock { $0.entries.count >= policy.maxSessions }
            guard full else { break }
            if candidate.cancelIfIdle() { remove(candidate) }
        }
        let added = state.withLock { state in
            guard state.entries.count < policy.maxSessions else { return false }
            state.entries[session.id] = Entry(session: session, created: now, lastUsed: now)
            return true
        }
        guard added else {
            var error = HTTPError(
                503, "Too many upload sessions are in progress; retry shortly.", reason: "backendError")
            error.headers = [("Retry-After", "1")]
            throw error
        }
    }

    /// The resumable upload session, if it exists and has not expired; marks it used.
    func session(_ id: String) -> UploadSession? {
        upload(id) as? UploadSession
    }

    /// The upload, if it exists and has not expired; marks it used.
    func upload(_ id: String) -> (any BoundedUpload)? {
        // Whatever a URL says, only an id this table could have made goes any further.
        guard Self.isWellFormedID(id) else { return nil }
        let now = policy.now()
        sweepExpired(at: now, force: false)
        let found = state.withLock { state -> (session: any BoundedUpload, expired: Bool)? in
            guard var entry = state.entries[id] else { return nil }
            if isExpired(entry, at: now) {
                state.entries[id] = nil
                return (entry.session, true)
            }
            entry.lastUsed = now
            state.entries[id] = entry
            return (entry.session, false)
        }
        guard let found else { return nil }
        if found.expired {
            // Its own client asked: waiting for a request still running on it is fine.
            found.session.cancel()
            return nil
        }
        return found.session
    }

    /// Removes an upload that ended (or is being ended by its caller): the upload, if it was there.
    @discardableResult
    func remove(_ id: String) -> (any BoundedUpload)? {
        state.withLock { $0.entries.removeValue(forKey: id)?.session }
    }

    /// Removes this very session (not a later one with its id).
    private func remove(_ session: any BoundedUpload) {
        state.withLock { state in
            if state.entries[session.id]?.session === session { state.entries[session.id] = nil }
        }
    }

    /// Cancels and removes expired sessions that no request holds.
    ///
    /// - Parameter force: Sweep even if the last sweep was less than a second ago.
    private func sweepExpired(at now: Date, force: Bool) {
        let expired = state.withLock { state -> [any BoundedUpload] in
            guard force || now.timeIntervalSince(state.lastSweep) >= 1 else { return [] }
            state.lastSweep = now
            return state.entries.values.filter { isExpired($0, at: now) }.map(\.session)
        }
        for session in expired where session.cancelIfIdle() {
            remove(session)
        }
    }

    /// Removes every upload, discarding unfinished uploads' staged bytes; persisted sessions
    /// (directory backing) stay on disk for the next emulator (see ``UploadSession/detach()``).
    func removeAll() {
        let all = state.withLock { state in
            let all = state.entries.values.map(\.session)
            state.entries.removeAll()
            return all
        }
        for session in all { session.detach() }
    }

    var count: Int { state.withLock { $0.entries.count } }

    /// Whether `id` has the shape of ``newID()``'s ids (64 lowercase hexadecimal digits), hence
    /// is safe as a file name: checked before an id from a request or a file name is used.
    static func isWellFormedID(_ id: String) -> Bool {
        id.utf8.count == 64 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// A new unguessable session id.
    static func newID() -> String {
        (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased()
    }
}
