import Foundation
import HTTPTestServers
import NativeTLS
import Synchronization
import Testing

@testable import HTTPClient

#if canImport(Glibc)
import Glibc
#endif

/// What the TLS shim's buffering does for throughput must not change what the native
/// transport delivers: OpenSSL reads ahead (bytes past a response sit where the pool's poll
/// cannot see them), a read drains the records already received without waiting on a
/// partial one, and writes are gathered into large ones. Servers here decide when bytes go
/// out from what the client has visibly done (a sink call, an acknowledgement), never
/// from time; time limits only guard against hangs.
@Suite(
    "Native transport: TLS read-ahead and write buffering", .timeLimit(.minutes(10)),
    .enabled(if: TLSLibrary.isAvailable))
struct NativeTLSBufferingTests {
    /// Where a server puts bytes nobody asked for after a response.
    enum Extra: String, CaseIterable, Sendable {
        /// None: a well-behaved server.
        case none
        /// In the TLS record that carries the end of the body.
        case sameRecord
        /// In a record of its own, right after the body's last one.
        case separateRecord
    }

    static let bogusResponse = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nbogus".utf8)

    static func url(_ port: Int, _ path: String) -> URL {
        URL(string: "https://127.0.0.1:\(port)\(path)")!
    }

    // MARK: - Bytes read ahead past a response

    /// The client is held inside its response sink while the server writes the end of the body
    /// and the extra bytes and the client's kernel acknowledges them, so the client's next read
    /// takes them all at once: its last body read leaves the extra bytes in OpenSSL's buffer,
    /// not in the socket (where the pool's poll would see them) nor in the exchange's own input.
    @Test(arguments: Extra.allCases)
    func bytesAfterAResponseKeepItsConnectionOutOfThePool(extra: Extra) async throws {
        let body = testBytes(count: 41_000, seed: 11)
        let split = 40_000  // The last 1,000 bytes go in one record, after the client is in its sink.
        let sink = PausingSink(pauseAfter: 1)
        let firstServedOn = Mutex<Int?>(nil)
        let server = try ScriptedHTTPServer(scheme: .https) { connection, index in
            while let request = connection.readRequest() {
                guard request.head.target == "/first" else {
                    Self.answerSecond(connection, index: index, firstServedOn: firstServedOn)
                    continue
                }
                firstServedOn.withLock { $0 = index }
                connection.write(
                    Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body[..<split])
                guard sink.paused.wait(timeout: .now() + 90) == .success else { return }
                let tail = Array(body[split...])
                switch extra {
                case .none: connection.write(tail)
                case .sameRecord: connection.write(tail + Self.bogusResponse)
                case .separateRecord:
                    connection.write(tail)
                    connection.write(Self.bogusResponse)
                }
                waitUntilAcknowledged(connection.fd)
                sink.resume.signal()
            }
        }
        defer { server.stop() }
        let transport = TLSTestPKI.transport()
        var request = HTTPRequest(method: "GET", url: Self.url(server.port, "/first"))
        request.responseSink = sink.sink
        let first = try await transport.execute(request, progress: nil)
        #expect(first.status == 200)
        #expect(sink.received == body)

        let second = try await transport.execute(
            HTTPRequest(method: "GET", url: Self.url(server.port, "/second")), progress: nil)
        Self.expectSecond(second, keptConnection: extra == .none, transport: transport)
    }

    /// Answers `/second`, saying whether it came on the connection that served `/first`.
    ///
    /// Verdicts compare connections, never count the server's: a stray client from another
    /// test (one still retrying a port this server was given) must not change them.
    static func answerSecond(_ connection: ScriptedConnection, index: Int, firstServedOn: borrowing Mutex<Int?>) {
        let text = firstServedOn.withLock { $0 } == index ? "same connection" : "another connection"
        connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)")
    }

    /// The second request went on the first one's connection exactly when it was kept.
    static func expectSecond(
        _ second: HTTPResponse, keptConnection: Bool, transport: NativeHTTPTransport,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let text = String(decoding: second.body, as: UTF8.self)
        #expect(text == (keptConnection ? "same connection" : "another connection"), sourceLocation: sourceLocation)
        #expect(
            transport.connectionsOpened == (keptConnection ? 1 : 2), "dropped: \(transport.pool.dropped)",
            sourceLocation: sourceLocation)
    }

    /// Without a sink the body goes through the exchange's input, where bytes past it were
    /// always caught; the same servers must get the same verdicts. The server writes the
    /// response and the extra bytes in one `write` (for a record of their own, the response
    /// fills whole records), and the next request waits until the client's kernel has them.
    @Test(arguments: Extra.allCases)
    func bytesAfterABufferedResponseKeepItsConnectionOutOfThePool(extra: Extra) async throws {
        func head(_ count: Int) -> [UInt8] { Array("HTTP/1.1 200 OK\r\nContent-Length: \(count)\r\n\r\n".utf8) }
        // Three full 16 KiB records (the count has 5 digits either way), or a last record the extra bytes share.
        let count = extra == .separateRecord ? 3 * 16_384 - head(10_000).count : 41_000
        let body = testBytes(count: count, seed: 12)
        let response = head(count) + body
        let sent = DispatchSemaphore(value: 0)
        let firstServedOn = Mutex<Int?>(nil)
        let server = try ScriptedHTTPServer(scheme: .https) { connection, index in
            while let request = connection.readRequest() {
                guard request.head.target == "/first" else {
                    Self.answerSecond(connection, index: index, firstServedOn: firstServedOn)
                    continue
                }
                firstServedOn.withLock { $0 = index }
                connection.write(extra == .none ? response : response + Self.bogusResponse)
                waitUntilAcknowledged(connection.fd)
                sent.signal()
            }
        }
        defer { server.stop() }
        let transport = TLSTestPKI.transport()
        let first = try await transport.execute(
            HTTPRequest(method: "GET", url: Self.url(server.port, "/first")), progress: nil)
        #expect(first.body == Data(body))
        // Only once the extra bytes are in the client's kernel (if not already read) is the verdict settled.
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                _ = sent.wait(timeout: .now() + 90)
                continuation.resume()
            }
        }
        let second = try await transport.execute(
            HTTPRequest(method: "GET", url: Self.url(server.port, "/second")), progress: nil)
        Self.expectSecond(second, keptConnection: extra == .none, transport: transport)
    }

    // MARK: - A record cut in two

    /// The server sends the head, most of the body and half of the body's last record, then
    /// waits until the client's sink holds every byte before that half record: a read that
    /// waited for the rest of the record while holding those bytes would never get there.
    @Test func bytesBeforeAPartialRecordAreDeliveredWithoutWaitingForTheRest() async throws {
        let body = testBytes(count: 50_000, seed: 13)
        let split = 40_000  // The last 10,000 bytes are one record, sent in two halves.
        let sink = PausingSink(pauseAfter: nil)
        let stalled = Atomic(false)
        let server = try ScriptedHTTPServer(scheme: .http) { connection, _ in
            guard let relay = try? TLSRecordRelay(tcp: connection.fd) else { return }
            defer { relay.finish() }
            guard relay.handshake(), relay.readRequest() != nil else { return }
            relay.holdOutput()
            relay.write(Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body[..<split])
            relay.write(Array(body[split...]))
            let records = relay.takeOutput()
            guard let last = records.last else { return }
            let half = last.count / 2
            relay.send(ArraySlice(records.dropLast().flatMap { $0 } + last[..<half]))
            if sink.reached(split, within: .now() + 90) == false { stalled.store(true, ordering: .relaxed) }
            relay.send(last[half...])
            relay.waitForClientClose()
        }
        defer { server.stop() }
        let transport = TLSTestPKI.transport()
        var request = HTTPRequest(method: "GET", url: Self.url(server.port, "/x"))
        request.responseSink = sink.sink
        let response = try await transport.execute(request, progress: nil)
        #expect(response.status == 200)
        #expect(sink.received == body)
        let waitedForTheRest = stalled.load(ordering: .relaxed)
        #expect(!waitedForTheRest, "the client waited for the rest of a record before delivering")
        transport.pool.closeAll()
    }

    /// Half a record and then nothing (the server holds until the client gives up): the
    /// request fails with its idle time-out, and no partial body is returned.
    @Test func aRecordLeftHalfSentEndsInTheRequestTimeOut() async throws {
        let body = testBytes(count: 20_000, seed: 14)
        let server = try ScriptedHTTPServer(scheme: .http) { connection, _ in
            guard let relay = try? TLSRecordRelay(tcp: connection.fd) else { return }
            defer { relay.finish() }
            guard relay.handshake(), relay.readRequest() != nil else { return }
            relay.holdOutput()
            relay.write(Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
            let records = relay.takeOutput()
            guard let last = records.last else { return }
            relay.send(ArraySlice(records.dropLast().flatMap { $0 } + last[..<(last.count / 2)]))
            relay.waitForClientClose()
        }
        defer { server.stop() }
        let transport = TLSTestPKI.transport()
        let request = HTTPRequest(
            method: "GET", url: Self.url(server.port, "/x"), idleTimeout: .milliseconds(300))
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(request, progress: nil)
        }
        #expect(error?.kind == .timedOut)
        #expect(server.acceptedConnections == 1)
    }

    // MARK: - Large bodies both ways

    /// Uploads from memory and from a file region and downloads into memory and into a sink,
    /// all a little over 5 MiB and odd-sized, in a row on one kept-alive connection: the
    /// gathered writes, the draining reads and the body read straight into the connection's
    /// buffer (which file uploads use too) keep every byte in place.
    @Test func largeBodiesGoByteIdenticallyBothWaysOnOneConnection() async throws {
        let payload = Self.largePayload
        let fileOffset = 333
        let fileURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("httpclient-tests-\(UUID().uuidString)-tls-buffering.bin")
        try (Data(count: fileOffset) + Data(payload)).write(to: fileURL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        let file = try PlainBodyFile(path: fileURL.path)
        let server = try ScriptedHTTPServer(scheme: .https) { connection, _ in
            while let request = connection.readRequest() {
                if request.head.method == "GET" {
                    connection.write(
                        Array("HTTP/1.1 200 OK\r\nContent-Length: \(payload.count)\r\n\r\n".utf8) + payload)
                    continue
                }
                let same = request.body.count == payload.count && memcmp(request.body, payload, payload.count) == 0
                let verdict = same ? "identical" : "different (\(request.body.count) bytes)"
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(verdict.utf8.count)\r\n\r\n\(verdict)")
            }
        }
        defer { server.stop() }
        let transport = TLSTestPKI.transport()
        let url = Self.url(server.port, "/large")
        for _ in 0..<2 {
            for body in [
                HTTPRequestBody.data(Data(payload)),
                HTTPRequestBody(segments: [.fileRegion(file, offset: Int64(fileOffset), length: Int64(payload.count))]),
            ] {
                let upload = try await transport.execute(
                    HTTPRequest(method: "PUT", url: url, body: body), progress: nil)
                #expect(String(decoding: upload.body, as: UTF8.self) == "identical")
            }
            let download = try await transport.execute(HTTPRequest(method: "GET", url: url), progress: nil)
            #expect(download.body.count == payload.count)
            #expect(download.body == Data(payload))
            let sink = PausingSink(pauseAfter: nil)
            var streamed = HTTPRequest(method: "GET", url: url)
            streamed.responseSink = sink.sink
            _ = try await transport.execute(streamed, progress: nil)
            #expect(sink.received.count == payload.count)
            #expect(sink.received == payload)
        }
        #expect(transport.connectionsOpened == 1, "dropped: \(transport.pool.dropped)")
        #expect(server.acceptedConnections == 1)
    }

    /// 5 MiB and 4,321 bytes: many full records, gathered writes and a short last piece.
    static let largePayload = testBytes(count: 5 * 1024 * 1024 + 4_321, seed: 15)
}

/// A response sink that keeps the body, and either pauses the client inside itself on a
/// given call (telling the server so, and waiting for it to go on) or lets a server wait
/// until it holds a given number of bytes.
final class PausingSink: Sendable {
    /// Signalled when the client has paused inside the sink.
    let paused = DispatchSemaphore(value: 0)
    /// Signalled by the server to let the paused client go on.
    let resume = DispatchSemaphore(value: 0)
    private let pauseAfter: Int?
    private let state = Mutex<(calls: Int, bytes: [UInt8])>((0, []))
    private let progress = DispatchSemaphore(value: 0)

    /// - Parameter pauseAfter: The call (1 for the first) after which the client pauses, or nil.
    init(pauseAfter: Int?) {
        self.pauseAfter = pauseAfter
    }

    /// The body received so far.
    var received: [UInt8] { state.withLock { $0.bytes } }

    var sink: HTTPResponseSink {
        HTTPResponseSink(
            begin: { _, _ in true },
            receive: { [self] bytes in
                let calls = state.withLock { state -> Int in
                    state.calls += 1
                    state.bytes += bytes
                    return state.calls
                }
                progress.signal()
                if calls == pauseAfter {
                    paused.signal()
                    // A hang guard only: the server resumes the client as soon as its bytes are delivered.
                    _ = resume.wait(timeout: .now() + 90)
                }
                return .more
            })
    }

    /// Waits until the sink holds at least `count` bytes; false if `deadline` (a hang guard) passed first.
    func reached(_ count: Int, within deadline: DispatchTime) -> Bool {
        while state.withLock({ $0.bytes.count }) < count {
            guard progress.wait(timeout: deadline) == .success else { return false }
        }
        return true
    }
}

/// Waits until the peer's kernel has acknowledged every byte written to `fd`, so that they
/// sit in its receive queue (Linux `TIOCOUTQ`: bytes not yet acknowledged). Polls every
/// millisecond, for at most 30 s as a hang guard.
func waitUntilAcknowledged(_ fd: Int32) {
    for _ in 0..<30_000 {
        var unacknowledged: Int32 = 0
        guard ioctl(fd, UInt(TIOCOUTQ), &unacknowledged) == 0, unacknowledged > 0 else { return }
        usleep(1_000)
    }
}
