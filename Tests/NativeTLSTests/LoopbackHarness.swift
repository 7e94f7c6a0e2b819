import Foundation

@testable import NativeTLS

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Paths of the committed test-only PKI (see Tests/TLSTestCertificates/README.md).
enum TestPKI {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("TLSTestCertificates")

    static func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    /// A server configuration for one of the certificate/key pairs (`localhost`, `expired`, …).
    static func server(_ name: String) -> TLSServerConfiguration {
        TLSServerConfiguration(certificateChain: .file(path("\(name).pem")), privateKey: .file(path("\(name).key")))
    }

    /// A client that trusts only the test CA, so the machine's store cannot change a verdict.
    static func client() throws -> TLSContext {
        try TLSContext(
            client: TLSClientConfiguration(additionalTrustRoots: [.file(path("test-ca.pem"))], trustsSystemRoots: false)
        )
    }
}

/// Runs blocking code on a dedicated thread (never the cooperative pool), by default with
/// SIGPIPE blocked as the transports' I/O threads do.
func onThread<T: Sendable>(
    blockingSIGPIPE: Bool = true, _ body: @escaping @Sendable () throws -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGPIPE)
            pthread_sigmask(blockingSIGPIPE ? SIG_BLOCK : SIG_UNBLOCK, &set, nil)
            do {
                continuation.resume(returning: try body())
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.start()
    }
}

/// A listening loopback socket that hands out accepted connections.
final class LoopbackListener: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        Glibc.close(fd)
    }

    /// Accepts one connection. Blocking.
    func accept() throws -> Int32 {
        let client = Glibc.accept(fd, nil, nil)
        guard client >= 0 else { throw POSIXError(.ECONNABORTED) }
        setTimeouts(client)
        return client
    }

    /// Connects a new blocking client socket to this listener. Blocking.
    func connectClient() throws -> Int32 {
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            Glibc.close(client)
            throw POSIXError(.ECONNREFUSED)
        }
        setTimeouts(client)
        return client
    }
}

/// A generous time-out so a bug fails the test instead of hanging it; never part of a verdict.
private func setTimeouts(_ fd: Int32) {
    var timeout = timeval(tv_sec: 60, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
}

/// Reads exactly `count` bytes (fewer only if the stream ends first).
func readAll(_ stream: TLSStream, count: Int) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
        let n = try bytes.withUnsafeMutableBytes { raw in
            try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
        }
        if n == 0 { break }
        filled += n
    }
    return Array(bytes[0..<filled])
}

/// Reads until the stream ends (cleanly or not); returns the bytes and the error that ended it, if any.
func drain(_ stream: TLSStream) -> (bytes: Int, error: TLSError?) {
    var total = 0
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    while true {
        do {
            let n = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
            if n == 0 { return (total, nil) }
            total += n
        } catch {
            return (total, error as? TLSError ?? TLSError(.other, "\(error)"))
        }
    }
}

/// Deterministic pseudo-random bytes (xorshift), so a mismatch cannot hide behind a pattern.
func testBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

/// What a server saw on a connection whose client was expected to give up.
struct ServerObservation: Sendable {
    /// The server's handshake error, when the handshake failed on its side too.
    var handshakeError: TLSError?
    /// Application bytes the server decrypted (must be 0 when the client rejected the server).
    var applicationBytes: Int
}

extension TLSStream {
    /// Writes an array (test convenience).
    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }
}
