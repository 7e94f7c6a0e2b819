import Synchronization

/// The connections of the native transport, per `host:port`: how many
/// requests may use one at a time, and the idle keep-alive ones.
///
/// **Leases.** A request first acquires one of its host's
/// ``maxConnectionsPerHost`` leases (``acquire(_:)``), waiting without a
/// thread when all are out (first come, first served; cancellation ends the
/// wait), and gives it back when done (``release(_:)``), which hands it to the
/// next waiter. So a burst of a thousand uploads to one host uses a bounded
/// set of connections and threads, kept alive and reused, instead of a
/// thousand connects that a server refuses beyond its own limit.
///
/// **Idle connections.** A connection enters the pool only after its response
/// was read completely and neither side asked to close it; it leaves when a
/// request takes it (newest first, so the warmest connection is reused and the
/// oldest ones age out), when it has been idle longer than ``maxIdleTime``, or
/// when the server closed it meanwhile. At most ``maxIdlePerHost`` wait per
/// host; the oldest is closed to make room.
///
/// Sockets are closed and waiters resumed outside the lock.
final class NativeConnectionPool: Sendable {
    private struct Idle {
        let socket: NativeSocket
        let since: ContinuousClock.Instant
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// One host's leases: how many are out, and who waits for one (first come, first served).
    ///
    /// Mutated in place through the state's dictionary, never copied out: a copy of the
    /// queue would make every append copy it whole.
    private struct Leases {
        private(set) var out = 0
        private var waiters: [Waiter] = []
        /// Waiters before this index were served already.
        private var head = 0

        var waitingCount: Int { waiters.count - head }
        var isUnused: Bool { out == 0 && waitingCount == 0 }

        /// Takes a lease when one of `limit` is free.
        mutating func take(limit: Int) -> Bool {
            guard out < limit else { return false }
            out += 1
            return true
        }

        mutating func enqueue(_ waiter: Waiter) {
            waiters.append(waiter)
        }

        /// Removes every waiter (the pool is shutting down).
        mutating func removeAllWaiters() -> [Waiter] {
            defer {
                waiters = []
                head = 0
            }
            return Array(waiters[head...])
        }

        /// Removes a waiter that gave up; nil when it was served already.
        mutating func removeWaiter(id: UInt64) -> Waiter? {
            guard let index = waiters[head...].firstIndex(where: { $0.id == id }) else { return nil }
            return waiters.remove(at: index)
        }

        /// Gives a lease back; returns the waiter it passes straight to (then `out` stays), if any.
        mutating func giveBack() -> Waiter? {
            guard head < waiters.count else {
                out -= 1
                return nil
            }
            let next = waiters[head]
            head += 1
            if head > 64 && head * 2 > waiters.count {
                waiters.removeFirst(head)
                head = 0
            }
            return next
        }
    }

    private struct State {
        var idle: [String: [Idle]] = [:]
        var leases: [String: Leases] = [:]
        var opened = 0
        var dropped = DroppedConnections()
        /// The most leases of one host ever out at once (for tests: the limit held).
        var peakLeasesOut = 0
        var nextWaiterID: UInt64 = 0
        /// Set by ``shutDown()``: no lease is granted and no connection kept any more.
        var isShutDown = false

        /// Takes one of `key`'s leases when one of `limit` is free.
        mutating func takeLease(_ key: String, limit: Int) -> Bool {
            guard leases[key, default: Leases()].take(limit: limit) else { return false }
            peakLeasesOut = max(peakLeasesOut, leases[key, default: Leases()].out)
            return true
        }
    }

    /// The most requests in flight per `host:port`, each on a connection of its own.
    let maxConnectionsPerHost: Int
    /// The most idle connections kept per `host:port`.
    let maxIdlePerHost: Int
    /// How long a connection may wait in the pool; shorter than typical
    /// server idle time-outs (60 s is common) so that the pool rarely
    /// hands out a connection the server is closing at that moment.
    let maxIdleTime: Duration
    private let state = Mutex(State())

    init(maxConnectionsPerHost: Int, maxIdlePerHost: Int, maxIdleTime: Duration) {
        precondition(maxConnectionsPerHost > 0, "a host needs at least one connection")
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxIdlePerHost = maxIdlePerHost
        self.maxIdleTime = maxIdleTime
    }

    deinit {
        closeAll()
    }

    /// Connections opened so far (for tests: N sequential requests should open one).
    var connectionsOpened: Int { state.withLock { $0.opened } }

    /// Why connections were not reused, by reason.
    struct DroppedConnections: Sendable, Equatable, CustomStringConvertible {
        /// Idle longer than ``maxIdleTime`` when a request looked for one.
        var expired = 0
        /// Closed by the server, or holding bytes nobody asked for, when a request took it.
        var unusable = 0
        /// Not put back after a response (not read completely, or either side asked to close).
        var notReusable = 0

        var description: String { "expired \(expired), unusable \(unusable), not reusable \(notReusable)" }
    }

    /// Why connections were not reused so far (for tests: says why a request opened another).
    var dropped: DroppedConnections { state.withLock { $0.dropped } }

    /// Counts a connection closed after its response instead of being put back.
    func noteNotReusable() {
        state.withLock { $0.dropped.notReusable += 1 }
    }

    /// Idle connections currently held, over all hosts.
    var idleCount: Int { state.withLock { $0.idle.values.reduce(0) { $0 + $1.count } } }

    /// Leases out now, over all hosts (for tests).
    var leasesOut: Int { state.withLock { $0.leases.values.reduce(0) { $0 + $1.out } } }

    /// The most leases of one host ever out at once (for tests).
    var peakLeasesOut: Int { state.withLock { $0.peakLeasesOut } }

    /// Requests waiting for a lease, over all hosts (for tests).
    var waiting: Int { state.withLock { $0.leases.values.reduce(0) { $0 + $1.waitingCount } } }

    /// Waits until one of `key`'s leases is free and takes it; give it back with ``release(_:)``.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled first (no lease is taken).
    /// - Throws: ``ShutDown`` once ``shutDown()`` was called.
    func acquire(_ key: String) async throws {
        let id = try state.withLock { state throws(ShutDown) -> UInt64? in
            if state.isShutDown { throw ShutDown() }
            if state.takeLease(key, limit: maxConnectionsPerHost) { return nil }
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { state -> Result<Bool, any Error> in
                    // Checked under the lock: a cancel either finds this waiter queued or is seen here.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.isShutDown { return .failure(ShutDown()) }
                    if state.takeLease(key, limit: maxConnectionsPerHost) { return .success(true) }
                    state.leases[key, default: Leases()].enqueue(Waiter(id: id, continuation: continuation))
                    return .success(false)
                }
                switch granted {
                case .failure(let error): continuation.resume(throwing: error)
                case .success(true): continuation.resume()
                case .success(false): break
                }
            }
        } onCancel: {
            let removed = state.withLock { state in state.leases[key]?.removeWaiter(id: id) }
            removed?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Gives back a lease of `key`: to the longest waiter if there is one, otherwise to the pool.
    func release(_ key: String) {
        let next = state.withLock { state -> Waiter? in
            let next = state.leases[key]?.giveBack()
            if state.leases[key]?.isUnused == true { state.leases[key] = nil }
            return next
        }
        next?.continuation.resume()
    }

    /// Counts a newly opened connection.
    func noteOpened() {
        state.withLock { $0.opened += 1 }
    }

    /// Takes the newest idle connection to `key` that is still open, or nil.
    ///
    /// Checking for openness is a `poll` with a zero time-out: call this on an I/O thread.
    func take(_ key: String) -> NativeSocket? {
        let now = ContinuousClock.now
        while true {
            let (candidate, expired) = state.withLock { state -> (NativeSocket?, [NativeSocket]) in
                guard var list = state.idle[key] else { return (nil, []) }
                // The oldest are first: drop those that waited too long.
                let stale = list.prefix { $0.since.duration(to: now) > maxIdleTime }.map(\.socket)
                list.removeFirst(stale.count)
                let newest = list.popLast()?.socket
                state.idle[key] = list.isEmpty ? nil : list
                state.dropped.expired += stale.count
                return (newest, stale)
            }
            for socket in expired { socket.closeGracefully() }
            guard let candidate else { return nil }
            if candidate.isIdleAndOpen { return candidate }
            // The server closed it (EOF) or sent something unasked: either way it is done.
            state.withLock { $0.dropped.unusable += 1 }
            candidate.closeGracefully()
        }
    }

    /// Returns a connection whose last response was read completely and that may carry another request.
    ///
    /// Call on an I/O thread: an evicted TLS connection sends its close_notify.
    func put(_ socket: NativeSocket) {
        let now = ContinuousClock.now
        let evicted = state.withLock { state -> NativeSocket? in
            if state.isShutDown { return socket }
            var list = state.idle[socket.key, default: []]
            list.append(Idle(socket: socket, since: now))
            let oldest = list.count > maxIdlePerHost ? list.removeFirst().socket : nil
            state.idle[socket.key] = list
            return oldest
        }
        evicted?.closeGracefully()
    }

    /// Why ``acquire(_:)`` refused: the pool was shut down.
    struct ShutDown: Error {}

    /// Closes every idle connection, fails every request waiting for a lease with ``ShutDown``,
    /// and from now on grants no lease and keeps no connection (one put back is closed).
    func shutDown() {
        let waiters = state.withLock { state -> [Waiter] in
            state.isShutDown = true
            var waiters: [Waiter] = []
            for key in Array(state.leases.keys) {
                waiters += state.leases[key]?.removeAllWaiters() ?? []
            }
            return waiters
        }
        closeAll()
        for waiter in waiters { waiter.continuation.resume(throwing: ShutDown()) }
    }

    /// Closes every idle connection.
    func closeAll() {
        let all = state.withLock { state -> [NativeSocket] in
            defer { state.idle = [:] }
            return state.idle.values.flatMap { $0.map(\.socket) }
        }
        for socket in all { socket.close() }
    }
}
