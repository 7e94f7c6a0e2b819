import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Emulator HTTP server", .serialized, .timeLimit(.minutes(10)))
struct EmulatorHTTPServerTests {
    @Test func keepAliveServesSeveralRequestsOnOneConnection() async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                for index in 0..<5 {
                    try client.send(
                        "PUT /o/\(index)?name=a%2Fb&x=%20y HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nab\(index)")
                    let response = try client.readResponse()
                    #expect(response.status == 200)
                    #expect(response.text == "ab\(index)")
                    #expect(response.headers["X-Path"] == "/o/\(index)")
                    #expect(response.headers["X-Query"] == "name=a/b&x= y")
                    #expect(response.headers["Connection"] == nil)
                }
            }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                var wire = ""
                for index in 0..<4 {
                    wire += "POST /p\(index) HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n#\(index)"
                }
                wire += "GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
                try client.send(wire)
                for index in 0..<4 {
                    let response = try client.readResponse()
                    #expect(response.text == "#\(index)")
                    #expect(response.headers["X-Path"] == "/p\(index)")
                }
                let last = try client.readResponse()
                #expect(last.headers["X-Path"] == "/last")
                #expect(last.headers["Connection"] == "close")
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    @Test func expectContinueIsSentWhenTheApplicationReadsTheBody() async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("PUT /c HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
                let interim = try client.readResponse()
                #expect(interim.status == 100)
                try client.send("hello")
                let final = try client.readResponse()
                #expect(final.status == 200)
                #expect(final.text == "hello")
                // The connection stays usable.
                try client.send("GET /again HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try client.readResponse().headers["X-Path"] == "/again")
            }
        }
    }

    @Test func expectContinueIsNotSentWhenTheApplicationAnswersWithoutReading() async throws {
        let application = ClosureApplication { _, responder in
            try? responder.respond(status: 403, headers: [:], body: Data("no".utf8))
        }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("PUT /c HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 403)
                #expect(response.headers["Connection"] == "close")
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    @Test func chunkedUploadIsEchoed() async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                let pieces = [
                    "PUT /chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel",
                    "lo\r\n", "1", "\r\n \r\n", "0000A\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n",
                ]
                for piece in pieces {
                    try client.send(piece)
                    Thread.sleep(forTimeInterval: 0.01)
                }
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.text == "hello 0123456789")
                #expect(response.headers["X-Content-Length"] == "chunked")
                try client.send("GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try client.readResponse().headers["X-Path"] == "/next")
            }
        }
    }

    @Test func chunkedBodiesSurviveSmallReadsAndLargeChunks() async throws {
        try await withServer(EchoApplication(readSize: 7)) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                var wire = Array("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
                var expected: [UInt8] = []
                for size in [1, 2, 100, 5000, 70_000] {
                    let piece = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) }
                    piece.withUnsafeBytes { ChunkedBodyEncoder.appendChunk($0, to: &wire) }
                    expected += piece
                }
                wire += ChunkedBodyEncoder.lastChunk
                try client.send(wire)
                let response = try client.readResponse()
                #expect(response.body == expected)
            }
        }
        try await withServer(CountingApplication()) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
                let chunk = [UInt8](repeating: 1, count: 1024 * 1024)
                for _ in 0..<8 {
                    var wire: [UInt8] = []
                    chunk.withUnsafeBytes { ChunkedBodyEncoder.appendChunk($0, to: &wire) }
                    try client.send(wire)
                }
                try client.send(ChunkedBodyEncoder.lastChunk)
                #expect(try client.readResponse().text == String(8 * 1024 * 1024))
            }
        }
    }

    @Test func stopFromTheApplicationDoesNotDeadlock() async throws {
        let server = Box<EmulatorHTTPServer?>(nil)
        let application = ClosureApplication { _, responder in
            server.get()?.stop()
            try? responder.respond(status: 200, headers: [:], body: Data())
        }
        try await withServer(application) { running, port in
            server.set(running)
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                _ = try? client.readToEOF()
                // A deadlock never gets there: the suite's time limit ends the test.
                try waitUntil { running.liveThreadCount == 0 }
            }
        }
    }

    @Test func malformedChunkedBodyFailsTheRead() async throws {
        let failure = Box<String?>(nil)
        let application = ClosureApplication { request, responder in
            do {
                _ = try request.readWholeBody(limit: 1024)
            } catch {
                failure.set("\(error)")
            }
            try? responder.respond(status: 400, headers: [:], body: Data())
        }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n")
                let response = try client.readResponse()
                #expect(response.status == 400)
                #expect(response.headers["Connection"] == "close")
                _ = try client.readToEOF()
            }
        }
        #expect(failure.get()?.contains("malformedBody") == true)
    }

    @Test func unreadBodyClosesTheConnectionAfterTheResponse() async throws {
        let application = ClosureApplication { _, responder in
            try? responder.respond(status: 200, headers: [:], body: Data("early".utf8))
        }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 100000000\r\n\r\n")
                try client.send([UInt8](repeating: 7, count: 100_000))
                let response = try client.readResponse()
                #expect(response.text == "early")
                #expect(response.headers["Connection"] == "close")
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    @Test func resetConnectionSendsRST() async throws {
        let application = ClosureApplication { _, responder in responder.resetConnection() }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                do {
                    let count = try client.receiveMore()
                    Issue.record("expected a reset, received \(count) bytes")
                } catch let failure as RawClient.Failure {
                    #expect(failure.errno == ECONNRESET)
                }
            }
        }
    }

    @Test func closeConnectionEndsWithoutResponse() async throws {
        let application = ClosureApplication { _, responder in responder.closeConnection() }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    @Test func noResponseBecomes500AndClose() async throws {
        try await withServer(ClosureApplication { _, _ in }) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 500)
                #expect(response.headers["Connection"] == "close")
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    @Test func streamingResponsesMustWriteExactlyTheLength() async throws {
        let thrown = Box<String?>(nil)
        let application = ClosureApplication { request, responder in
            let short = request.path == "/short"
            do {
                try responder.respondStreaming(status: 200, headers: [:], contentLength: 10) { write in
                    try Array("01234".utf8).withUnsafeBytes { try write($0) }
                    if !short { try Array("56789".utf8).withUnsafeBytes { try write($0) } }
                }
            } catch {
                thrown.set("\(error)")
            }
        }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("GET /full HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try client.readResponse().text == "0123456789")
                try client.send("GET /short HTTP/1.1\r\nHost: h\r\n\r\n")
                let rest = try client.readToEOF()
                let text = String(decoding: rest, as: UTF8.self)
                #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
                #expect(text.hasSuffix("\r\n\r\n01234"))
            }
        }
        #expect(thrown.get()?.contains("bodyLengthMismatch") == true)
    }

    @Test func headRequestsGetTheLengthWithoutTheBody() async throws {
        let application = ClosureApplication { _, responder in
            try? responder.respond(status: 200, headers: [:], body: Data("12345".utf8))
        }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("HEAD / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
                let head = try client.readResponse(requestMethod: "HEAD")
                #expect(head.headers["Content-Length"] == "5")
                #expect(head.body.isEmpty)
                #expect(try client.readResponse().text == "12345")
            }
        }
    }

    @Test func http10ClosesUnlessKeepAliveAndConnectionCloseIsHonoured() async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let plain = try RawClient(port: port)
                try plain.send("GET /a HTTP/1.0\r\n\r\n")
                #expect(try plain.readResponse().headers["Connection"] == "close")
                #expect(try plain.readToEOF().isEmpty)

                let keepAlive = try RawClient(port: port)
                try keepAlive.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                #expect(try keepAlive.readResponse().headers["Connection"] == "keep-alive")
                try keepAlive.send("GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                #expect(try keepAlive.readResponse().headers["X-Path"] == "/b")

                let closing = try RawClient(port: port)
                try closing.send("GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
                #expect(try closing.readResponse().headers["Connection"] == "close")
                #expect(try closing.readToEOF().isEmpty)
            }
        }
    }

    @Test func applicationConnectionCloseIsHonoured() async throws {
        let application = ClosureApplication { _, responder in
            try? responder.respond(status: 200, headers: ["Connection": "close"], body: Data())
        }
        try await withServer(application) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try client.readResponse().headers["Connection"] == "close")
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nName : x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n  folded\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET /  HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1\nHost: h\n\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nExpect: magic\r\n\r\n", 417),
        ("GET /?a=%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    ])
    func malformedRequestsAreRefusedAndClosed(request: String, status: Int) async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send(request)
                let response = try client.readResponse()
                #expect(response.status == status)
                #expect(response.headers["Connection"] == "close")
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    @Test func oversizedHeadsGet431() async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let big = try RawClient(port: port)
                try big.send("GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "a", count: 70_000) + "\r\n\r\n")
                #expect(try big.readResponse().status == 431)

                let many = try RawClient(port: port)
                let fields = (0..<101).map { "F\($0): v\r\n" }.joined()
                try many.send("GET / HTTP/1.1\r\nHost: h\r\n" + fields + "\r\n")
                #expect(try many.readResponse().status == 431)
            }
        }
    }

    @Test(arguments: ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "GET / HTTP/3.0\r\n\r\n"])
    func nonHTTP1BytesAreClosedWithoutAnswer(bytes: String) async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send(bytes)
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    /// A TLS ClientHello (an `https://` address for this plain server) gets a 400 in clear
    /// text, as real servers answer, so the client can tell it met plain HTTP.
    @Test func aTLSHandshakeGets400InClearText() async throws {
        try await withServer(EchoApplication()) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("\u{16}\u{03}\u{01}\u{02}\u{00}")
                #expect(try client.readResponse().status == 400)
            }
        }
    }

    @Test func stalledHeadTimesOutWith408AndIdleConnectionsClose() async throws {
        var limits = EmulatorHTTPServer.Limits()
        limits.readTimeout = .milliseconds(300)
        // Long enough that a client slow to send its first byte (a loaded machine) is not taken
        // for an idle one; only `idle` below waits for it.
        limits.idleTimeout = .seconds(2)
        limits.lingerTimeout = .milliseconds(100)
        try await withServer(EchoApplication(), limits: limits) { _, port in
            try await onThread {
                let stalled = try RawClient(port: port)
                try stalled.send("GET / HTTP/1.1\r\nHost:")
                // Only the read time-out answers 408 (an idle close answers nothing): no clock needed.
                #expect(try stalled.readResponse().status == 408)
                #expect(try stalled.readToEOF().isEmpty)

                let idle = try RawClient(port: port)
                try idle.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try idle.readResponse().status == 200)
                #expect(try idle.readToEOF().isEmpty)
            }
        }
    }

    @Test func stalledBodyTimesOutInTheApplication() async throws {
        var limits = EmulatorHTTPServer.Limits()
        limits.readTimeout = .milliseconds(300)
        limits.lingerTimeout = .milliseconds(100)
        try await withServer(EchoApplication(), limits: limits) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.send("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
                let response = try client.readResponse()
                #expect(response.status == 400)
                #expect(response.headers["X-Error"] == "timedOut")
                #expect(response.headers["Connection"] == "close")
            }
        }
    }

    @Test func manyConcurrentClients() async throws {
        try await withServer(EchoApplication()) { server, port in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for client in 0..<100 {
                    group.addTask {
                        try await onThread {
                            let connection = try RawClient(port: port)
                            var served = 0
                            for request in 0..<10 {
                                let body = "\(client)-\(request)"
                                try connection.send(
                                    "PUT /\(client) HTTP/1.1\r\nHost: h\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                                )
                                let response = try connection.readResponse()
                                if response.text == body { served += 1 }
                            }
                            return served
                        }
                    }
                }
                var total = 0
                for try await served in group { total += served }
                #expect(total == 1000)
            }
            #expect(server.openConnectionCount <= 100)
        }
    }

    @Test func idleConnectionsMakeRoomForNewOnesBeyondTheLimit() async throws {
        // (When no connection waits for its peer, a new one gets 503: see SlowClientTests.)
        var limits = EmulatorHTTPServer.Limits()
        limits.maxConnections = 2
        let outcome = try await withServer(EchoApplication(), limits: limits) { server, port in
            try await onThread {
                // Served, then idle between requests.
                let idle = try RawClient(port: port)
                try idle.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                let served = try idle.readResponse().status
                try waitUntil { server.connectionsWaitingForPeer == 1 }
                // Connected, its first request still to come.
                let fresh = try RawClient(port: port)
                try waitUntil { server.connectionsWaitingForPeer == 2 }
                let third = try RawClient(port: port)
                try third.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                let thirdStatus = try third.readResponse().status
                // The connection that waited longest went, without an answer: it had no request under way.
                let idleClosedSilently = try idle.readToEOF().isEmpty
                let fourth = try RawClient(port: port)
                try fourth.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                let fourthStatus = try fourth.readResponse().status
                // Then the fresh one, which was about to send a request: it is told to retry.
                let freshAnswer = try fresh.readResponse()
                return (
                    [served, thirdStatus, fourthStatus], idleClosedSilently,
                    "\(freshAnswer.status) \(freshAnswer.headers["Retry-After"] ?? "")"
                )
            }
        }
        #expect(outcome.0 == [200, 200, 200])
        #expect(outcome.1)
        #expect(outcome.2 == "503 1")
    }

    @Test func stopClosesIdleConnectionsPromptlyAndEndsEveryThread() async throws {
        // Idle connections would otherwise stay for 10 minutes, beyond the suite's time limit:
        // finishing at all is prompt, with no wall-clock bound to race a starved machine.
        var limits = EmulatorHTTPServer.Limits()
        limits.idleTimeout = .seconds(600)
        let server = EmulatorHTTPServer(application: EchoApplication(), limits: limits)
        let port = try server.start()
        let clients = try await onThread {
            try (0..<20).map { _ in
                let client = try RawClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                _ = try client.readResponse()
                return ClientBox(client)
            }
        }
        #expect(server.liveThreadCount == 21)
        try await onThread {
            server.stop()
            server.stop()
        }
        #expect(server.liveThreadCount == 0)
        #expect(server.openConnectionCount == 0)
        try await onThread {
            for box in clients {
                let rest = try box.client.readToEOF()
                #expect(rest.isEmpty)
            }
            #expect(throws: RawClient.Failure.self) { try RawClient(port: port) }
        }
    }

    @Test func startTwiceFailsAndStopBeforeStartIsHarmless() throws {
        let unstarted = EmulatorHTTPServer(application: EchoApplication())
        unstarted.stop()
        #expect(throws: ServerIOError.alreadyStarted) { try unstarted.start() }
        let server = EmulatorHTTPServer(application: EchoApplication())
        _ = try server.start()
        #expect(server.port > 0)
        #expect(throws: ServerIOError.alreadyStarted) { try server.start() }
        server.stop()
    }
}

/// Moves a client between threads in tests; each client is used by one thread at a time.
final class ClientBox: @unchecked Sendable {  // SAFETY: one thread at a time uses it, handed over by await.
    let client: RawClient
    init(_ client: RawClient) { self.client = client }
}
