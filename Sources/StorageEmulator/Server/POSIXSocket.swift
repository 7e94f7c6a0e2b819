#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the POSIX socket calls the server needs, with the
/// platform differences (SIGPIPE suppression, constant types) in one place.
///
/// All of these block at most as long as their timeout; call them only on the
/// server's own threads.
enum POSIXSocket {
    #if canImport(Glibc)
    private static let streamType = Int32(SOCK_STREAM.rawValue)
    /// Linux suppresses SIGPIPE per call; Darwin per socket (`SO_NOSIGPIPE`, set in ``configure(_:bufferSize:sendTimeout:)``).
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    private static let streamType = SOCK_STREAM
    private static let sendFlags: Int32 = 0
    #endif

    /// What waiting for readability found.
    enum Readiness {
        case readable
        case timedOut
    }

    // MARK: - Setting up

    /// Creates a non-blocking IPv4 listening socket bound to `host:port`.
    ///
    /// - Returns: The descriptor and the bound port (the ephemeral one when `port` is 0).
    static func listen(host: String, port: Int, backlog: Int, bufferSize: Int) throws(ServerIOError) -> (Int32, Int) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
        let literal = host == "localhost" ? "127.0.0.1" : host
        guard (0...65535).contains(port), inet_pton(AF_INET, literal, &address.sin_addr) == 1 else {
            throw .invalidAddress
        }
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { throw .system(errno) }
        setCloseOnExec(fd)
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        // Set before listen(): the window scale is agreed in the handshake, so the
        // accepted sockets need the large receive buffer from the start.
        setOption(fd, SOL_SOCKET, SO_RCVBUF, Int32(clamping: bufferSize))
        setOption(fd, SOL_SOCKET, SO_SNDBUF, Int32(clamping: bufferSize))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, systemListen(fd, Int32(clamping: backlog)) == 0 else {
            let error = errno
            close(fd)
            throw .system(error)
        }
        setNonBlocking(fd, true)
        var boundAddress = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &boundAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let error = errno
            close(fd)
            throw .system(error)
        }
        return (fd, Int(UInt16(bigEndian: boundAddress.sin_port)))
    }

    /// A connected pair of local sockets, used to wake the accept thread.
    static func wakePair() throws(ServerIOError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, streamType, 0, &fds) == 0 else { throw .system(errno) }
        for fd in fds {
            setCloseOnExec(fd)
            #if canImport(Darwin)
            setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
            #endif
        }
        return (fds[0], fds[1])
    }

    /// Accepts one pending connection, or returns nil if there is none (or it vanished).
    static func accept(_ listener: Int32) -> Int32? {
        while true {
            #if canImport(Glibc)
            let fd = Glibc.accept(listener, nil, nil)
            #else
            let fd = Darwin.accept(listener, nil, nil)
            #endif
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Prepares an accepted socket: blocking, close-on-exec, no Nagle delay, large buffers
    /// (best effort), no SIGPIPE, and a send timeout so a peer that stops reading cannot
    /// hold a thread forever.
    static func configure(_ fd: Int32, bufferSize: Int, sendTimeout: Duration) {
        setNonBlocking(fd, false)
        setCloseOnExec(fd)
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        setOption(fd, SOL_SOCKET, SO_RCVBUF, Int32(clamping: bufferSize))
        setOption(fd, SOL_SOCKET, SO_SNDBUF, Int32(clamping: bufferSize))
        #if canImport(Darwin)
        setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
        let milliseconds = max(1, sendTimeout.milliseconds)
        var timeout = timeval()
        timeout.tv_sec = .init(milliseconds / 1000)
        timeout.tv_usec = .init((milliseconds % 1000) * 1000)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    // MARK: - I/O

    /// Waits until one of `fds` is readable (or hung up), or until `timeout` passes.
    ///
    /// - Returns: The index of the first ready descriptor, or nil on timeout.
    static func waitReadable(_ fds: [Int32], timeout: Duration?) throws(ServerIOError) -> Int? {
        var pollfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                milliseconds = left <= .zero ? 0 : Int32(clamping: max(1, left.milliseconds))
            }
            let result = poll(&pollfds, nfds_t(pollfds.count), milliseconds)
            if result > 0 { return pollfds.firstIndex { $0.revents != 0 } }
            if result == 0 { return nil }
            if errno != EINTR { throw .system(errno) }
        }
    }

    /// Waits until the peer has closed (or reset) its side of `fd`, the socket is shut down,
    /// or `timeout` passes, without reading: bytes the peer sent stay unread.
    ///
    /// Linux reports the peer's FIN as `POLLRDHUP` even while data is unread. Elsewhere
    /// the unread bytes are drained, which is the only way to see the end of the stream.
    static func waitForPeerClose(_ fd: Int32, timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        #if os(Linux)
        // POLLRDHUP (0x2000) is hidden behind _GNU_SOURCE in the C headers.
        var descriptor = pollfd(fd: fd, events: Int16(0x2000), revents: 0)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return }
            let result = poll(&descriptor, 1, Int32(clamping: max(1, left.milliseconds)))
            if result > 0 || (result < 0 && errno != EINTR) { return }
        }
        #else
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return }
            let count = scratch.withUnsafeMutableBytes { buffer in
                Result { () throws(ServerIOError) in try receive(fd, into: buffer, timeout: left) }
            }
            guard case .success(let read) = count, read > 0 else { return }
        }
        #endif
    }

    /// Waits for `fd` to be readable within `timeout`, then reads what is there into `buffer`.
    ///
    /// - Returns: The bytes read; 0 means the peer closed its side.
    /// - Throws: ``ServerIOError/timedOut`` or a system error.
    static func receive(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, timeout: Duration
    ) throws(ServerIOError) -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        guard try waitReadable([fd], timeout: timeout) != nil else { throw .timedOut }
        while true {
            let count = recv(fd, base, buffer.count, 0)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw .timedOut }
            throw .system(errno)
        }
    }

    /// Sends every byte, resuming after partial writes and interruptions.
    ///
    /// - Throws: ``ServerIOError/timedOut`` when the peer does not read within the send timeout, or a system error.
    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(ServerIOError) {
        guard var pointer = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let count = send(fd, pointer, left, sendFlags)
            if count > 0 {
                pointer += count
                left -= count
            } else if count < 0 && errno == EINTR {
                continue
            } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw .timedOut
            } else {
                throw .system(count < 0 ? errno : EPIPE)
            }
        }
    }

    /// Sends what fits without blocking (for a courtesy answer from the accept thread); errors are ignored.
    static func sendWithoutBlocking(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            _ = send(fd, base, buffer.count, sendFlags | Int32(MSG_DONTWAIT))
        }
    }

    // MARK: - Ending

    /// Shuts down both directions: wakes any thread blocked on the socket and sends FIN.
    static func shutdownBoth(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Shuts down the sending side only (FIN), keeping the receive side open to drain.
    static func shutdownWrite(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// Makes the next close() send RST instead of FIN.
    static func setResetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    static func closeDescriptor(_ fd: Int32) {
        _ = close(fd)
    }

    // MARK: - Options

    private static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func setNonBlocking(_ fd: Int32, _ on: Bool) {
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0 else { return }
        _ = fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
    }

    private static func setCloseOnExec(_ fd: Int32) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
}

#if canImport(Glibc)
private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { Glibc.listen(fd, backlog) }
#else
private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { Darwin.listen(fd, backlog) }
#endif

extension Duration {
    /// Whole milliseconds, rounded down, saturating.
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? Int.min : Int.max }
        return Int(clamping: product + attoseconds / 1_000_000_000_000_000)
    }
}
