import Testing

@testable import NativeTLS

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback server (our server side) and our client, each on its own thread.
@Suite(.timeLimit(.minutes(10))) struct TLSStreamTests {
    @Test func echoesMegabytesBothWaysWithHTTP11() async throws {
        let listener = try LoopbackListener()
        let serverContext = try TLSContext(server: TestPKI.server("localhost"))
        let clientContext = try TestPKI.client()
        let payload = testBytes(count: (3 << 20) + 17, seed: 42)

        async let served = onThread { () throws -> ([UInt8], String?, Int) in
            let fd = try listener.accept()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(server: serverContext, socket: fd)
            try stream.handshake()
            let received = try readAll(stream, count: payload.count)
            try stream.write(received)
            let tail = drain(stream)  // ends with the client's close_notify
            #expect(tail.error == nil)
            stream.close()
            return (received, stream.negotiatedApplicationProtocol, tail.bytes)
        }
        let (echoed, clientALPN, version) = try await onThread { () throws -> ([UInt8], String?, String?) in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            try stream.handshake()
            try stream.write(payload)
            let echoed = try readAll(stream, count: payload.count)
            let alpn = stream.negotiatedApplicationProtocol
            let version = stream.negotiatedProtocolVersion
            try stream.shutdown()
            stream.close()
            return (echoed, alpn, version)
        }
        let (received, _, extra) = try await served
        #expect(received == payload)
        #expect(echoed == payload)
        #expect(extra == 0)
        #expect(clientALPN == "http/1.1")
        #expect(version == "TLS 1.3")
    }

    @Test func aSecondConnectionResumesTheSession() async throws {
        let listener = try LoopbackListener()
        let serverContext = try TLSContext(server: TestPKI.server("localhost"))
        let clientContext = try TestPKI.client()
        var reused: [Bool] = []
        for round in 0..<2 {
            async let served: Void = onThread {
                let fd = try listener.accept()
                defer { Glibc.close(fd) }
                let stream = try TLSStream(server: serverContext, socket: fd)
                try stream.handshake()
                let request = try readAll(stream, count: 4)
                try stream.write(request)
                _ = drain(stream)
                stream.close()
            }
            let resumed = try await onThread { () throws -> Bool in
                let fd = try listener.connectClient()
                defer { Glibc.close(fd) }
                let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
                try stream.handshake()
                try stream.write(Array("ping".utf8))
                // Reading also processes the TLS 1.3 session tickets the server sent after its handshake.
                #expect(try readAll(stream, count: 4) == Array("ping".utf8))
                try stream.shutdown()
                stream.close()
                return stream.sessionWasReused
            }
            try await served
            reused.append(resumed)
            _ = round
        }
        #expect(reused == [false, true])
    }

    @Test func anIPAddressIsVerifiedAgainstTheIPSubjectAltName() async throws {
        let (error, _) = try await connect(toServer: "localhost", as: "127.0.0.1")
        #expect(error == nil)
        let (v6error, _) = try await connect(toServer: "localhost", as: "[::1]")
        #expect(v6error == nil)
    }

    @Test func untrustedIssuerFailsBeforeAnyApplicationByte() async throws {
        let (error, server) = try await connect(toServer: "untrusted", as: "localhost")
        #expect(error?.kind == .untrustedIssuer)
        #expect(error?.message.contains("localhost") == true)
        #expect(server.applicationBytes == 0)
    }

    @Test func wrongNameFailsBeforeAnyApplicationByte() async throws {
        let (error, server) = try await connect(toServer: "other-name", as: "localhost")
        #expect(error?.kind == .nameMismatch)
        #expect(error?.message.contains("hostname mismatch") == true)
        #expect(server.applicationBytes == 0)
    }

    @Test func aPartialWildcardDoesNotMatch() async throws {
        let (error, server) = try await connect(toServer: "partial-wildcard", as: "www.test.example")
        #expect(error?.kind == .nameMismatch)
        #expect(server.applicationBytes == 0)
    }

    @Test func wrongIPAddressFailsBeforeAnyApplicationByte() async throws {
        let (error, server) = try await connect(toServer: "other-name", as: "127.0.0.1")
        #expect(error?.kind == .nameMismatch)
        #expect(server.applicationBytes == 0)
    }

    @Test func expiredCertificateFailsBeforeAnyApplicationByte() async throws {
        let (error, server) = try await connect(toServer: "expired", as: "localhost")
        #expect(error?.kind == .expired)
        #expect(error?.message.contains("expired") == true)
        #expect(server.applicationBytes == 0)
    }

    @Test func aTLS11OnlyServerIsRefused() async throws {
        var configuration = TestPKI.server("localhost")
        configuration.onlyVersionForTesting = .tls11
        let (error, server) = try await connect(toServer: configuration, as: "localhost")
        #expect(error?.kind == .protocolVersion)
        #expect(server.applicationBytes == 0)
        #expect(server.handshakeError != nil)
    }

    /// A plain server's answer to a ClientHello: an HTTP 400 (recognised by its `HTTP/`), or
    /// any other clear text, which OpenSSL refuses as a record of a wrong version.
    @Test(arguments: [
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        "SSH-2.0-OpenSSH_9.2\r\n",
    ])
    func aPlainServerIsRecognised(answerText: String) async throws {
        let listener = try LoopbackListener()
        let clientContext = try TestPKI.client()
        async let received = onThread { () throws -> [UInt8] in
            let fd = try listener.accept()
            defer { Glibc.close(fd) }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            var answered = false
            while true {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { return bytes }
                bytes.append(contentsOf: buffer[0..<n])
                if !answered {
                    let answer = Array(answerText.utf8)
                    _ = answer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                    answered = true
                }
            }
        }
        let error = try await onThread { () throws -> TLSError? in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            return Self.handshakeThenTryToSend(stream)
        }
        #expect(error?.kind == .plainHTTPServer)
        // The server saw only TLS handshake (22) or alert (21) records: no application data.
        let types = try #require(Self.recordTypes(await received))
        #expect(!types.isEmpty)
        #expect(types.allSatisfy { $0 == 22 || $0 == 21 })
    }

    @Test func cleanCloseReadsZeroAndTruncationIsAnError() async throws {
        let listener = try LoopbackListener()
        let serverContext = try TLSContext(server: TestPKI.server("localhost"))
        let clientContext = try TestPKI.client()
        for cleanly in [true, false] {
            async let served: Void = onThread {
                let fd = try listener.accept()
                defer { Glibc.close(fd) }
                let stream = try TLSStream(server: serverContext, socket: fd)
                try stream.handshake()
                try stream.write(Array("partial".utf8))
                if cleanly { try stream.shutdown() }
                stream.close()  // then the socket closes without close_notify unless shut down
            }
            let (bytes, error) = try await onThread { () throws -> (Int, TLSError?) in
                let fd = try listener.connectClient()
                defer { Glibc.close(fd) }
                let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
                try stream.handshake()
                return drain(stream)
            }
            try await served
            #expect(bytes == 7)
            if cleanly {
                #expect(error == nil)
            } else {
                #expect(error?.kind == .peerClosed)
            }
        }
    }

    @Test func writingToAClosedSocketThrowsInsteadOfRaisingSIGPIPE() async throws {
        let listener = try LoopbackListener()
        let serverContext = try TLSContext(server: TestPKI.server("localhost"))
        let clientContext = try TestPKI.client()
        async let served: Void = onThread {
            let fd = try listener.accept()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(server: serverContext, socket: fd)
            try stream.handshake()
            _ = drain(stream)
            stream.close()
        }
        // SIGPIPE is NOT blocked on this thread: only the shim's guard stands between the
        // write below and the signal's default action, which would kill the test process.
        let error = try await onThread(blockingSIGPIPE: false) { () throws -> TLSError? in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            try stream.handshake()
            Glibc.shutdown(fd, Int32(SHUT_WR))  // every later write(2) fails with EPIPE
            defer { stream.close() }
            do {
                try stream.write(Array("GET / HTTP/1.1\r\n\r\n".utf8))
                return nil
            } catch {
                return error as? TLSError
            }
        }
        try await served
        #expect(error?.kind == .io)
        #expect(error?.systemError == EPIPE)
    }

    @Test func aServerThatHangsUpDuringTheHandshakeIsPeerClosed() async throws {
        let listener = try LoopbackListener()
        let clientContext = try TestPKI.client()
        async let served: Void = onThread {
            let fd = try listener.accept()
            // Read the whole ClientHello record first, so the close is a clean FIN, never a reset.
            var header = [UInt8](repeating: 0, count: 5)
            #expect(Self.readFully(fd, &header))
            var body = [UInt8](repeating: 0, count: Int(header[3]) << 8 | Int(header[4]))
            #expect(Self.readFully(fd, &body))
            Glibc.close(fd)
        }
        let error = try await onThread { () throws -> TLSError? in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            return Self.handshakeThenTryToSend(stream)
        }
        try await served
        #expect(error?.kind == .peerClosed)
    }

    @Test func aServerThatNeverAnswersHitsTheSocketTimeOut() async throws {
        let listener = try LoopbackListener()
        let clientContext = try TestPKI.client()
        // Nobody accepts: the kernel completes the TCP handshake from the backlog and the
        // connection stays open and silent for as long as the listener lives, so a time-out
        // is the only possible outcome (its length decides nothing).
        let error = try await onThread { () throws -> TLSError? in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let stream = try TLSStream(client: clientContext, socket: fd, host: "localhost", port: listener.port)
            return Self.handshakeThenTryToSend(stream)
        }
        #expect(error?.kind == .timedOut)
        #expect(error?.systemError == EAGAIN)
    }

    @Test func ioBeforeTheHandshakeIsRefused() throws {
        let clientContext = try TestPKI.client()
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer {
            Glibc.close(fds[0])
            Glibc.close(fds[1])
        }
        let stream = try TLSStream(client: clientContext, socket: fds[0], host: "localhost", port: 443)
        let error = #expect(throws: TLSError.self) { try stream.write(Array("GET".utf8)) }
        #expect(error?.message.contains("handshake has not completed") == true)
        var pending = 0
        #expect(ioctl(fds[1], UInt(FIONREAD), &pending) == 0)
        #expect(pending == 0)
    }

    // MARK: - Helpers

    /// Runs a handshake to a loopback server presenting `certificate`, connecting as `host`.
    /// On failure the client still tries to send a request, which must be refused.
    private func connect(toServer certificate: String, as host: String) async throws -> (TLSError?, ServerObservation) {
        try await connect(toServer: TestPKI.server(certificate), as: host)
    }

    private func connect(
        toServer configuration: TLSServerConfiguration, as host: String
    ) async throws -> (
        TLSError?, ServerObservation
    ) {
        let listener = try LoopbackListener()
        let serverContext = try TLSContext(server: configuration)
        let clientContext = try TestPKI.client()
        async let observed = onThread { () throws -> ServerObservation in
            let fd = try listener.accept()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(server: serverContext, socket: fd)
            do {
                try stream.handshake()
            } catch {
                return ServerObservation(handshakeError: error as? TLSError, applicationBytes: 0)
            }
            let (count, _) = drain(stream)
            return ServerObservation(handshakeError: nil, applicationBytes: count)
        }
        let error = try await onThread { () throws -> TLSError? in
            let fd = try listener.connectClient()
            defer { Glibc.close(fd) }
            let stream = try TLSStream(client: clientContext, socket: fd, host: host, port: listener.port)
            return Self.handshakeThenTryToSend(stream)
        }
        let observation = try await observed
        return (error, observation)
    }

    /// Handshakes; on success sends a request and closes cleanly, returning nil. On failure
    /// still tries to write (which must throw) and returns the handshake error.
    private static func handshakeThenTryToSend(_ stream: TLSStream) -> TLSError? {
        let request = Array("GET / HTTP/1.1\r\nAuthorization: Bearer secret\r\n\r\n".utf8)
        do {
            try stream.handshake()
        } catch {
            #expect(throws: TLSError.self) { try stream.write(request) }
            stream.close()
            return error
        }
        #expect(throws: Never.self) {
            try stream.write(request)
            try stream.shutdown()
        }
        stream.close()
        return nil
    }

    /// Reads exactly `buffer.count` bytes from a raw socket; false if it ends first.
    private static func readFully(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        var filled = 0
        while filled < buffer.count {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n <= 0 { return false }
            filled += n
        }
        return true
    }

    /// The content types of the TLS records in `bytes`, or nil when they do not parse as records.
    private static func recordTypes(_ bytes: [UInt8]) -> [UInt8]? {
        var types: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard bytes.count - index >= 5 else { return nil }
            let length = Int(bytes[index + 3]) << 8 | Int(bytes[index + 4])
            guard bytes.count - index - 5 >= length else { return nil }
            types.append(bytes[index])
            index += 5 + length
        }
        return types
    }
}
