import Testing

@testable import NativeTLS

/// The TLS engine as a pure byte transformer: two engines joined in memory, no socket.
@Suite struct TLSEngineTests {
    /// A client and a server engine whose ciphertext is carried by hand.
    struct Pair {
        let client: TLSEngine
        let server: TLSEngine

        init() throws {
            client = try TLSEngine(client: try TestPKI.client(), host: "localhost", port: 443)
            server = try TLSEngine(server: try TLSContext(server: TestPKI.server("localhost")))
        }

        /// Moves every byte of `from`'s output into `to`'s input; returns how many moved.
        @discardableResult
        static func carry(_ from: TLSEngine, _ to: TLSEngine) -> Int {
            var moved = 0
            while from.hasOutbound {
                let bytes = from.outbound
                let taken = to.receive(bytes)
                from.didSend(taken)
                moved += taken
                if taken == 0 { break }
            }
            return moved
        }

        /// Runs both handshakes to the end, carrying bytes both ways (bounded).
        func handshake() throws {
            var clientDone = false
            var serverDone = false
            for _ in 0..<20 where !(clientDone && serverDone) {
                clientDone = try client.handshake() == .done(0)
                Self.carry(client, server)
                serverDone = try server.handshake() == .done(0)
                Self.carry(server, client)
            }
            #expect(clientDone && serverDone)
        }

        /// Everything `reader` can decrypt now.
        static func readAll(_ reader: TLSEngine) throws -> [UInt8] {
            var collected: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while case .done(let count) = try buffer.withUnsafeMutableBytes({ try reader.read(into: $0) }) {
                collected += buffer[0..<count]
            }
            return collected
        }

        /// Writes all of `bytes` through `writer` into `reader` and returns what `reader` decrypted.
        static func send(_ bytes: [UInt8], from writer: TLSEngine, to reader: TLSEngine) throws -> [UInt8] {
            var received: [UInt8] = []
            var offset = 0
            // The writer's output may hold more than the reader's input takes at once.
            while offset < bytes.count || writer.hasOutbound {
                if offset < bytes.count {
                    let progress = try bytes.withUnsafeBytes {
                        try writer.write(UnsafeRawBufferPointer(rebasing: $0[offset...]))
                    }
                    if case .done(let count) = progress { offset += count }
                }
                carry(writer, reader)
                received += try readAll(reader)
            }
            received += try readAll(reader)
            return received
        }
    }

    @Test func handshakesAndCarriesDataBothWays() throws {
        let pair = try Pair()
        #expect(try pair.client.handshake() == .needsInput)
        #expect(pair.client.hasOutbound)  // the ClientHello
        try pair.handshake()
        #expect(pair.client.negotiatedApplicationProtocol == "http/1.1")
        #expect(pair.client.negotiatedProtocolVersion == "TLS 1.3")
        let request = Array("GET / HTTP/1.1\r\n\r\n".utf8)
        #expect(try Pair.send(request, from: pair.client, to: pair.server) == request)
        // More than the engine's buffers hold at once, so writes must wait for the output to move.
        let body = (0..<(3 * TLSEngine.outboundSize + 12345)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(try Pair.send(body, from: pair.server, to: pair.client) == body)
        #expect(!pair.client.hasBufferedInput)
    }

    @Test func aWriteStopsWhenTheOutputIsFullAndGoesOnOnceSent() throws {
        let pair = try Pair()
        try pair.handshake()
        let body = [UInt8](repeating: 7, count: 2 * TLSEngine.outboundSize)
        let first = try body.withUnsafeBytes { try pair.client.write($0) }
        guard case .done(let taken) = first else { Issue.record("nothing taken: \(first)"); return }
        #expect(taken < body.count)
        let rest = try body.withUnsafeBytes { try pair.client.write(UnsafeRawBufferPointer(rebasing: $0[taken...])) }
        #expect(rest == .needsOutputSent)
        pair.client.didSend(pair.client.outbound.count)  // part of the output leaves
        let more = try body.withUnsafeBytes { try pair.client.write(UnsafeRawBufferPointer(rebasing: $0[taken...])) }
        #expect(more != .needsOutputSent)
    }

    @Test func closeNotifyEndsTheStreamCleanly() throws {
        let pair = try Pair()
        try pair.handshake()
        #expect(try pair.client.shutdown() == .done(0))
        Pair.carry(pair.client, pair.server)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(try buffer.withUnsafeMutableBytes { try pair.server.read(into: $0) } == .closed)
        #expect(try buffer.withUnsafeMutableBytes { try pair.server.read(into: $0) } == .closed)
    }

    @Test func anEndWithoutCloseNotifyIsPeerClosed() throws {
        let pair = try Pair()
        try pair.handshake()
        pair.server.receivedEnd()
        var buffer = [UInt8](repeating: 0, count: 16)
        do {
            _ = try buffer.withUnsafeMutableBytes { try pair.server.read(into: $0) }
            Issue.record("the read did not fail")
        } catch let error as TLSError {
            #expect(error.kind == .peerClosed)
        }
    }

    @Test func aCorruptedRecordIsACorruptStream() throws {
        let pair = try Pair()
        try pair.handshake()
        _ = try Array("secret".utf8).withUnsafeBytes { try pair.client.write($0) }
        var record = Array(pair.client.outbound)
        pair.client.didSend(record.count)
        record[record.count - 3] ^= 0x40  // inside the authentication tag
        _ = record.withUnsafeBytes { pair.server.receive($0) }
        var buffer = [UInt8](repeating: 0, count: 64)
        do {
            _ = try buffer.withUnsafeMutableBytes { try pair.server.read(into: $0) }
            Issue.record("a corrupted record was accepted")
        } catch let error as TLSError {
            #expect(error.kind == .corruptStream)
        }
    }

    @Test func anOversizedRecordHeaderIsACorruptStream() throws {
        let pair = try Pair()
        try pair.handshake()
        // Application data claiming 65,535 bytes: more than TLS allows for one record.
        let header: [UInt8] = [0x17, 0x03, 0x03, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 64)
        _ = header.withUnsafeBytes { pair.server.receive($0) }
        var buffer = [UInt8](repeating: 0, count: 64)
        do {
            _ = try buffer.withUnsafeMutableBytes { try pair.server.read(into: $0) }
            Issue.record("an oversized record was accepted")
        } catch let error as TLSError {
            #expect(error.kind == .corruptStream)
        }
    }

    @Test func aPlainHTTPAnswerToTheClientHelloIsNamed() throws {
        let pair = try Pair()
        #expect(try pair.client.handshake() == .needsInput)
        _ = Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8).withUnsafeBytes { pair.client.receive($0) }
        do {
            _ = try pair.client.handshake()
            Issue.record("the handshake went on")
        } catch {
            #expect(error.kind == .plainHTTPServer)
        }
    }

    @Test func anUntrustedServerIsRefusedBeforeAnyData() throws {
        let client = try TLSEngine(client: try TestPKI.client(), host: "localhost", port: 443)
        let server = try TLSEngine(server: try TLSContext(server: TestPKI.server("untrusted")))
        do {
            for _ in 0..<10 {
                _ = try client.handshake()
                Pair.carry(client, server)
                _ = try? server.handshake()
                Pair.carry(server, client)
            }
            Issue.record("the handshake succeeded")
        } catch {
            #expect(error.kind == .untrustedIssuer)
        }
    }

    @Test func aResumedSessionSkipsTheFullHandshake() throws {
        let clientContext = try TestPKI.client()
        let serverContext = try TLSContext(server: TestPKI.server("localhost"))
        for round in 0..<2 {
            let client = try TLSEngine(client: clientContext, host: "localhost", port: 443)
            let server = try TLSEngine(server: serverContext)
            let pair = Pair(client: client, server: server)
            try pair.handshake()
            // TLS 1.3 tickets come after the handshake: read them, then close to keep the session.
            _ = try Pair.send(Array("x".utf8), from: server, to: client)
            _ = try client.shutdown()
            #expect(client.sessionWasReused == (round == 1))
        }
    }
}

extension TLSEngineTests.Pair {
    init(client: TLSEngine, server: TLSEngine) {
        self.client = client
        self.server = server
    }
}
