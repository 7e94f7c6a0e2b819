import Foundation
import HTTPTestServers
import NativeTLS
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The server side of a TLS connection whose encrypted bytes reach the client only when
/// the test sends them, so that a test can cut a TLS record in two (part of it now, the
/// rest once the client has shown what it did with the part).
///
/// The TLS stream runs over one end of a socket pair; one thread copies everything the
/// client sends into it. Until ``holdOutput()`` another thread copies the stream's output
/// (the handshake, the session tickets) to the client; from then on the test reads the
/// records with ``takeOutput()`` and sends what it chooses with ``send(_:)``.
///
/// Used from one script thread of a plain ``ScriptedHTTPServer`` (whose connection's
/// descriptor is the TCP socket); ``finish()`` must run before the script returns.
final class TLSRecordRelay: @unchecked Sendable {  // SAFETY: `stream` is used by the script's thread only.
    private let tcp: Int32
    /// The TLS stream's end of the socket pair.
    private let inner: Int32
    /// The relay's end: what the client sends goes in here, what the stream writes comes out.
    private let outer: Int32
    /// The server side of the TLS connection, once ``handshake()`` succeeded.
    private(set) var stream: TLSStream?
    private let stopForwarding = Atomic(false)
    /// Whether the forwarding thread was waited for (by the script's thread only).
    private var forwarderJoined = false
    private let forwarderDone = DispatchSemaphore(value: 0)
    private let inboundDone = DispatchSemaphore(value: 0)

    /// The test PKI's `localhost` identity, loaded once.
    private static let context = try? TLSContext(
        server: TLSServerConfiguration(
            certificateChain: .file(TLSTestPKI.path("localhost.pem")),
            privateKey: .file(TLSTestPKI.path("localhost.key"))))

    /// Starts both copying threads over the accepted TCP socket `tcp` (which the caller keeps).
    init(tcp: Int32) throws {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
            throw ScriptFailure("socketpair: \(errno)")
        }
        self.tcp = tcp
        inner = pair[0]
        outer = pair[1]
        Thread { [self] in
            // Client to stream, until the client closes (or the socket is shut down).
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(tcp, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0, Self.sendAll(outer, buffer[0..<count]) else { break }
            }
            Glibc.shutdown(outer, Int32(SHUT_WR))
            inboundDone.signal()
        }.start()
        Thread { [self] in
            // Stream to client, until told to stop: the flag is read before the poll, so
            // everything written before it was set is seen (and sent) before this thread ends.
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let stopping = stopForwarding.load(ordering: .acquiring)
                var descriptor = pollfd(fd: outer, events: Int16(POLLIN), revents: 0)
                if poll(&descriptor, 1, 5) > 0 {
                    let count = buffer.withUnsafeMutableBytes { recv(outer, $0.baseAddress, $0.count, 0) }
                    if count > 0, Self.sendAll(tcp, buffer[0..<count]) { continue }
                    break
                }
                if stopping { break }
            }
            forwarderDone.signal()
        }.start()
    }

    /// Runs the server side of the handshake; false when it failed.
    func handshake() -> Bool {
        guard let context = Self.context, let made = try? TLSStream(server: context, socket: inner),
            (try? made.handshake()) != nil
        else { return false }
        stream = made
        return true
    }

    /// Reads the next request head and its `Content-Length` body (decrypted); nil at end of stream.
    func readRequest() -> String? {
        guard let stream else { return nil }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = String(text[..<end.lowerBound])
                let length =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                var body = received.count - text.utf8.distance(from: text.startIndex, to: end.upperBound)
                while body < length {
                    let count = buffer.withUnsafeMutableBytes { (try? stream.read(into: $0)) ?? 0 }
                    guard count > 0 else { return nil }
                    body += count
                }
                return head
            }
            let count = buffer.withUnsafeMutableBytes { (try? stream.read(into: $0)) ?? 0 }
            guard count > 0 else { return nil }
            received += buffer[0..<count]
        }
    }

    /// Stops copying the stream's output to the client, once everything written so far is sent.
    func holdOutput() {
        joinForwarder()
    }

    private func joinForwarder() {
        guard !forwarderJoined else { return }
        forwarderJoined = true
        stopForwarding.store(true, ordering: .releasing)
        forwarderDone.wait()
    }

    /// Encrypts `bytes` as one `write` (OpenSSL cuts records of at most 16 KiB); after
    /// ``holdOutput()`` they wait for ``takeOutput()``.
    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { raw in (try? stream?.write(raw)) != nil }
    }

    /// Every encrypted byte the stream wrote and nobody sent yet, cut into whole TLS records.
    func takeOutput() -> [[UInt8]] {
        var waiting: Int32 = 0
        _ = ioctl(outer, UInt(FIONREAD), &waiting)
        var bytes = [UInt8](repeating: 0, count: Int(waiting))
        var filled = 0
        while filled < bytes.count {
            let count = bytes[filled...].withUnsafeMutableBytes { recv(outer, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            filled += count
        }
        var records: [[UInt8]] = []
        var offset = 0
        // A record: type (1 byte), version (2), length (2, big-endian), then the length's bytes.
        while offset + 5 <= filled {
            let end = offset + 5 + (Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4]))
            guard end <= filled else { break }
            records.append(Array(bytes[offset..<end]))
            offset = end
        }
        return records
    }

    /// Sends encrypted bytes to the client in one `send`.
    func send(_ bytes: ArraySlice<UInt8>) {
        _ = Self.sendAll(tcp, bytes)
    }

    /// Waits until the client closes its side of the connection.
    func waitForClientClose() {
        inboundDone.wait()
        inboundDone.signal()
    }

    /// Ends the connection and waits for both copying threads; call it before the script returns.
    func finish() {
        stream?.close()
        stream = nil
        Glibc.shutdown(tcp, Int32(SHUT_RDWR))
        joinForwarder()
        inboundDone.wait()
        Glibc.close(inner)
        Glibc.close(outer)
    }

    private static func sendAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}
