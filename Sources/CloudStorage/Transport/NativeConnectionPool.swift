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

    /// One host's leases: how many are out, and who waits for one.
    private struct Leases {
        var out = 0
        var waiters: [Waiter] = []
        var nextWaiter = 0
    }

    private struct State {
        var idle: [String: [Idle]] = [:]
        var leases: [String: Leases] = [:]
        var opened = 0
        var nextWaiterID: UInt64 = 0
    }

    /// The most requests in flight per `host:port`, each on a connection of its own.
    let maxConnectionsPerHost: Int
    /// The most idle connections kept per `host:port`.
    let maxIdlePerHost: Int
    /// How long a connection may wait in the pool; shorter than typical
    /// server idle time-outs (our emulator's is 60 s) so that the pool rarely
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

    /// Idle connections currently held, over all hosts.
    var idleCount: Int { state.withLock { $0.idle.values.reduce(0) { $0 + $1.count } } }

    /// Leases out now, over all hosts (for tests).
    var leasesOut: Int { state.withLock { $0.leases.values.reduce(0) { $0 + $1.out } } }

    /// Requests waiting for a lease, over all hosts (for tests).
    var waiting: Int { state.withLock { $0.leases.values.reduce(0) { $0 + $1.waiters.count - $1.nextWaiter } } }

    /// Waits until one of `key`'s leases is free and takes it; give it back with ``release(_:)``.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled first (no lease is taken).
    func acquire(_ key: String) async throws {
        if state.withLock({ state in
            guard state.leases[key, default: Leases()].out < maxConnectionsPerHost else { return false }
            state.leases[key, default: Leases()].out += 1
            return true
        }) {
            return
        }
        let id = state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { state -> Bool? in
                    // Checked under the lock: a cancel either sees this waiter queued or is seen here.
                    if Task.isCancelled { return nil }
                    var leases = state.leases[key, default: Leases()]
                    defer { state.leases[key] = leases }
                    if leases.out < maxConnectionsPerHost {
                        leases.out += 1
                        return true
                    }
                    leases.waiters.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                switch granted {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: continuation.resume()
                case false?: break
                }
            }
        } onCancel: {
            let removed = state.withLock { state -> Waiter? in
                guard var leases = state.leases[key],
                    let index = leases.waiters[leases.nextWaiter...].firstIndex(where: { $0.id == id })
                else { return nil }
                let waiter = leases.waiters.remove(at: index)
                state.leases[key] = leases
                return waiter
            }
            removed?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Gives back a lease of `key`: to the longest waiter if there is one, otherwise to the pool.
    func release(_ key: String) {
        let next = state.withLock { state -> Waiter? in
            guard var leases = state.leases[key] else { return nil }
            defer {
                // Forget hosts with nothing out and nobody waiting; compact the queue now and then.
                if leases.out == 0 && leases.nextWaiter == leases.waiters.count {
                    state.leases[key] = nil
                } else {
                    if leases.nextWaiter > 64 && leases.nextWaiter * 2 > leases.waiters.count {
                        leases.waiters.removeFirst(leases.nextWaiter)
                        leases.nextWaiter = 0
                    }
                    state.leases[key] = leases
                }
            }
            if leases.nextWaiter < leases.waiters.count {
                // The lease passes straight to the waiter: `out` does not change.
                defer { leases.nextWaiter += 1 }
                return leases.waiters[leases.nextWaiter]
            }
            leases.out -= 1
            return nil
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
                return (newest, stale)
            }
            for socket in expired { socket.close() }
            guard let candidate else { return nil }
            if candidate.isIdleAndOpen { return candidate }
            // The server closed it (EOF) or sent something unasked: either way it is done.
            candidate.close()
        }
    }

    /// Returns a connection whose last response was read completely and that may carry another request.
    func put(_ socket: NativeSocket) {
        let now = ContinuousClock.now
        let evicted = state.withLock { state -> NativeSocket? in
            var list = state.idle[socket.key, default: []]
            list.append(Idle(socket: socket, since: now))
            let oldest = list.count > maxIdlePerHost ? list.removeFirst().socket : nil
            state.idle[socket.key] = list
            return oldest
        }
        evicted?.close()
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
