import Dispatch
import Foundation
package import NativeTLS
import Synchronization
import SystemCalls

/// The emulator's HTTP/1.1 server: POSIX sockets, one thread per connection.
///
/// ```swift
/// let server = EmulatorHTTPServer(application: MyApplication())
/// let port = try server.start()
/// defer { server.stop() }
/// ```
///
/// ## Threads
/// - One accept thread polls the listening socket and a wake socket; ``stop()`` wakes it.
/// - Each accepted connection gets a `Foundation.Thread` of its own that reads
///   requests, calls ``ServerApplication/handle(_:_:)`` and writes responses. All
///   blocking calls (poll, recv, send, the application itself) happen there,
///   never on Swift's cooperative pool.
/// - Shared state (the lifecycle and the set of open connections) sits in a
///   `Mutex`; no lock is held across a system call that can block.
///
/// ## Limits and timeouts (see ``Limits``)
/// - At most ``Limits/maxConnections`` (256) connections. A connection beyond that evicts
///   the open connection that has waited longest for its peer: for a request head (idle, or
///   with a head still arriving), or for the next bytes of a request body. The evicted one
///   is answered `503 Service Unavailable` with `Retry-After: 1` and closed, unless it was
///   idle between requests (closed without an answer, as an idle keep-alive connection may be
///   at any time) or speaks TLS (only closed). Only if no connection waits for its peer is the
///   new one answered `503` with `Retry-After: 1` and closed (over TLS, where no handshake has
///   run yet, it is only closed). Every connection that sent or was about to send a request
///   thus gets an answer.
/// - Heads up to 64 KiB and 100 fields (`431` beyond); request bodies are never
///   buffered by the server: the application reads them.
/// - Between requests a connection may stay idle for ``Limits/idleTimeout`` (60 s);
///   while a head or body is arriving every read must progress within
///   ``Limits/readTimeout`` (30 s; a stalled head gets `408`), and a head must arrive
///   whole within ``Limits/headTimeout`` of its first byte (30 s; else `408`), however
///   slowly its bytes trickle in; sends give up after ``Limits/writeTimeout`` (60 s).
///
/// ## Connections
/// HTTP/1.1 connections persist unless either side says `Connection: close`;
/// HTTP/1.0 ones close unless the request says `keep-alive`. Pipelined requests
/// are served in order. Malformed heads get `400`, unsupported transfer codings
/// `501`, other expectations than `100-continue` `417`, all followed by a close;
/// On a plain server TLS, the HTTP/2 preface and other non-HTTP/1 bytes are closed without
/// an answer; on a TLS server (see ``init(host:port:application:limits:tls:)``) so is a failed
/// handshake, plain HTTP included. Over TLS a read time-out (a stalled head) fails the TLS
/// stream, so the connection closes without the `408` answer.
package final class EmulatorHTTPServer: Sendable {
    private enum Phase {
        case idle
        case starting
        case running(listener: Int32, wakeWriter: Int32)
        case stopping
        case stopped
    }

    /// An open connection, as the server tracks it.
    private struct Slot {
        let handle: SocketDescriptor
        /// When the connection began waiting for its peer (in ``State/waitSequence`` order), or
        /// nil while the server works on it (a new connection until its thread reads, a request
        /// being handled). Waiting connections can be evicted.
        var waitingSince: UInt64?
    }

    private struct State {
        var phase = Phase.idle
        var port = 0
        var connections: [Int: Slot] = [:]
        /// Connections evicted to make room whose threads have not ended yet (no longer counted
        /// in ``connections``); each learns it from ``EmulatorHTTPServer/connectionWasEvicted(_:)``.
        var evicted: [Int: SocketDescriptor] = [:]
        var nextConnectionID = 0
        var liveThreads = 0
        /// Orders waits for peers without a clock: a larger number began waiting later.
        var waitSequence: UInt64 = 0
    }

    private let host: String
    private let requestedPort: Int
    let application: any ServerApplication
    let limits: Limits
    /// The server's TLS identity; nil serves plain HTTP.
    private let tls: TLSContext?
    /// The network model every connection is paced by; nil for none (loopback speed).
    let shape: StorageEmulator.NetworkShape?
    /// The waits the network model computed (zero without a shape).
    let shapingCounters = ShapingCounters()
    private let state = Mutex(State())
    /// Entered by every thread the server starts, left when it ends; ``stop()`` waits on it.
    private let threads = DispatchGroup()
    private static let threadKey = "CloudStorage.EmulatorHTTPServer"

    /// Creates a server; nothing is bound until ``start()``.
    ///
    /// - Parameters:
    ///   - host: An IPv4 address (or `localhost`) to bind.
    ///   - port: The port, or 0 for an ephemeral one.
    ///   - application: What answers the requests.
    ///   - limits: Bounds and timeouts.
    ///   - tls: When set, every connection begins with a TLS server handshake on its own thread.
    ///   - shape: When set, every connection's reads and writes are paced by this network model.
    package init(
        host: String = "127.0.0.1", port: Int = 0, application: any ServerApplication, limits: Limits = .init(),
        tls: TLSContext? = nil, shape: StorageEmulator.NetworkShape? = nil
    ) {
        self.host = host
        self.requestedPort = port
        self.application = application
        self.limits = limits
        self.tls = tls
        self.shape = shape
    }

    /// The bound port; 0 before ``start()``.
    package var port: Int { state.withLock { $0.port } }

    /// Binds, listens and starts the accept thread.
    ///
    /// - Returns: The bound port (the ephemeral one when the server was created with port 0).
    /// - Throws: ``ServerIOError/alreadyStarted`` on a second call, ``ServerIOError/invalidAddress``,
    ///   or the system error of socket/bind/listen.
    @discardableResult
    package func start() throws -> Int {
        try state.withLock { state throws(ServerIOError) in
            guard case .idle = state.phase else { throw .alreadyStarted }
            state.phase = .starting
        }
        let listener: Int32
        let port: Int
        let wake: (reader: Int32, writer: Int32)
        do throws(SocketError) {
            (listener, port) = try POSIXSocket.listen(
                host: host, port: requestedPort, backlog: limits.listenBacklog, bufferSize: limits.socketBufferSize)
            do throws(SocketError) {
                wake = try POSIXSocket.socketPair()
            } catch {
                POSIXSocket.closeDescriptor(listener)
                throw error
            }
        } catch {
            state.withLock { $0.phase = .idle }
            throw ServerIOError(error)
        }
        state.withLock { state in
            state.phase = .running(listener: listener, wakeWriter: wake.writer)
            state.port = port
        }
        startThread(name: "emulator-accept") { server in
            server.acceptLoop(listener: listener, wakeReader: wake.reader)
        }
        return port
    }

    /// Stops accepting, shuts down every open connection and waits for all the server's threads to end.
    ///
    /// Idempotent, and safe to call concurrently. It returns as soon as every connection thread has
    /// noticed the shutdown — at once for idle connections; an application blocked in
    /// ``ServerApplication/handle(_:_:)`` delays it until it returns (its next read or write fails).
    /// Called from one of the server's own threads it does not wait, to avoid waiting for itself.
    package func stop() {
        let action = state.withLock { state -> (wakeWriter: Int32, connections: [SocketDescriptor])? in
            switch state.phase {
            case .idle, .starting:
                state.phase = .stopped
                return nil
            case .running(_, let wakeWriter):
                state.phase = .stopping
                return (wakeWriter, state.connections.values.map(\.handle) + state.evicted.values)
            case .stopping, .stopped:
                return nil
            }
        }
        if let action {
            POSIXSocket.sendWithoutBlocking(action.wakeWriter, [1])
            POSIXSocket.closeDescriptor(action.wakeWriter)
            for connection in action.connections { connection.shutdown() }
        }
        if !isServerThread { threads.wait() }
        state.withLock { state in
            if case .stopping = state.phase { state.phase = .stopped }
        }
    }

    // MARK: - Threads

    private var isServerThread: Bool {
        (Thread.current.threadDictionary[Self.threadKey] as? EmulatorHTTPServer) === self
    }

    /// Threads started and not yet ended (the accept thread and one per connection); for tests and diagnostics.
    var liveThreadCount: Int { state.withLock { $0.liveThreads } }

    /// Connections currently open.
    var openConnectionCount: Int { state.withLock { $0.connections.count } }

    /// Open connections that wait for their peer and could be evicted; for tests.
    var connectionsWaitingForPeer: Int {
        state.withLock { state in state.connections.values.count(where: { $0.waitingSince != nil }) }
    }

    private func startThread(name: String, _ body: @escaping @Sendable (EmulatorHTTPServer) -> Void) {
        threads.enter()
        state.withLock { $0.liveThreads += 1 }
        let thread = Thread { [self] in
            Thread.current.threadDictionary[Self.threadKey] = self
            body(self)
            Thread.current.threadDictionary.removeObject(forKey: Self.threadKey)
            state.withLock { $0.liveThreads -= 1 }
            threads.leave()
        }
        thread.name = name
        thread.start()
    }

    private var isRunning: Bool {
        state.withLock { state in
            if case .running = state.phase { return true }
            return false
        }
    }

    private func acceptLoop(listener: Int32, wakeReader: Int32) {
        defer {
            POSIXSocket.closeDescriptor(listener)
            POSIXSocket.closeDescriptor(wakeReader)
        }
        while true {
            let ready: Int?
            do {
                ready = try POSIXSocket.waitReadable([listener, wakeReader], timeout: nil)
            } catch {
                return
            }
            guard ready == 0, isRunning else { return }
            // Drain the backlog: several connections may be pending behind one wake-up.
            while let fd = POSIXSocket.accept(listener) {
                admit(fd)
            }
            if errno == EMFILE || errno == ENFILE {
                // Out of descriptors: pending connections stay queued; try again shortly instead of spinning.
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }

    private enum Admission {
        case accepted(id: Int, handle: SocketDescriptor, evicted: SocketDescriptor?)
        case tooMany
        case stopping
    }

    private func admit(_ fd: Int32) {
        // Blocking (each connection has a thread of its own), with a send time-out so a peer
        // that stops reading cannot hold that thread for ever.
        POSIXSocket.setNonBlocking(fd, false)
        POSIXSocket.setCloseOnExec(fd)
        POSIXSocket.setNoDelay(fd)
        POSIXSocket.setBufferSizes(fd, receive: limits.socketBufferSize, send: limits.socketBufferSize)
        POSIXSocket.setNoSigPipe(fd)
        POSIXSocket.setSendTimeout(fd, limits.writeTimeout)
        let admission = state.withLock { state -> Admission in
            guard case .running = state.phase else { return .stopping }
            var evicted: SocketDescriptor?
            if state.connections.count >= limits.maxConnections {
                // Make room by evicting the connection that has waited longest for its peer.
                var oldest: (id: Int, since: UInt64)?
                for (id, slot) in state.connections {
                    if let since = slot.waitingSince, since < oldest?.since ?? .max { oldest = (id, since) }
                }
                guard let oldest else { return .tooMany }
                evicted = state.connections.removeValue(forKey: oldest.id)?.handle
                state.evicted[oldest.id] = evicted
            }
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            let handle = SocketDescriptor(fd: fd)
            // Not evictable until its thread waits for the first head: in a burst, connections
            // admitted first are served first, and later ones are answered 503 (rather than the
            // earlier ones evicted before their threads could read the requests already sent).
            state.connections[id] = Slot(handle: handle, waitingSince: nil)
            return .accepted(id: id, handle: handle, evicted: evicted)
        }
        switch admission {
        case .stopping:
            POSIXSocket.closeDescriptor(fd)
        case .tooMany:
            // Before its handshake a TLS client would take a clear-text answer for a plain-HTTP
            // server (a misleading, permanent error); closing reads as the transient refusal it is.
            if tls == nil { POSIXSocket.sendWithoutBlocking(fd, Self.busyResponse) }
            POSIXSocket.shutdownWrite(fd)
            POSIXSocket.closeDescriptor(fd)
        case .accepted(let id, let handle, let evicted):
            // Its thread wakes from its read, learns it was evicted, answers (or not), ends and
            // closes the descriptor; the send side stays open for that answer.
            evicted?.shutdownReading()
            startThread(name: "emulator-conn-\(id)") { server in
                let connection = ServerConnection(id: id, socket: handle, server: server, tls: server.tls)
                connection.run()
                server.state.withLock { state in
                    state.connections.removeValue(forKey: id)
                    state.evicted.removeValue(forKey: id)
                }
                handle.close()
            }
        }
    }

    /// Records that a connection waits for its peer (evictable) or that the server works on it (not).
    ///
    /// - Parameters:
    ///   - id: The connection.
    ///   - waiting: Whether it now waits for its peer.
    /// - Returns: False when the connection has been evicted: it must serve nothing more.
    func connection(_ id: Int, waitsForPeer waiting: Bool) -> Bool {
        state.withLock { state in
            guard state.connections[id] != nil else { return state.evicted[id] == nil }
            if waiting {
                // Keep the original place in line while still waiting.
                if state.connections[id]?.waitingSince == nil {
                    state.connections[id]?.waitingSince = state.waitSequence
                    state.waitSequence += 1
                }
            } else {
                state.connections[id]?.waitingSince = nil
            }
            return true
        }
    }

    /// Whether the server evicted a connection to make room for a new one.
    func connectionWasEvicted(_ id: Int) -> Bool {
        state.withLock { $0.evicted[id] != nil }
    }

    /// The answer to a connection the server has no room for: retry in a second.
    static let busyResponse = Array(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
}
