import Synchronization
import Testing

@testable import NativeTLS

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stream over a non-blocking socket waits for the socket itself, within each call's
/// deadline, and tells a stream that breaks TLS from one that is merely cut short.
@Suite(.timeLimit(.minutes(10))) struct TLSStreamDeadlineTests {
    static func makeNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Sends all of `bytes` below TLS; false once the peer is gone.
    static func sendRaw(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    @Test func megabytesGoBothWaysOverANonBlockingSocket() async throws {
        let listener = try LoopbackListener()
        let serverContext = try TLSContext(server: TestPKI.server("localhost"))
        let clientContext = try TestPKI.client()
        // More than the socket buffers hold, so that writes and reads must wait for the socket.
        let payload = testBytes(count: (8 << 20) + 5, seed: 9)

        async let served = onThread { () throws -> [UInt8] in
            let fd = try listener.accept()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(server: serverContext, socket: fd)
            try stream.handshake()
            let received = try readAll(stream, count: payload.count)
            try stream.write(received)
            _ = drain(stream)
            stream.close()
            return received
        }
        let echoed = try await onThread { () throws -> [UInt8] in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            Self.makeNonBlocking(fd)
            let deadline = ContinuousClock.now + .seconds(60)
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            try stream.handshake(deadline: deadline)
            try payload.withUnsafeBytes { try stream.write($0, deadline: deadline) }
            var echoed = [UInt8](repeating: 0, count: payload.count)
            var filled = 0
            while filled < echoed.count {
                let count = try echoed.withUnsafeMutableBytes { raw in
                    try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]), deadline: deadline)
                }
                if count == 0 { break }
                filled += count
            }
            try stream.shutdown(deadline: deadline)
            stream.close()
            return Array(echoed[0..<filled])
        }
        #expect(try await served == payload)
        #expect(echoed == payload)
    }

    /// The server sends the header of a 16 KiB handshake record, then a byte every 10 ms: each
    /// byte would restart a time-out per read, but not the handshake's deadline.
    @Test func aHandshakeDrippedByteByByteEndsAtItsDeadline() async throws {
        let listener = try LoopbackListener()
        let clientContext = try TestPKI.client()
        async let clientWent = onThread { () throws -> Bool in
            let fd = try listener.accept()
            defer { Glibc.close(fd) }
            guard Self.sendRaw(fd, [0x16, 0x03, 0x03, 0x40, 0x00]) else { return true }
            // A hang guard: 2,000 bytes, then the server closes (a lost connection, not a time-out).
            for _ in 0..<2000 {
                usleep(10_000)
                if !Self.sendRaw(fd, [0]) { return true }
            }
            return false
        }
        let error = try await onThread { () throws -> TLSError? in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            Self.makeNonBlocking(fd)
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            defer { stream.close() }
            do throws(TLSError) {
                try stream.handshake(deadline: .now + .milliseconds(300))
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.kind == .timedOut, "\(String(describing: error))")
        #expect(error?.systemError == ETIMEDOUT)
        #expect(try await clientWent, "the client gave up while bytes still came")
    }

    enum AfterHandshake: String, CaseIterable, Sendable {
        case garbage, badRecordMAC, oversizedRecordHeader, truncatedRecord

        var bytes: [UInt8] {
            let random = testBytes(count: 64, seed: 5)
            switch self {
            case .garbage: return Array("HTTP/1.1 200 OK, but in clear text\r\n".utf8)
            case .badRecordMAC: return [0x17, 0x03, 0x03, 0x00, 0x40] + random
            case .oversizedRecordHeader: return [0x17, 0x03, 0x03, 0xFF, 0xFF] + random
            case .truncatedRecord: return [0x17, 0x03, 0x03, 0x01, 0x00] + random[0..<20]
            }
        }

        /// A stream that ends inside a record was cut; the others broke TLS.
        var kind: TLSError.Kind { self == .truncatedRecord ? .peerClosed : .corruptStream }
    }

    @Test(arguments: AfterHandshake.allCases)
    func aBrokenStreamIsCorruptAndACutOneIsClosed(_ case: AfterHandshake) async throws {
        let listener = try LoopbackListener()
        let serverContext = try TLSContext(server: TestPKI.server("localhost"))
        let clientContext = try TestPKI.client()
        async let served: Void = onThread {
            let fd = try listener.accept()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(server: serverContext, socket: fd)
            try stream.handshake()
            _ = try readAll(stream, count: 4)
            _ = Self.sendRaw(fd, `case`.bytes)
            if `case` == .truncatedRecord {
                Glibc.shutdown(fd, Int32(SHUT_WR))
            }
            // Until the client goes: it must decide from the bytes, not from a close.
            _ = drain(stream)
            stream.close()
        }
        let error = try await onThread { () throws -> TLSError? in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            Self.makeNonBlocking(fd)
            let deadline = ContinuousClock.now + .seconds(60)
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            defer { stream.close() }
            try stream.handshake(deadline: deadline)
            try Array("ping".utf8).withUnsafeBytes { try stream.write($0, deadline: deadline) }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 1)
            defer { buffer.deallocate() }
            do throws(TLSError) {
                _ = try stream.read(into: buffer, deadline: deadline)
                return nil
            } catch {
                return error
            }
        }
        try await served
        #expect(error?.kind == `case`.kind, "\(String(describing: error))")
    }
}
