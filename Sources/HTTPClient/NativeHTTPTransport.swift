import Foundation
package import NativeTLS
import Synchronization

/// An ``HTTPTransport`` speaking HTTP/1.1 over POSIX sockets, for `http://`
/// and `https://` URLs (see DESIGN.md, decisions 1, 2 and 8).
///
/// - **TLS** is a layer of the connection, not a second transport: an
///   `https://` connection is the same non-blocking ``NativeSocket`` with a
///   `TLSEngine` (a byte transformer over memory BIOs) in it, so the exchange
///   sends, receives and waits exactly as for plain I/O, within the same
///   limits, and never asks which it has. The handshake (the URL's
///   host for SNI and verification, port 443 by default) runs right after
///   connecting, within the connect's deadline, and before any request
///   byte: a server that fails verification never
///   sees the head or the credential, and the failure is
///   ``HTTPTransportError/Kind/tlsFailure``, permanent. Plain and TLS
///   connections are pooled under different keys and never mix. File
///   regions go through one reused 1 MiB buffer per connection (`pread`,
///   then large TLS writes); memory segments are written from their own
///   storage; `sendfile` stays for plain sockets. Where OpenSSL 3 cannot be
///   loaded, every `https://` request fails with that error, saying why.
///
/// - **Bodies** of any length go with `Content-Length` (never chunked):
///   memory segments straight from their storage with gathered `sendmsg`,
///   file segments with `sendfile(2)` on Linux (a `pread` + `sendmsg` loop
///   elsewhere). ``maximumBodyLength`` is nil.
/// - **Threads**: each request runs on one of the transport's
///   ``NativeIOThreads`` (started on demand, reused while they are warm);
///   every blocking call (DNS, connect, poll, send, recv, sendfile, pread)
///   happens there, never on Swift's cooperative pool. The awaiting task is
///   resumed through a continuation. SIGPIPE is blocked on those threads
///   (`sendfile` cannot suppress it per call) and suppressed per call
///   (`MSG_NOSIGNAL`) or per socket (`SO_NOSIGPIPE`) besides.
/// - **Concurrency per host**: at most ``Configuration/maxConnectionsPerHost``
///   requests to one
///   `host:port` are in flight; more wait, without a
///   thread, for a turn (``NativeConnectionPool/acquire(_:)``). A burst of
///   uploads thus reuses a bounded set of warm connections and threads
///   instead of opening one each, which a server would refuse beyond its own
///   limit.
/// - **Connections** are kept alive in a ``NativeConnectionPool`` per
///   `host:port` (``Configuration/maxIdleTime`` at most) and reused only after a
///   response was read completely and neither side said `Connection: close`.
///   A pooled connection that turns out dead before any response byte is
///   replaced once by a fresh one — but only when the request is safe to send
///   twice: none of it reached the kernel, or its builder marked it
///   ``HTTPRequest/isIdempotent`` (the transport never guesses from the
///   method). Any other request whose bytes were partly sent fails with
///   ``HTTPTransportError/Kind/connectionLost`` instead, and the caller asks
///   the server what it has. Progress never goes back on a resend: it
///   resumes reporting once the new attempt passes what was reported.
/// - **Time-outs**: connecting and the TLS handshake together may take
///   ``Configuration/connectTimeout`` (or the request's idle time-out if
///   shorter), counted from the start of connecting, so a server that sends
///   its handshake a byte at a time cannot stretch them; every other wait
///   ends with ``HTTPTransportError/Kind/timedOut`` after the request's
///   ``HTTPRequest/idleTimeout`` without progress. Nothing of a request goes
///   on past its ``HTTPRequest/deadline``.
/// - **Cancellation** shuts the socket down (`shutdown(SHUT_RDWR)`), which
///   wakes the I/O thread at once from whatever it is blocked in; the request
///   throws `CancellationError` and its connection is closed, never pooled.
///
/// ```swift
/// let transport = NativeHTTPTransport()
/// let response = try await transport.execute(HTTPRequest(method: "GET", url: url), progress: nil)
/// ```
package final class NativeHTTPTransport: HTTPTransport {
    /// The transport's settings. The defaults of the pool and the connect time-out are the
    /// ones a caller's own configuration starts from, so that each has one source.
    package struct Configuration: Sendable {
        /// Requests in flight per `host:port`, each on its own connection; more wait for a turn.
        package var maxConnectionsPerHost = 32
        /// Idle keep-alive connections kept per `host:port`.
        package var maxIdleConnectionsPerHost = 32
        /// How long a connection may wait unused in the pool.
        package var maxIdleTime: Duration = .seconds(30)
        /// The longest connecting and the TLS handshake may take together (a deadline from the
        /// start of connecting, not a time-out per read).
        package var connectTimeout: Duration = .seconds(30)
        /// `SO_SNDBUF` to ask for (the kernel caps it at `net.core.wmem_max`); nil keeps auto-tuning.
        package var sendBufferSize: Int? = 4 * 1024 * 1024
        /// The largest response body collected into memory (a response sink's body has no limit).
        package var maxResponseBodyBytes = 64 * 1024 * 1024
        /// Whether file regions go with `sendfile(2)` where available (false: `pread` + `sendmsg`).
        package var usesSendfile = true
        /// PEM certificates trusted for `https://` besides the system store.
        package var additionalTrustRoots: [TLSPEMSource] = []
        /// Whether the system trust store is trusted (tests turn it off so the machine cannot change a verdict).
        package var trustsSystemRoots = true
        /// Why TLS cannot be used here, as whoever made this transport found
        /// (``TLSLibrary/unavailableReason``), so that its routing and this transport agree; nil
        /// leaves it to the first `https://` request to find out.
        package var tlsUnavailableReason: String?

        /// The defaults.
        package init() {}
    }

    package let maximumBodyLength: Int64? = nil
    /// Each request runs on a thread of its own (``NativeIOThreads``), so a sink that waits
    /// stops reading only its own connection. File regions of `https` requests are read through
    /// their file (TLS encrypts from the buffer they are read into), and so are those of `http`
    /// ones wherever `sendfile(2)` is off or missing (on Linux the kernel copies them).
    package let capabilities: HTTPTransportCapabilities
    let configuration: Configuration
    let pool: NativeConnectionPool
    let threads = NativeIOThreads(name: "HTTPClient.NativeHTTPTransport")
    /// The TLS client context, made on first `https://` use (it reads trust files, so on an I/O thread).
    private let tlsContext = Mutex<Result<TLSContext, HTTPTransportError>?>(nil)

    package init(configuration: Configuration = .init()) {
        self.configuration = configuration
        var capabilities: HTTPTransportCapabilities = [.letsResponseSinksWait, .readsEncryptedFileRegions]
        #if os(Linux)
        if !configuration.usesSendfile { capabilities.insert(.readsPlainFileRegions) }
        #else
        capabilities.insert(.readsPlainFileRegions)
        #endif
        self.capabilities = capabilities
        self.pool = NativeConnectionPool(
            maxConnectionsPerHost: configuration.maxConnectionsPerHost,
            maxIdlePerHost: configuration.maxIdleConnectionsPerHost,
            maxIdleTime: configuration.maxIdleTime)
    }

    /// Closes the pool's connections and refuses requests not yet begun (see ``HTTPTransport``).
    package func shutdown() {
        pool.shutDown()
    }

    /// Connections this transport has opened so far.
    var connectionsOpened: Int { pool.connectionsOpened }

    /// Sends `request` on one of this transport's connections (see ``HTTPTransport``).
    package func execute(
        _ request: HTTPRequest,
        progress: (@Sendable (_ bytesSent: Int64) -> Void)?
    ) async throws -> HTTPResponse {
        let prepared = try NativePreparedRequest(request)
        // The hand-off below keeps only the key: it must not hold the request's body.
        let key = prepared.key
        do {
            try await pool.acquire(key)
        } catch is NativeConnectionPool.ShutDown {
            throw HTTPTransportError(
                kind: .shutDown, message: "The HTTP client was shut down before the request to \(key) began.",
                permanent: true)
        }
        let exchange = NativeRequestState()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                guard exchange.begin(continuation) else {
                    // Cancelled before it started: no thread, no socket.
                    pool.release(key)
                    continuation.resume(throwing: CancellationError())
                    return
                }
                threads.run { [self] in
                    let result: Result<HTTPResponse, any Error>
                    do {
                        result = .success(try perform(prepared, exchange, progress))
                    } catch {
                        result = .failure(error)
                    }
                    return { [self] in
                        pool.release(key)
                        exchange.finish(exchange.isCancelled ? .failure(CancellationError()) : result)
                    }
                }
            }
        } onCancel: {
            exchange.cancel()
        }
    }

    /// The client TLS context for this transport's trust roots, made once. Blocking (reads
    /// trust files); call on an I/O thread.
    ///
    /// - Throws: ``HTTPTransportError/Kind/tlsFailure`` (permanent) when OpenSSL cannot be
    ///   loaded, the host's OpenSSL configuration leaves no usable TLS, or a trust root cannot
    ///   be used; the message says why.
    private func clientContext() throws(HTTPTransportError) -> TLSContext {
        if let made = tlsContext.withLock({ $0 }) { return try made.get() }
        let made: Result<TLSContext, HTTPTransportError>
        if let reason = configuration.tlsUnavailableReason {
            made = .failure(Self.libraryUnavailable(TLSError(.libraryUnavailable, reason)))
        } else {
            do {
                made = .success(
                    try TLSContext(
                        client: TLSClientConfiguration(
                            additionalTrustRoots: configuration.additionalTrustRoots,
                            trustsSystemRoots: configuration.trustsSystemRoots)))
            } catch  where error.kind == .libraryUnavailable {
                made = .failure(Self.libraryUnavailable(error))
            } catch  where error.kind == .hostConfiguration {
                made = .failure(
                    HTTPTransportError(
                        kind: .tlsFailure, message: "https:// cannot work here: \(error.message)", underlying: error,
                        permanent: true))
            } catch {
                made = .failure(
                    HTTPTransportError(
                        kind: .tlsFailure, message: "The TLS trust roots cannot be used: \(error.message)",
                        underlying: error, permanent: true))
            }
        }
        // The first one made wins, so every connection shares one session cache.
        let kept = tlsContext.withLock { stored in
            if let earlier = stored { return earlier }
            stored = made
            return made
        }
        return try kept.get()
    }

    /// The failure of every `https://` request where OpenSSL 3 cannot be loaded: permanent, saying why.
    private static func libraryUnavailable(_ error: TLSError) -> HTTPTransportError {
        HTTPTransportError(
            kind: .tlsFailure,
            message:
                "https:// with the native transport needs the system's OpenSSL 3, which cannot be loaded: \(error.message)",
            underlying: error, permanent: true)
    }

    /// Runs the request on the calling (I/O) thread, replacing a dead pooled connection once when that is safe.
    private func perform(
        _ request: NativePreparedRequest,
        _ state: NativeRequestState,
        _ progress: (@Sendable (Int64) -> Void)?
    ) throws(HTTPTransportError) -> HTTPResponse {
        var mayUsePool = true
        // Body bytes reported by an attempt that was then resent: progress never goes back.
        var reported: Int64 = 0
        while true {
            if state.isCancelled { throw NativeSocket.cancelledError }
            let pooled = mayUsePool ? pool.take(request.key) : nil
            if let pooled, !state.attach(pooled) {
                pooled.close()
                throw NativeSocket.cancelledError
            }
            let socket: NativeSocket
            if let pooled {
                socket = pooled
            } else {
                socket = try openConnection(for: request, state)
            }
            let exchange = NativeExchange(
                socket: socket,
                request: request,
                maxResponseBody: configuration.maxResponseBodyBytes,
                usesSendfile: configuration.usesSendfile,
                progress: progress,
                alreadyReported: reported,
                isCancelled: { state.isCancelled }
            )
            do {
                let (response, reusable) = try exchange.run()
                release(socket, reusable: reusable, state)
                return response
            } catch {
                _ = state.detach()
                socket.close()
                let safeToRepeat = exchange.bytesWritten == 0 || request.isReplayable
                if pooled != nil && !exchange.receivedResponseBytes && safeToRepeat && error.kind == .connectionLost
                    && !state.isCancelled
                {
                    mayUsePool = false
                    reported = max(reported, exchange.bodyBytesSent)
                    continue
                }
                throw error
            }
        }
    }

    /// Opens a connection for `request` and, for `https://`, completes its TLS handshake, before
    /// any request byte (a server that fails verification never sees the head). Connecting and the
    /// handshake share one deadline, fixed now: no pace of bytes moves it.
    private func openConnection(
        for request: NativePreparedRequest,
        _ state: NativeRequestState
    ) throws(HTTPTransportError) -> NativeSocket {
        let context = request.usesTLS ? try clientContext() : nil
        let setup = NativeWaitLimit(
            idle: min(configuration.connectTimeout, request.idleTimeout), deadline: request.deadline
        ).end().instant
        let fresh: NativeSocket
        do {
            fresh = try NativeSocket.connect(
                host: request.host,
                port: request.port,
                key: request.key,
                deadline: setup,
                sendBufferSize: configuration.sendBufferSize,
                register: { state.attach($0) }
            )
        } catch  where error.kind == .connectFailed && request.deadline.map({ .now >= $0 }) == true {
            // The request's deadline, not the server, ended it: a time-out like any other.
            throw HTTPTransportError(
                kind: .timedOut, message: "Connecting to \(request.key) was not over by the request's deadline."
            )
        }
        pool.noteOpened()
        guard let context else { return fresh }
        do {
            try fresh.startTLS(context: context, host: request.host, port: request.port, deadline: setup)
        } catch {
            _ = state.detach()
            fresh.close()
            if state.isCancelled { throw NativeSocket.cancelledError }
            throw error
        }
        return fresh
    }

    /// Hands the connection of a finished exchange back to the pool, or closes it.
    private func release(_ socket: NativeSocket, reusable: Bool, _ state: NativeRequestState) {
        // After detaching, a cancel can no longer touch the socket; if one came first it is shut down.
        guard state.detach() else { return socket.close() }
        if reusable {
            pool.put(socket)
        } else {
            pool.noteNotReusable()
            socket.closeGracefully()
        }
    }
}

/// One native request's shared state: the awaiting task's continuation, the
/// cancellation flag and the socket in use, so that a cancel from any thread
/// can shut it down.
///
/// A cancel that arrives before the request started is not lost: ``begin(_:)``
/// refuses to start, and ``attach(_:)`` refuses sockets afterwards.
/// Continuations are resumed and sockets shut down outside the lock.
final class NativeRequestState: Sendable {
    private struct State {
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        var cancelled = false
        var socket: NativeSocket?
    }

    private let state = Mutex(State())

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Stores the continuation; false when the request was already cancelled (the caller resumes it).
    func begin(_ continuation: CheckedContinuation<HTTPResponse, any Error>) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.continuation = continuation
            return true
        }
    }

    /// Marks the request cancelled and shuts its socket down; idempotent, never blocks.
    func cancel() {
        let socket = state.withLock { state in
            state.cancelled = true
            return state.socket
        }
        socket?.shutdown()
    }

    /// Makes `socket` the one a cancel shuts down; false when already cancelled.
    func attach(_ socket: NativeSocket) -> Bool {
        state.withLock { state in
            guard !state.cancelled else { return false }
            state.socket = socket
            return true
        }
    }

    /// Forgets the socket; returns false when a cancel came first (and shut it down).
    func detach() -> Bool {
        state.withLock { state in
            state.socket = nil
            return !state.cancelled
        }
    }

    /// Resumes the awaiting task once; later calls do nothing.
    func finish(_ result: Result<HTTPResponse, any Error>) {
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}
