import Synchronization

/// Idle keep-alive connections of the native transport, per `host:port`.
///
/// A connection enters the pool only after its response was read completely
/// and neither side asked to close it; it leaves when a request takes it
/// (newest first, so the warmest connection is reused and the oldest ones
/// age out), when it has been idle longer than ``maxIdleTime``, or when the
/// server closed it meanwhile. At most ``maxIdlePerHost`` wait per host; the
/// oldest is closed to make room.
///
/// Sockets are closed outside the lock.
final class NativeConnectionPool: Sendable {
    private struct Idle {
        let socket: NativeSocket
        let since: ContinuousClock.Instant
    }

    private struct State {
        var idle: [String: [Idle]] = [:]
        var opened = 0
    }

    /// The most idle connections kept per `host:port`.
    let maxIdlePerHost: Int
    /// How long a connection may wait in the pool; shorter than typical
    /// server idle time-outs (our emulator's is 60 s) so that the pool rarely
    /// hands out a connection the server is closing at that moment.
    let maxIdleTime: Duration
    private let state = Mutex(State())

    init(maxIdlePerHost: Int, maxIdleTime: Duration) {
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
