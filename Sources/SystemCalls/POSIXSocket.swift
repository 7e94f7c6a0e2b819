#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The POSIX socket calls the SDK's native transport and the emulator both
/// make, with the platform differences (SIGPIPE suppression, constant types)
/// and the `EINTR` / `EAGAIN` handling in one place.
///
/// Everything here may block up to its time-out: call it only on threads of
/// one's own, never on Swift's cooperative pool. Failures are ``SocketError``;
/// each caller gives them its own meaning.
package enum POSIXSocket {
    #if canImport(Glibc) || canImport(Musl)
    package static let streamType = Int32(SOCK_STREAM.rawValue)
    /// Linux suppresses SIGPIPE per call; Darwin per socket (`SO_NOSIGPIPE`, see ``setNoSigPipe(_:)``).
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    package static let streamType = SOCK_STREAM
    private static let sendFlags: Int32 = 0
    #endif

    // MARK: - Creating

    /// Creates a non-blocking IPv4 listening socket bound to `host:port`.
    ///
    /// - Parameter bufferSize: `SO_RCVBUF` and `SO_SNDBUF`, set before `listen` because
    ///   the window scale is agreed in the handshake: accepted sockets need the large
    ///   receive buffer from the start.
    /// - Returns: The descriptor and the bound port (the ephemeral one when `port` is 0).
    /// - Throws: ``SocketError/invalidAddress`` unless `host` is an IPv4 literal or
    ///   `localhost` and `port` is in range; the system error of socket, bind or listen.
    package static func listen(
        host: String, port: Int, backlog: Int, bufferSize: Int
    ) throws(SocketError) -> (fd: Int32, port: Int) {
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
        setBufferSizes(fd, receive: bufferSize, send: bufferSize)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, systemListen(fd, Int32(clamping: backlog)) == 0 else {
            let error = errno
            closeDescriptor(fd)
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
            closeDescriptor(fd)
            throw .system(error)
        }
        return (fd, Int(UInt16(bigEndian: boundAddress.sin_port)))
    }

    /// A connected pair of local sockets (one thread wakes another's `poll` through it).
    package static func socketPair() throws(SocketError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, streamType, 0, &fds) == 0 else { throw .system(errno) }
        for fd in fds {
            setCloseOnExec(fd)
            setNoSigPipe(fd)
        }
        return (fds[0], fds[1])
    }

    /// Accepts one pending connection, or returns nil if there is none (or it vanished);
    /// `errno` then says why.
    package static func accept(_ listener: Int32) -> Int32? {
        while true {
            let fd = systemAccept(listener)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// One address `getaddrinfo` found for a host.
    package struct Address {
        package var family: Int32
        package var socketProtocol: Int32
        fileprivate var storage: sockaddr_storage
        fileprivate var length: socklen_t
    }

    /// Resolves `host` (a name or an IP literal without brackets) for a TCP connection to `port`.
    ///
    /// - Returns: The addresses, in the resolver's order of preference.
    /// - Throws: The resolver's explanation when the name cannot be resolved.
    package static func resolve(host: String, port: Int) throws(ResolutionError) -> [Address] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamType
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw ResolutionError(reason: String(cString: gai_strerror(resolved)))
        }
        defer { freeaddrinfo(first) }
        var addresses: [Address] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            guard let address = current.pointee.ai_addr else { continue }
            let length = current.pointee.ai_addrlen
            guard Int(length) <= MemoryLayout<sockaddr_storage>.size else { continue }
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
            }
            addresses.append(
                Address(
                    family: current.pointee.ai_family, socketProtocol: current.pointee.ai_protocol, storage: storage,
                    length: length))
        }
        return addresses
    }

    /// Why a host name could not be resolved, in the resolver's words.
    package struct ResolutionError: Error {
        package var reason: String
    }

    /// Creates a TCP socket for `address`.
    ///
    /// - Throws: The system error of `socket`.
    package static func makeSocket(for address: Address) throws(SocketError) -> Int32 {
        let fd = socket(address.family, streamType, address.socketProtocol)
        guard fd >= 0 else { throw .system(errno) }
        return fd
    }

    /// Connects the non-blocking `fd` to `address`, waiting at most `timeout`.
    ///
    /// - Returns: 0 when connected, otherwise the `errno` the attempt ended with
    ///   (`ETIMEDOUT` when the time ran out).
    package static func connect(_ fd: Int32, to address: Address, timeout: Duration) -> Int32 {
        var storage = address.storage
        let started = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemConnect(fd, $0, address.length) }
        }
        if started == 0 { return 0 }
        let code = errno
        guard code == EINPROGRESS || code == EINTR else { return code }
        var pollDescriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return ETIMEDOUT }
            let result = systemPoll(&pollDescriptor, 1, left.pollMilliseconds)
            if result > 0 { break }
            if result == 0 { return ETIMEDOUT }
            if errno != EINTR { return errno }
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    // MARK: - Options (best effort: a refused option leaves the system's default)

    /// Non-blocking (`true`) or blocking.
    package static func setNonBlocking(_ fd: Int32, _ on: Bool) {
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0 else { return }
        _ = fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
    }

    /// Whether `fd` is non-blocking (false also when it cannot be asked).
    package static func isNonBlocking(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFL, 0)
        return flags >= 0 && flags & O_NONBLOCK != 0
    }

    /// Not inherited by child processes.
    package static func setCloseOnExec(_ fd: Int32) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    /// No Nagle delay: small writes (a request head) go at once.
    package static func setNoDelay(_ fd: Int32) {
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// `SO_RCVBUF` and `SO_SNDBUF` to ask for (the kernel caps them); nil leaves one as it is.
    package static func setBufferSizes(_ fd: Int32, receive: Int?, send: Int?) {
        if let receive { setOption(fd, SOL_SOCKET, SO_RCVBUF, Int32(clamping: receive)) }
        if let send { setOption(fd, SOL_SOCKET, SO_SNDBUF, Int32(clamping: send)) }
    }

    /// No SIGPIPE on a write to a closed connection (Darwin sets this per socket; Linux per call).
    package static func setNoSigPipe(_ fd: Int32) {
        #if canImport(Darwin)
        setOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
        #endif
    }

    /// A blocking send gives up with `EAGAIN` after `timeout`, so a peer that stops reading
    /// cannot hold a thread for ever.
    package static func setSendTimeout(_ fd: Int32, _ timeout: Duration) {
        setTimeout(fd, SO_SNDTIMEO, timeout)
    }

    /// A blocking receive gives up with `EAGAIN` after `timeout` (`SO_RCVTIMEO`), which also
    /// bounds the receives a library makes on the socket itself.
    package static func setReceiveTimeout(_ fd: Int32, _ timeout: Duration) {
        setTimeout(fd, SO_RCVTIMEO, timeout)
    }

    /// Sets the socket time-out `option` (`SO_SNDTIMEO` or `SO_RCVTIMEO`) to `timeout`, at least 1 ms
    /// (zero would mean "never").
    private static func setTimeout(_ fd: Int32, _ option: Int32, _ timeout: Duration) {
        let milliseconds = max(1, timeout.milliseconds)
        var value = timeval()
        value.tv_sec = .init(milliseconds / 1000)
        value.tv_usec = .init((milliseconds % 1000) * 1000)
        _ = setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Makes the next close send RST instead of FIN.
    package static func setResetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    private static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    // MARK: - Waiting

    /// What one ``poll(_:readable:writable:timeout:)`` found.
    package struct Readiness: Sendable {
        package var readable: Bool
        package var writable: Bool
        /// The peer hung up or the socket has an error: the next read or write says which.
        package var broken: Bool
    }

    /// One `poll` of `fd` for the events asked, for at most `timeout`.
    ///
    /// - Returns: What is ready, or nil when the time ran out or a signal interrupted it.
    /// - Throws: The system error of `poll`.
    package static func poll(
        _ fd: Int32, readable: Bool, writable: Bool, timeout: Duration
    ) throws(SocketError) -> Readiness? {
        var events: Int16 = 0
        if readable { events |= Int16(POLLIN) }
        if writable { events |= Int16(POLLOUT) }
        var pollDescriptor = pollfd(fd: fd, events: events, revents: 0)
        let result = systemPoll(&pollDescriptor, 1, timeout.pollMilliseconds)
        if result > 0 {
            let revents = pollDescriptor.revents
            return Readiness(
                readable: revents & Int16(POLLIN) != 0,
                writable: revents & Int16(POLLOUT) != 0,
                broken: revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
            )
        }
        if result < 0 && errno != EINTR { throw .system(errno) }
        return nil
    }

    /// Waits until one of `fds` is readable (or hung up), or until `timeout` passes (nil: no limit).
    ///
    /// - Returns: The index of the first ready descriptor, or nil on time-out.
    package static func waitReadable(_ fds: [Int32], timeout: Duration?) throws(SocketError) -> Int? {
        var pollfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                milliseconds = left <= .zero ? 0 : Int32(clamping: max(1, left.milliseconds))
            }
            let result = systemPoll(&pollfds, nfds_t(pollfds.count), milliseconds)
            if result > 0 { return pollfds.firstIndex { $0.revents != 0 } }
            if result == 0 { return nil }
            if errno != EINTR { throw .system(errno) }
        }
    }

    /// Whether an idle connection is still usable: nothing to read (no EOF, no
    /// stray bytes) and no error pending. Never blocks.
    package static func isIdleAndOpen(_ fd: Int32) -> Bool {
        var pollDescriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return systemPoll(&pollDescriptor, 1, 0) == 0
    }

    /// Waits until the peer has closed (or reset) its side of `fd`, the socket is shut down,
    /// or `timeout` passes, without reading: bytes the peer sent stay unread.
    ///
    /// Linux reports the peer's FIN as `POLLRDHUP` even while data is unread. Elsewhere
    /// the unread bytes are drained, which is the only way to see the end of the stream.
    package static func waitForPeerClose(_ fd: Int32, timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        #if os(Linux)
        // POLLRDHUP (0x2000) is hidden behind _GNU_SOURCE in the C headers.
        var descriptor = pollfd(fd: fd, events: Int16(0x2000), revents: 0)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return }
            let result = systemPoll(&descriptor, 1, Int32(clamping: max(1, left.milliseconds)))
            if result > 0 || (result < 0 && errno != EINTR) { return }
        }
        #else
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return }
            let count = scratch.withUnsafeMutableBytes { buffer in
                Result { () throws(SocketError) in try receive(fd, into: buffer, timeout: left) }
            }
            guard case .success(let read) = count, read > 0 else { return }
        }
        #endif
    }

    // MARK: - Sending and receiving

    /// Byte ranges that go out gathered (`sendmsg` with an `iovec` per range), in order,
    /// over as many sends as the socket needs: ``advance(by:)`` drops what a send took.
    ///
    /// The ranges are borrowed: their storage must stay valid and unchanged while this lives.
    /// One thread uses it.
    package final class GatheredBytes {
        /// Ranges passed to one send at most (`IOV_MAX` is 1024 on Linux and Darwin).
        private static let rangesPerSend = 512
        private let vectors: UnsafeMutableBufferPointer<iovec>
        /// The ranges in use, `vectors[first..<end]`: the first one may be partly sent.
        private var first = 0
        private let end: Int

        /// Gathers the non-empty ones of `ranges`.
        package init(_ ranges: [UnsafeRawBufferPointer]) {
            let nonEmpty = ranges.filter { !$0.isEmpty }
            vectors = .allocate(capacity: max(1, nonEmpty.count))
            for (index, range) in nonEmpty.enumerated() {
                vectors[index] = iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: range.baseAddress), iov_len: range.count)
            }
            end = nonEmpty.count
        }

        deinit { vectors.deallocate() }

        /// Whether every byte has been sent.
        package var isEmpty: Bool { first == end }

        /// The ranges the next send offers, in order (at most a send's worth of them).
        package var nextRanges: some Sequence<UnsafeRawBufferPointer> {
            window.lazy.map { UnsafeRawBufferPointer(start: $0.iov_base, count: $0.iov_len) }
        }

        /// The `iovec`s of the next send.
        fileprivate var window: UnsafeMutableBufferPointer<iovec> {
            UnsafeMutableBufferPointer(rebasing: vectors[first..<min(end, first + Self.rangesPerSend)])
        }

        /// Drops the first `count` bytes (what a send took), at most all that is left.
        package func advance(by count: Int) {
            var left = count
            while left > 0 && first < end {
                let length = vectors[first].iov_len
                if left >= length {
                    left -= length
                    first += 1
                } else {
                    vectors[first].iov_base = vectors[first].iov_base.map { $0 + left }
                    vectors[first].iov_len = length - left
                    left = 0
                }
            }
        }
    }

    /// Sends from `bytes` (gathered, `sendmsg`) what fits without blocking; the caller then
    /// advances `bytes` by what was sent.
    ///
    /// - Returns: The bytes sent, or nil when the send buffer is full.
    package static func sendAvailable(_ fd: Int32, _ bytes: GatheredBytes) throws(SocketError) -> Int? {
        try sendAvailable(fd, bytes.window)
    }

    /// Sends from `bytes` (`sendmsg`) what fits without blocking.
    ///
    /// - Returns: The bytes sent, or nil when the send buffer is full.
    package static func sendAvailable(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SocketError) -> Int? {
        var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        return try withUnsafeMutablePointer(to: &vector) { pointer throws(SocketError) in
            try sendAvailable(fd, UnsafeMutableBufferPointer(start: pointer, count: 1))
        }
    }

    /// Sends from `buffers` (gathered, `sendmsg`) what fits without blocking.
    private static func sendAvailable(
        _ fd: Int32, _ buffers: UnsafeMutableBufferPointer<iovec>
    ) throws(SocketError) -> Int? {
        var message = msghdr()
        message.msg_iov = buffers.baseAddress
        message.msg_iovlen = .init(buffers.count)
        return try withoutWaiting { sendmsg(fd, &message, sendFlags) }
    }

    /// Receives what is there without waiting.
    ///
    /// - Returns: The bytes read (0 when the peer closed its side), or nil when nothing is there yet.
    package static func receiveAvailable(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer
    ) throws(SocketError) -> Int? {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        return try withoutWaiting { recv(fd, base, buffer.count, 0) }
    }

    /// Runs a non-blocking transfer again while a signal interrupts it.
    ///
    /// - Returns: Its byte count, or nil when it would have had to wait.
    private static func withoutWaiting(_ call: () -> Int) throws(SocketError) -> Int? {
        while true {
            let count = call()
            if count >= 0 { return count }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return nil }
            throw .system(code)
        }
    }

    /// Waits for `fd` to be readable within `timeout`, then reads what is there into `buffer`.
    ///
    /// - Returns: The bytes read; 0 means the peer closed its side.
    /// - Throws: ``SocketError/timedOut`` or a system error.
    package static func receive(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, timeout: Duration
    ) throws(SocketError) -> Int {
        guard !buffer.isEmpty else { return 0 }
        guard try waitReadable([fd], timeout: timeout) != nil else { throw .timedOut }
        guard let count = try receiveAvailable(fd, into: buffer) else { throw .timedOut }
        return count
    }

    /// Sends every byte on a blocking socket, resuming after partial writes and interruptions.
    ///
    /// - Throws: ``SocketError/timedOut`` when the peer does not read within the socket's
    ///   send time-out (``setSendTimeout(_:_:)``), or a system error.
    package static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SocketError) {
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

    /// Sends what fits without blocking (a courtesy answer); errors are ignored.
    package static func sendWithoutBlocking(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            _ = send(fd, base, buffer.count, sendFlags | Int32(MSG_DONTWAIT))
        }
    }

    #if os(Linux)
    /// What one `sendfile(2)` call did.
    package enum SendFileResult {
        /// This many bytes went out (0: the file ended early).
        case sent(Int)
        /// The send buffer is full.
        case wouldBlock
        /// The kernel cannot send this file this way: fall back to reads and writes.
        case unsupported
        /// Reading the file failed with this `errno`.
        case fileError(Int32)
    }

    /// Sends up to `count` bytes of `file` from `offset` with `sendfile(2)`, without blocking.
    ///
    /// SIGPIPE cannot be suppressed per call here; block it on the calling thread.
    ///
    /// - Throws: The socket's system error.
    package static func sendFile(
        _ fd: Int32, from file: Int32, offset: Int64, count: Int
    ) throws(SocketError) -> SendFileResult {
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
            default: throw .system(code)
            }
        }
    }
    #endif

    // MARK: - Ending

    /// Shuts down both directions: wakes any thread blocked on the socket and sends FIN.
    package static func shutdownBoth(_ fd: Int32) {
        _ = systemShutdown(fd, Int32(SHUT_RDWR))
    }

    /// Shuts down the receiving side only: wakes a thread blocked reading `fd` (it reads what
    /// is left, then the end of the stream) and leaves the sending side open.
    package static func shutdownRead(_ fd: Int32) {
        _ = systemShutdown(fd, Int32(SHUT_RD))
    }

    /// Shuts down the sending side only (FIN), keeping the receive side open to drain.
    package static func shutdownWrite(_ fd: Int32) {
        _ = systemShutdown(fd, Int32(SHUT_WR))
    }

    /// Closes `fd`; the number may name another file right after.
    package static func closeDescriptor(_ fd: Int32) {
        _ = systemClose(fd)
    }
}

// The C functions whose names the enum's own methods hide inside it.
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
private func systemAccept(_ fd: Int32) -> Int32 { accept(fd, nil, nil) }
private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { listen(fd, backlog) }
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }
private func systemShutdown(_ fd: Int32, _ how: Int32) -> Int32 { shutdown(fd, how) }
private func systemPoll(_ fds: UnsafeMutablePointer<pollfd>, _ count: nfds_t, _ timeout: Int32) -> Int32 {
    poll(fds, count, timeout)
}

extension POSIXSocket {
    /// The bytes of an IPv4 (4) or IPv6 (16) address written as text (`inet_pton`), or nil for a name.
    package static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}
