import CCRC32C
package import Foundation
package import HTTPClient
package import NativeTLS
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Paths of the committed test-only PKI (see Tests/TLSTestCertificates/README.md).
package enum TLSTestPKI {
    package static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("TLSTestCertificates")

    package static func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    /// A native transport that trusts only the test CA, so the machine's store cannot change a verdict.
    package static func transport(maxIdleConnectionsPerHost: Int = 32) -> NativeHTTPTransport {
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.additionalTrustRoots = [.file(path("test-ca.pem"))]
        configuration.trustsSystemRoots = false
        configuration.maxIdleConnectionsPerHost = maxIdleConnectionsPerHost
        return NativeHTTPTransport(configuration: configuration)
    }
}

/// A loopback server speaking just enough HTTP/1.1 over NativeTLS's server side (or, for one
/// test, plain HTTP) to test the native transport's TLS: a GET gets ``getBody`` (or a `404`, see
/// ``notFoundMarker``); a PUT or POST gets `"<byte count> <CRC32C>"` of its body; connections
/// are kept alive.
///
/// Every connection runs on a thread of its own with blocking sockets (generous time-outs
/// guard against hangs; they never decide a verdict). What happened is reported as
/// ``Event``s, so tests wait for events rather than for time.
package final class TLSTestServer: Sendable {
    package enum Mode: Sendable {
        /// TLS with the named certificate and key of the test PKI (`localhost`, `expired`, …).
        case tls(String)
        /// TLS with the test PKI's `localhost` identity, in this one protocol version only.
        case tlsOnly(TLSServerConfiguration.OnlyVersion)
        /// Plain HTTP: answers whatever arrives (a TLS ClientHello) with `400`.
        case plainHTTP
    }

    /// What one connection amounted to.
    package struct Report: Sendable {
        package var handshakeSucceeded = false
        package var sessionResumed = false
        /// The cipher suite the handshake settled on (OpenSSL's name), if it succeeded.
        package var cipherSuite: String?
        /// Complete request heads received.
        package var requests = 0
        /// Application bytes received (decrypted, or in clear for ``Mode/plainHTTP``).
        package var applicationBytes = 0
        /// Whether any received byte sequence contained `Authorization`.
        package var sawAuthorization = false
    }

    package enum Event: Sendable {
        /// A connection from the client's port was accepted.
        case accepted(port: Int)
        /// A held upload's head arrived; the server stops reading it.
        case holding
        /// A connection ended.
        case finished(port: Int, Report)
    }

    package static let getBody = testBytes(count: 300_000, seed: 7)
    /// A GET whose target contains this is answered `404` with a JSON error (a missing object,
    /// for clients that must end at once, whatever they asked).
    package static let notFoundMarker = "not-found"

    package let port: Int
    package let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    private let listener: Int32
    private let context: TLSContext?
    private let holdsUploads: Bool
    private let open = Mutex<Set<Int32>>([])
    private let stopped = Mutex(false)

    package init(_ mode: Mode, holdsUploads: Bool = false) throws {
        switch mode {
        case .tls(let name):
            context = try TLSContext(server: Self.identity(name))
        case .tlsOnly(let version):
            var configuration = Self.identity("localhost")
            configuration.onlyVersionForTesting = version
            context = try TLSContext(server: configuration)
        case .plainHTTP:
            context = nil
        }
        self.holdsUploads = holdsUploads
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    /// `https://127.0.0.1:<port><path>`.
    package func url(_ path: String = "/x") -> URL {
        URL(string: "https://127.0.0.1:\(port)\(path)")!
    }

    /// The server's answer to an upload of `body`: `"<byte count> <CRC32C>"`.
    package static func answer(toUploadOf body: [UInt8]) -> String {
        let crc = body.withUnsafeBytes { $0.isEmpty ? 0 : cs_crc32c_update(0, $0.baseAddress!, $0.count) }
        return "\(body.count) \(crc)"
    }

    /// The reports of every connection accepted before a sentinel connection, which (the
    /// accept queue being first-in first-out) proves no other attempt is still queued.
    package func connectionsSoFar() async throws -> [Report] {
        let sentinel = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(sentinel) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let connected = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(sentinel, $0, length) == 0 && getsockname(sentinel, $0, &length) == 0
            }
        }
        guard connected else { throw POSIXError(.ECONNREFUSED) }
        let sentinelPort = Int(UInt16(bigEndian: address.sin_port))
        var accepted: [Int] = []
        var finished: [Int: Report] = [:]
        var sawSentinel = false
        for await event in events {
            switch event {
            case .accepted(let port) where port == sentinelPort: sawSentinel = true
            case .accepted(let port): accepted.append(port)
            case .finished(let port, let report): finished[port] = report
            case .holding: break
            }
            if sawSentinel && accepted.allSatisfy({ finished[$0] != nil }) { break }
        }
        return accepted.compactMap { finished[$0] }
    }

    /// The named certificate and key of the test PKI.
    private static func identity(_ name: String) -> TLSServerConfiguration {
        TLSServerConfiguration(
            certificateChain: .file(TLSTestPKI.path("\(name).pem")), privateKey: .file(TLSTestPKI.path("\(name).key")))
    }

    /// Stops accepting and shuts every connection down (held ones included).
    package func stop() {
        stopped.withLock { $0 = true }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        for fd in open.withLock({ $0 }) { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit {
        Glibc.close(listener)
    }

    private func acceptLoop() {
        while !stopped.withLock({ $0 }) {
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let fd = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
            if fd < 0 {
                if errno == EINTR { continue }
                break
            }
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let peerPort = Int(UInt16(bigEndian: peer.sin_port))
            open.withLock { _ = $0.insert(fd) }
            eventSink.yield(.accepted(port: peerPort))
            Thread { [self] in
                var set = sigset_t()
                sigemptyset(&set)
                sigaddset(&set, SIGPIPE)
                pthread_sigmask(SIG_BLOCK, &set, nil)
                let report = serve(fd)
                open.withLock { _ = $0.remove(fd) }
                Glibc.close(fd)
                eventSink.yield(.finished(port: peerPort, report))
            }.start()
        }
        eventSink.finish()
    }

    /// A connection's byte stream, TLS or plain.
    private struct Connection {
        let fd: Int32
        let stream: TLSStream?

        func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
            if let stream { return (try? stream.read(into: buffer)) ?? 0 }
            return max(0, Glibc.recv(fd, buffer.baseAddress, buffer.count, 0))
        }

        func write(_ bytes: [UInt8]) -> Bool {
            if let stream { return (try? bytes.withUnsafeBytes { try stream.write($0) }) != nil }
            return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                == bytes.count
        }
    }

    private func serve(_ fd: Int32) -> Report {
        var report = Report()
        var stream: TLSStream?
        if let context {
            guard let made = try? TLSStream(server: context, socket: fd), (try? made.handshake()) != nil else {
                return report
            }
            report.handshakeSucceeded = true
            report.sessionResumed = made.sessionWasReused
            report.cipherSuite = made.negotiatedCipherSuite
            stream = made
        }
        defer { stream?.close() }
        let connection = Connection(fd: fd, stream: stream)
        var input: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        let authorization = Array("authorization".utf8)
        func receive() -> Bool {
            let count = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
            guard count > 0 else { return false }
            report.applicationBytes += count
            input.append(contentsOf: buffer[0..<count])
            return true
        }
        if context == nil {
            // Plain HTTP: whatever arrives (a ClientHello) gets a 400, as a real server would answer.
            if receive() {
                report.sawAuthorization = Self.contains(input.map { Self.lower($0) }, authorization)
                _ = connection.write(
                    Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            }
            return report
        }
        let separator = Array("\r\n\r\n".utf8)
        while true {
            var headEnd: Int?
            while true {
                if let end = Self.find(input, separator) {
                    headEnd = end
                    break
                }
                guard receive() else { return report }
            }
            guard let headEnd else { return report }
            let head = String(decoding: input[0..<headEnd], as: UTF8.self)
            input.removeFirst(headEnd + separator.count)
            report.requests += 1
            let lines = head.split(separator: "\r\n").map(String.init)
            let method = lines.first?.split(separator: " ").first.map(String.init) ?? ""
            var length = 0
            for line in lines.dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2 else { continue }
                if parts[0].lowercased() == "authorization" { report.sawAuthorization = true }
                if parts[0].lowercased() == "content-length" { length = Int(parts[1]) ?? 0 }
            }
            if holdsUploads && length > 0 {
                eventSink.yield(.holding)
                // Read nothing more: the client's writes stall until it gives up (or the server stops).
                while !stopped.withLock({ $0 }) && POSIXProbe.peerOpen(fd) {}
                return report
            }
            var crc: UInt32 = 0
            var left = length
            while left > 0 {
                if input.isEmpty, !receive() { return report }
                let take = min(left, input.count)
                input.withUnsafeBytes { crc = cs_crc32c_update(crc, $0.baseAddress!, take) }
                input.removeFirst(take)
                left -= take
            }
            let target = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            let missing = method == "GET" && target.contains(Self.notFoundMarker)
            let body: [UInt8] =
                missing
                ? Array(#"{"error":{"code":404,"message":"No such object."}}"#.utf8)
                : method == "GET" ? Self.getBody : Array("\(length) \(crc)".utf8)
            let status = missing ? "404 Not Found\r\nContent-Type: application/json" : "200 OK"
            let response = Array("HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
            guard connection.write(response) else { return report }
        }
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (65...90).contains(byte) ? byte + 32 : byte
    }

    private static func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        find(haystack, needle) != nil
    }
}

/// Waits on a held connection without reading it.
package enum POSIXProbe {
    /// Blocks (up to 60 s, a hang guard) until the peer closes or the socket is shut down;
    /// returns whether it is still open afterwards.
    package static func peerOpen(_ fd: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: 0x2000 /* POLLRDHUP, hidden behind _GNU_SOURCE */, revents: 0)
        let ready = poll(&descriptor, 1, 60_000)
        return ready == 0
    }
}

/// Deterministic pseudo-random bytes (xorshift), so a mismatch cannot hide behind a pattern.
package func testBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}
