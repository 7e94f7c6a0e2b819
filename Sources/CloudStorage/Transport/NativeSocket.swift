import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A connected, non-blocking TCP socket of the native transport.
///
/// One request's I/O thread uses it at a time (or it sits idle in the
/// connection pool); any thread may shut it down to abort that request. The
/// owner finally closes it. A shutdown from another thread racing with the
/// owner's close could hit a descriptor number the system has meanwhile
/// reused, so ``shutdown()`` *pins* the descriptor and a close requested while
/// it is pinned is carried out by the last unpin. No lock is held during
/// either system call.
///
/// All I/O methods may block up to their time-out: call them only on the
/// transport's own threads, never on Swift's cooperative pool.
final class NativeSocket: Sendable {
    private struct State {
        var pins = 0
        var closeRequested = false
        var closed = false
    }

    let fd: Int32
    /// `host:port`, the pool key of the server this socket is connected to.
    let key: String
    private let state = Mutex(State())

    private init(fd: Int32, key: String) {
        self.fd = fd
        self.key = key
    }

    deinit {
        // Nobody can hold a pin once the last reference is gone.
        let needsClose = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if needsClose { _ = systemClose(fd) }
    }

    /// Shuts both directions down unless the socket is closed; callable from any thread, idempotent.
    ///
    /// A thread blocked in `poll`, `recv`, `sendmsg` or `sendfile` on this socket returns at once.
    func shutdown() {
        let pinned = state.withLock { state in
            guard !state.closeRequested else { return false }
            state.pins += 1
            return true
        }
        guard pinned else { return }
        _ = systemShutdown(fd, Int32(SHUT_RDWR))
        let closeNow = state.withLock { state in
            state.pins -= 1
            guard state.pins == 0, state.closeRequested, !state.closed else { return false }
            state.closed = true
            return true
        }
        if closeNow { _ = systemClose(fd) }
    }

    /// Closes the descriptor now, or when a shutdown in progress ends. Idempotent.
    func close() {
        let closeNow = state.withLock { state in
            guard !state.closeRequested else { return false }
            state.closeRequested = true
            guard state.pins == 0 else { return false }
            state.closed = true
            return true
        }
        if closeNow { _ = systemClose(fd) }
    }

    // MARK: - Connecting

    /// Resolves `host`, then connects to each address in turn until one answers within `timeout`.
    ///
    /// - Parameters:
    ///   - host: A host name or IP address (without brackets).
    ///   - port: The TCP port.
    ///   - timeout: How long each connection attempt may take.
    ///   - sendBufferSize: `SO_SNDBUF` to ask for (best effort), or nil to keep the system's auto-tuning.
    ///   - register: Called with each socket before it blocks; returning false (the request was
    ///     cancelled) abandons the attempt.
    /// - Returns: The connected socket.
    /// - Throws: ``HTTPTransportError/Kind/connectFailed``, or ``HTTPTransportError/Kind/other`` when cancelled.
    static func connect(
        host: String,
        port: Int,
        timeout: Duration,
        sendBufferSize: Int?,
        register: (NativeSocket) -> Bool
    ) throws(HTTPTransportError) -> NativeSocket {
        let key = "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamType
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            let reason = String(cString: gai_strerror(resolved))
            throw HTTPTransportError(kind: .connectFailed, message: "Cannot resolve \(host) (\(reason)).")
        }
        defer { freeaddrinfo(first) }
        var lastError: Int32 = ECONNREFUSED
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            guard let address = current.pointee.ai_addr else { continue }
            let fd = socket(current.pointee.ai_family, streamType, current.pointee.ai_protocol)
            guard fd >= 0 else {
                lastError = errno
                continue
            }
            let socket = NativeSocket(fd: fd, key: key)
            socket.configure(sendBufferSize: sendBufferSize)
            guard register(socket) else {
                socket.close()
                throw Self.cancelledError
            }
            let started = systemConnect(fd, address, current.pointee.ai_addrlen)
            if started == 0 { return socket }
            var code = errno
            if code == EINPROGRESS || code == EINTR {
                code = socket.finishConnecting(timeout: timeout)
                if code == 0 { return socket }
            }
            socket.close()
            lastError = code
        }
        throw HTTPTransportError(
            kind: .connectFailed, message: "Cannot connect to \(key) (\(String(cString: strerror(lastError)))).")
    }

    /// Waits for a non-blocking connect to finish; returns 0 or the error it ended with.
    private func finishConnecting(timeout: Duration) -> Int32 {
        var pollDescriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return ETIMEDOUT }
            let result = poll(&pollDescriptor, 1, left.pollMilliseconds)
            if result > 0 { break }
            if result == 0 { return ETIMEDOUT }
            if errno != EINTR { return errno }
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    /// Non-blocking, close-on-exec, no Nagle delay, no SIGPIPE (Darwin), a large send buffer.
    private func configure(sendBufferSize: Int?) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let flags = fcntl(fd, F_GETFL, 0)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        if let sendBufferSize {
            setOption(SOL_SOCKET, SO_SNDBUF, Int32(clamping: sendBufferSize))
        }
        #if canImport(Darwin)
        setOption(SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
    }

    private func setOption(_ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    // MARK: - Waiting

    /// What ``wait(for:timeout:isCancelled:)`` found.
    struct Readiness {
        var readable: Bool
        var writable: Bool
        /// The peer hung up or the socket has an error: the next read or write says which.
        var broken: Bool
    }

    /// Waits until the socket is ready for `events`, for at most `timeout`.
    ///
    /// The wait is cut into slices of at most half a second so a cancellation
    /// is noticed even if the shutdown that normally wakes it raced with it.
    ///
    /// - Throws: ``HTTPTransportError/Kind/timedOut`` when nothing happened
    ///   within `timeout`; the cancellation marker when `isCancelled` says so.
    func wait(
        readable: Bool,
        writable: Bool,
        timeout: Duration,
        isCancelled: () -> Bool
    ) throws(HTTPTransportError) -> Readiness {
        var events: Int16 = 0
        if readable { events |= Int16(POLLIN) }
        if writable { events |= Int16(POLLOUT) }
        var pollDescriptor = pollfd(fd: fd, events: events, revents: 0)
        let deadline = ContinuousClock.now + timeout
        while true {
            if isCancelled() { throw Self.cancelledError }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else {
                throw HTTPTransportError(
                    kind: .timedOut, message: "Nothing moved to or from \(key) for \(timeout).")
            }
            let result = poll(&pollDescriptor, 1, min(500, left.pollMilliseconds))
            if result > 0 {
                let revents = pollDescriptor.revents
                return Readiness(
                    readable: revents & Int16(POLLIN) != 0,
                    writable: revents & Int16(POLLOUT) != 0,
                    broken: revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
                )
            }
            if result < 0 && errno != EINTR { throw lost(errno) }
        }
    }

    /// Whether an idle pooled connection is still usable: nothing to read (no
    /// EOF, no stray bytes) and no error pending. Never blocks.
    var isIdleAndOpen: Bool {
        var pollDescriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&pollDescriptor, 1, 0) == 0
    }

    // MARK: - I/O

    /// Sends from `buffers` (gathered) what fits without blocking.
    ///
    /// - Returns: The bytes sent, or nil when the send buffer is full.
    func send(_ buffers: UnsafeMutableBufferPointer<iovec>) throws(HTTPTransportError) -> Int? {
        var message = msghdr()
        message.msg_iov = buffers.baseAddress
        message.msg_iovlen = .init(buffers.count)
        while true {
            let count = sendmsg(fd, &message, sendFlags)
            if count >= 0 { return count }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return nil }
            throw lost(code)
        }
    }

    /// Receives what is there without blocking.
    ///
    /// - Returns: The bytes read (0 when the peer closed its side), or nil when nothing is there yet.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPTransportError) -> Int? {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        while true {
            let count = recv(fd, base, buffer.count, 0)
            if count >= 0 { return count }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return nil }
            throw lost(code)
        }
    }

    #if os(Linux)
    /// What one `sendfile(2)` call did.
    enum SendFileResult {
        /// This many bytes went out (0: the file ended early).
        case sent(Int)
        /// The send buffer is full.
        case wouldBlock
        /// The kernel cannot send this file this way: fall back to reads and writes.
        case unsupported
        /// Reading the file failed.
        case fileError(Int32)
    }

    /// Sends up to `count` bytes of `file` from `offset` with `sendfile(2)`, without blocking.
    ///
    /// SIGPIPE cannot be suppressed per call here; the transport's threads block it instead.
    func sendFile(_ file: Int32, offset: Int64, count: Int) throws(HTTPTransportError) -> SendFileResult {
        var position = off_t(offset)
        while true {
            let sent = sendfile(fd, file, &position, count)
            if sent >= 0 { return .sent(sent) }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EINVAL, ENOSYS, EOPNOTSUPP: return .unsupported
            case EIO, EOVERFLOW, ESPIPE, EBADF: return .fileError(code)
            default: throw lost(code)
            }
        }
    }
    #endif

    // MARK: - Errors

    /// Marks a request abandoned because it was cancelled; the transport reports `CancellationError` instead.
    static let cancelledError = HTTPTransportError(kind: .other, message: "The request was cancelled.")

    /// A broken connection, naming the system error.
    func lost(_ code: Int32) -> HTTPTransportError {
        HTTPTransportError(
            kind: .connectionLost, message: "The connection to \(key) broke (\(String(cString: strerror(code)))).")
    }
}

#if canImport(Glibc) || canImport(Musl)
private let streamType = Int32(SOCK_STREAM.rawValue)
/// Linux suppresses SIGPIPE per call; Darwin per socket (`SO_NOSIGPIPE`).
private let sendFlags = Int32(MSG_NOSIGNAL)
#else
private let streamType = SOCK_STREAM
private let sendFlags: Int32 = 0
#endif

#if canImport(Glibc)
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    Glibc.connect(fd, address, length)
}
private func systemClose(_ fd: Int32) -> Int32 { Glibc.close(fd) }
private func systemShutdown(_ fd: Int32, _ how: Int32) -> Int32 { Glibc.shutdown(fd, how) }
#elseif canImport(Musl)
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    Musl.connect(fd, address, length)
}
private func systemClose(_ fd: Int32) -> Int32 { Musl.close(fd) }
private func systemShutdown(_ fd: Int32, _ how: Int32) -> Int32 { Musl.shutdown(fd, how) }
#else
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    Darwin.connect(fd, address, length)
}
private func systemClose(_ fd: Int32) -> Int32 { Darwin.close(fd) }
private func systemShutdown(_ fd: Int32, _ how: Int32) -> Int32 { Darwin.shutdown(fd, how) }
#endif

extension Duration {
    /// Whole milliseconds for `poll`, rounded up so a short wait never becomes a busy loop, saturating.
    var pollMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let milliseconds = seconds.multipliedReportingOverflow(by: 1000)
        guard !milliseconds.overflow else { return .max }
        let rest = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds.partialValue + rest)
    }
}
