package import Foundation
package import HTTP1
package import NativeTLS
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback server that runs a script on every connection, each on a thread
/// of its own, so that a test controls every byte and every close.
///
/// Over `https` each connection first completes a TLS handshake with the test
/// PKI's `localhost` certificate (one that fails ends the connection without
/// running the script); the script then reads and writes decrypted bytes, a
/// script that returns ends the connection with a TLS close_notify, and
/// ``ScriptedConnection/reset()`` still resets the TCP connection.
package final class ScriptedHTTPServer: Sendable {
    /// Whether connections speak plain HTTP or TLS first.
    package enum Scheme: String, Sendable, Hashable {
        case http, https
    }

    private struct State {
        var accepted = 0
        var stopped = false
        var open: [Int32: ScriptedConnection] = [:]
    }

    package let port: Int
    /// `http://127.0.0.1:<port>`, or `https://…` when the server speaks TLS.
    package let baseURL: URL
    private let listener: Int32
    private let state = Mutex(State())
    private let threads = DispatchGroup()

    /// The server side of the test PKI's `localhost` identity, loaded once.
    private static let tlsContext = try? TLSContext(
        server: TLSServerConfiguration(
            certificateChain: .file(TLSTestPKI.path("localhost.pem")),
            privateKey: .file(TLSTestPKI.path("localhost.key"))))

    /// Starts listening on 127.0.0.1 at a free port.
    ///
    /// - Parameters:
    ///   - scheme: Whether connections speak plain HTTP or TLS first.
    ///   - script: Runs for each connection with its index (0, 1, …); the connection closes when it returns.
    package init(
        scheme: Scheme = .http,
        script: @escaping @Sendable (_ connection: ScriptedConnection, _ index: Int) -> Void
    ) throws {
        guard scheme == .http || Self.tlsContext != nil else {
            throw ScriptFailure("cannot load the test PKI's localhost identity")
        }
        let tls = scheme == .https ? Self.tlsContext : nil
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ScriptFailure("socket: \(errno)") }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw ScriptFailure("bind/listen: \(errno)")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        baseURL = URL(string: "\(scheme.rawValue)://127.0.0.1:\(port)")!
        threads.enter()
        let acceptThread = Thread { [self] in
            defer { threads.leave() }
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return
                }
                let connection = ScriptedConnection(fd: client)
                let index = state.withLock { state -> Int? in
                    guard !state.stopped else { return nil }
                    state.accepted += 1
                    state.open[client] = connection
                    return state.accepted - 1
                }
                guard let index else {
                    connection.close()
                    return
                }
                threads.enter()
                let worker = Thread { [self] in
                    if tls.map({ connection.acceptTLS($0) }) ?? true {
                        script(connection, index)
                    }
                    state.withLock { _ = $0.open.removeValue(forKey: client) }
                    connection.finish()
                    threads.leave()
                }
                worker.start()
            }
        }
        acceptThread.start()
    }

    /// Connections accepted so far.
    package var acceptedConnections: Int { state.withLock { $0.accepted } }

    /// Stops accepting, shuts down open connections and waits for every script to end.
    package func stop() {
        let open = state.withLock { state -> [ScriptedConnection] in
            state.stopped = true
            return Array(state.open.values)
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for connection in open { connection.shutdown() }
        threads.wait()
        close(listener)
    }
}

package struct ScriptFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// One accepted connection, used by its script's thread only (blocking calls).
///
/// `pending` and `tls` are touched by the script's thread only (the accept thread only
/// ever closes a connection whose script never ran); close and shutdown (non-blocking
/// system calls) are serialized by `lifecycle`, so the descriptor is never shut down
/// after it was closed.
package final class ScriptedConnection: @unchecked Sendable {  // SAFETY: see above; `pending`, `tls` are thread-confined.
    package let fd: Int32
    private var pending: [UInt8] = []
    private var tls: TLSStream?
    private let lifecycle = Mutex(false)

    package init(fd: Int32) {
        self.fd = fd
        // A hang guard far beyond any client time-out a test sets (stop() shuts connections down):
        // a test that waits for the client to time out must never race the server giving up.
        var timeout = timeval(tv_sec: 300, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Completes the server side of a TLS handshake; from then on reads and writes are
    /// decrypted and encrypted. Returns whether the handshake succeeded.
    package func acceptTLS(_ context: TLSContext) -> Bool {
        guard let stream = try? TLSStream(server: context, socket: fd), (try? stream.handshake()) != nil else {
            return false
        }
        tls = stream
        return true
    }

    /// Reads a request head; nil at end of stream.
    package func readHead() -> HTTPRequestHead? {
        var parser = HTTPHeadParser()
        while true {
            let parsed = try? pending.withUnsafeBytes { try parser.parseRequest($0) }
            if let (head, used) = parsed {
                pending.removeFirst(used)
                return head
            }
            guard fill() > 0 else { return nil }
        }
    }

    /// Reads `count` body bytes (fewer at end of stream).
    package func readBody(_ count: Int) -> [UInt8] {
        while pending.count < count {
            guard fill() > 0 else { break }
        }
        let taken = Array(pending.prefix(count))
        pending.removeFirst(taken.count)
        return taken
    }

    /// Reads a whole request, its body framed by Content-Length.
    package func readRequest() -> (head: HTTPRequestHead, body: [UInt8])? {
        guard let head = readHead() else { return nil }
        let length = Int(head.headers["Content-Length"] ?? "0") ?? 0
        return (head, readBody(length))
    }

    /// Reads and drops everything until the peer closes; returns the number of bytes dropped.
    @discardableResult
    package func drainUntilClosed() -> Int {
        var total = pending.count
        pending = []
        while true {
            let count = fill()
            guard count > 0 else { return total }
            total += count
            pending = []
        }
    }

    /// Writes `text` (through TLS over `https`); false once the peer is gone.
    @discardableResult
    package func write(_ text: String) -> Bool {
        write(Array(text.utf8))
    }

    /// Writes `bytes` (through TLS over `https`); false once the peer is gone.
    @discardableResult
    package func write(_ bytes: [UInt8]) -> Bool {
        if let tls {
            return bytes.withUnsafeBytes { raw in (try? tls.write(raw)) != nil }
        }
        return writeBelowTLS(bytes)
    }

    /// Writes `bytes` straight to the socket, under TLS if there is any (bytes that are no
    /// record of it); false once the peer is gone.
    @discardableResult
    package func writeBelowTLS(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, sendFlags) }
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Ends the server's direction with a FIN (and no TLS close_notify), keeping the socket open.
    package func finishSendingBelowTLS() {
        lifecycle.withLock { closed in
            if !closed { _ = systemShutdownWrite(fd) }
        }
    }

    /// Closes with RST instead of FIN (and, over TLS, without a close_notify).
    package func reset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        tls?.close()
        tls = nil
        close()
    }

    /// Ends the connection the way a server that is done with it does: over TLS a
    /// close_notify first (a peer's read then ends cleanly, as at a plain FIN), then FIN.
    /// Called on the script's thread once the script returned.
    package func finish() {
        if let tls {
            if !lifecycle.withLock({ $0 }) { try? tls.shutdown() }
            tls.close()
            self.tls = nil
        }
        close()
    }

    package func shutdown() {
        lifecycle.withLock { closed in
            if !closed { _ = systemShutdown(fd) }
        }
    }

    package func close() {
        lifecycle.withLock { closed in
            if !closed { _ = systemClose(fd) }
            closed = true
        }
    }

    private func fill() -> Int {
        guard !lifecycle.withLock({ $0 }) else { return 0 }
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        let count = buffer.withUnsafeMutableBytes { raw in
            guard let tls else { return recv(fd, raw.baseAddress, raw.count, 0) }
            return (try? tls.read(into: raw)) ?? 0
        }
        guard count > 0 else { return 0 }
        pending += buffer[0..<count]
        return count
    }
}

#if canImport(Glibc)
private let sendFlags = Int32(MSG_NOSIGNAL)
private func systemClose(_ fd: Int32) -> Int32 { Glibc.close(fd) }
private func systemShutdown(_ fd: Int32) -> Int32 { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
private func systemShutdownWrite(_ fd: Int32) -> Int32 { Glibc.shutdown(fd, Int32(SHUT_WR)) }
#else
private let sendFlags: Int32 = 0
private func systemClose(_ fd: Int32) -> Int32 { Darwin.close(fd) }
private func systemShutdown(_ fd: Int32) -> Int32 { Darwin.shutdown(fd, SHUT_RDWR) }
private func systemShutdownWrite(_ fd: Int32) -> Int32 { Darwin.shutdown(fd, SHUT_WR) }
#endif
