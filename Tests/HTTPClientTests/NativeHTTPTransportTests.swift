import Foundation
import HTTPTestServers
import Synchronization
import Testing

@testable import HTTPClient

/// The native HTTP/1.1 client against scripted loopback servers: connections, pooling, threads,
/// framing, bodies, time-outs, cancellation. (Its tests against the emulator and with the SDK's
/// files and errors are in CloudStorageTests, `NativeHTTPTransportWithSDKTests`.)
@Suite("Native HTTP transport", .timeLimit(.minutes(10)))
struct NativeHTTPTransportTests {
    // MARK: - Helpers

    static func url(_ port: Int, _ path: String = "/x") -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Deterministic pseudo-random bytes (xorshift, a word at a time: fast enough for 256 MiB in a
    /// debug build).
    static func payload(size: Int, seed: UInt64) -> Data {
        var state = seed | 1
        var data = Data(count: size)
        data.withUnsafeMutableBytes { raw in
            for index in stride(from: 0, to: size, by: 8) {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                let count = min(8, size - index)
                withUnsafeBytes(of: state.littleEndian) { word in
                    raw.baseAddress!.advanced(by: index).copyMemory(from: word.baseAddress!, byteCount: count)
                }
            }
        }
        return data
    }

    /// Collects progress reports.
    final class ProgressLog: Sendable {
        private let values = Mutex<[Int64]>([])
        var all: [Int64] { values.withLock { $0 } }
        var callback: @Sendable (Int64) -> Void { { value in self.values.withLock { $0.append(value) } } }
    }

    // MARK: - Connections

    @Test func aRequestWaitingForAConnectionCanBeCancelledAndTheQueueMovesOn() async throws {
        let release = DispatchSemaphore(value: 0)
        let server = try ScriptedHTTPServer { connection, _ in
            while let request = connection.readRequest() {
                if request.head.target == "/hold" { _ = release.wait(timeout: .now() + 300) }
                connection.write(ScriptedHTTPServer.ok())
            }
        }
        defer { server.stop() }
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.maxConnectionsPerHost = 1
        let transport = NativeHTTPTransport(configuration: configuration)
        let holder = Task {
            try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port, "/hold")), progress: nil)
        }
        // No deadlines of their own (a starved machine can exceed any guess): the suite's time
        // limit ends a wait that never ends.
        while transport.pool.leasesOut == 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        let cancelled = Task {
            try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        }
        let queued = Task {
            try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        }
        while transport.pool.waiting < 2 {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(transport.pool.waiting == 2)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(transport.pool.waiting == 1)
        release.signal()
        #expect(try await holder.value.status == 200)
        #expect(try await queued.value.status == 200)
        #expect(transport.pool.leasesOut == 0)
        #expect(transport.pool.waiting == 0)
        // One connection carried all three answered requests; the cancelled one never had one.
        #expect(transport.connectionsOpened == 1)
    }

    @Test func idleThreadsAreReused() async throws {
        // A lifetime far beyond any scheduling delay, so that only reuse is measured.
        let threads = NativeIOThreads(name: "test", idleLifetime: .seconds(300))
        for _ in 0..<20 {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                threads.run { { continuation.resume() } }
            }
        }
        // Each job handed its result over once its thread was idle, so the next one reused it.
        #expect(threads.threadCount == 1)
    }

    @Test func idleThreadsEndAfterTheirLifetimeAndNewWorkStartsOne() async throws {
        let threads = NativeIOThreads(name: "test", idleLifetime: .milliseconds(100))
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            threads.run { { continuation.resume() } }
        }
        // No deadline of its own: the suite's time limit ends a thread that never ends.
        while threads.threadCount > 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(threads.threadCount == 0)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            threads.run {
                continuation.resume()
                return nil
            }
        }
        #expect(threads.threadCount <= 1)
    }

    @Test func connectionCloseFromTheServerIsHonoured() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedHTTPServer.ok(extra: "Connection: close\r\n"))
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        for _ in 0..<3 {
            let response = try await transport.execute(
                HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
            #expect(String(decoding: response.body, as: UTF8.self) == "ok")
        }
        #expect(server.acceptedConnections == 3)
        #expect(transport.connectionsOpened == 3)
        #expect(transport.pool.idleCount == 0)
    }

    /// A sink that has what it wants ends the answer: the transport returns the response as
    /// complete without waiting for the rest of the body (the server holds it back), and
    /// closes the connection rather than reuse it with body bytes unread.
    @Test(arguments: ["Content-Length: 100", "Transfer-Encoding: chunked"])
    func aSinkWithEnoughEndsTheAnswerAndItsConnectionIsNotReused(framing: String) async throws {
        let server = try ScriptedHTTPServer { connection, index in
            guard connection.readRequest() != nil else { return }
            guard index == 0 else {
                connection.write(ScriptedHTTPServer.ok())
                return
            }
            // Half the body (0x32 = 50 bytes), then nothing until the client hangs up.
            let half = String(repeating: "a", count: 50)
            let body = framing.hasPrefix("Content-Length") ? half : "32\r\n\(half)\r\n"
            connection.write("HTTP/1.1 200 OK\r\n\(framing)\r\n\r\n\(body)")
            _ = connection.drainUntilClosed()
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        let received = Mutex(0)
        var request = HTTPRequest(method: "GET", url: Self.url(server.port))
        request.responseSink = HTTPResponseSink(
            begin: { _, _ in true },
            receive: { bytes in
                received.withLock { $0 += bytes.count }
                return .enough
            })
        let response = try await transport.execute(request, progress: nil)
        #expect(response.status == 200 && response.body.isEmpty)
        #expect((1...50).contains(received.withLock { $0 }))
        let next = try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        #expect(next.body == Data("ok".utf8))
        #expect(transport.connectionsOpened == 2)
        #expect(server.acceptedConnections == 2)
    }

    @Test func connectionCloseFromTheRequestIsHonoured() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            while connection.readRequest() != nil { connection.write(ScriptedHTTPServer.ok()) }
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        var request = HTTPRequest(method: "GET", url: Self.url(server.port))
        request.headers.set("Connection", "close")
        _ = try await transport.execute(request, progress: nil)
        _ = try await transport.execute(request, progress: nil)
        #expect(transport.connectionsOpened == 2)
    }

    @Test func chunkedResponsesAreDecodedAndKeepTheConnection() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            while connection.readRequest() != nil {
                connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
                Thread.sleep(forTimeInterval: 0.01)
                connection.write("lo\r\n6;name=value\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n")
            }
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        for _ in 0..<2 {
            let response = try await transport.execute(
                HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
            #expect(String(decoding: response.body, as: UTF8.self) == "hello world")
        }
        #expect(server.acceptedConnections == 1)
    }

    @Test func closeDelimitedResponsesAreReadToTheEndAndNotReused() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            connection.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil ")
            Thread.sleep(forTimeInterval: 0.01)
            connection.write("the end")
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        for _ in 0..<2 {
            let response = try await transport.execute(
                HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
            #expect(String(decoding: response.body, as: UTF8.self) == "until the end")
        }
        #expect(server.acceptedConnections == 2)
    }

    @Test func interimResponsesAreSkipped() async throws {
        let bodies = Mutex<[Int]>([])
        let server = try ScriptedHTTPServer { connection, _ in
            while let head = connection.readHead() {
                connection.write("HTTP/1.1 100 Continue\r\n\r\n")
                let body = connection.readBody(Int(head.headers["Content-Length"] ?? "0") ?? 0)
                bodies.withLock { $0.append(body.count) }
                connection.write("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n")
                connection.write("HTTP/1.1 201 Created\r\nContent-Length: 7\r\n\r\ncreated")
            }
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        let payload = Self.payload(size: 4 * .mebibyte, seed: 3)
        for _ in 0..<2 {
            let response = try await transport.execute(
                HTTPRequest(method: "PUT", url: Self.url(server.port), body: .data(payload)), progress: nil)
            #expect(response.status == 201)
            #expect(String(decoding: response.body, as: UTF8.self) == "created")
        }
        #expect(bodies.withLock { $0 } == [payload.count, payload.count])
        #expect(server.acceptedConnections == 1)
    }

    @Test func anEarlyAnswerStopsTheUploadAndIsReturned() async throws {
        let release = DispatchSemaphore(value: 0)
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readHead() != nil else { return }
            _ = connection.readBody(64 * 1024)
            connection.write("HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo much")
            // Read nothing more: a client that only sends would wait forever.
            _ = release.wait(timeout: .now() + 600)
        }
        defer { server.stop() }
        defer { release.signal() }
        let file = try ScriptedHTTPServer.sparseFile(size: 512 * Int64(Int.mebibyte))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let body = HTTPRequestBody(segments: [
            .fileRegion(try PlainBodyFile(path: file.path), offset: 0, length: 512 * 1024 * 1024)
        ])
        let transport = NativeHTTPTransport(configuration: .forTests())
        // The time-out and the server's wait are 10 minutes, beyond the suite's time limit: an
        // answer at all means the early answer itself ended the upload.
        let request = HTTPRequest(method: "PUT", url: Self.url(server.port), body: body, idleTimeout: .seconds(600))
        let response = try await transport.execute(request, progress: nil)
        #expect(response.status == 413)
        #expect(String(decoding: response.body, as: UTF8.self) == "too much")
        #expect(transport.pool.idleCount == 0)
    }

    @Test func aDeadPooledConnectionIsNotUsed() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedHTTPServer.ok())  // keep-alive promised, then closed
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        _ = try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        try await Task.sleep(for: .milliseconds(100))
        let response = try await transport.execute(
            HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        #expect(response.status == 200)
        #expect(server.acceptedConnections == 2)
    }

    @Test func aReplayableRequestOnAConnectionClosedUnderItIsSentAgainOnce() async throws {
        let server = try ScriptedHTTPServer { connection, index in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedHTTPServer.ok("first"))
            guard index == 0 else { return }
            // The server gives up on the connection just as the next request arrives.
            _ = connection.readHead()
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        _ = try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        let response = try await transport.execute(
            HTTPRequest(method: "GET", url: Self.url(server.port), isIdempotent: true), progress: nil)
        #expect(String(decoding: response.body, as: UTF8.self) == "first")
        #expect(server.acceptedConnections == 2)
    }

    /// The builder's word decides, not the method: a POST its protocol calls
    /// idempotent (a v0 status query) is sent again, a GET it does not is not.
    @Test(arguments: [("POST", true), ("GET", false)])
    func onlyRequestsMarkedIdempotentAreSentAgainAfterTheirBytesWentOut(method: String, idempotent: Bool) async throws {
        let server = try ScriptedHTTPServer { connection, index in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedHTTPServer.ok("first"))
            guard index == 0 else { return }
            // The server gives up on the connection just as the next request arrives.
            _ = connection.readHead()
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        _ = try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        let second = HTTPRequest(method: method, url: Self.url(server.port), isIdempotent: idempotent)
        if idempotent {
            let response = try await transport.execute(second, progress: nil)
            #expect(String(decoding: response.body, as: UTF8.self) == "first")
            #expect(server.acceptedConnections == 2)
        } else {
            let error = await #expect(throws: HTTPTransportError.self) {
                _ = try await transport.execute(second, progress: nil)
            }
            #expect(error?.kind == .connectionLost)
            #expect(server.acceptedConnections == 1)
        }
    }

    @Test func anUploadWhoseBodyWasPartlySentIsNeverSentAgain() async throws {
        let server = try ScriptedHTTPServer { connection, index in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedHTTPServer.ok())
            guard index == 0 else { return }
            _ = connection.readHead()
            _ = connection.readBody(1024)
            connection.reset()
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        _ = try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        let payload = Self.payload(size: 16 * .mebibyte, seed: 1)
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(
                HTTPRequest(method: "PUT", url: Self.url(server.port), body: .data(payload)), progress: nil)
        }
        #expect(error?.kind == .connectionLost)
        try await Task.sleep(for: .milliseconds(100))
        #expect(server.acceptedConnections == 1)
    }

    // MARK: - Failures

    @Test func aStalledResponseTimesOut() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            _ = connection.readHead()  // never answers; returns when the client closes
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        let started = ContinuousClock.now
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(
                HTTPRequest(method: "GET", url: Self.url(server.port), idleTimeout: .milliseconds(300)), progress: nil)
        }
        // Not the server giving up (its socket time-out is 20 s, which would be a connection loss):
        // the client's idle time-out. No upper bound on the wall time: on a loaded machine the
        // awaiting task may wait long for a cooperative thread.
        #expect(error?.kind == .timedOut)
        #expect(started.duration(to: .now) >= .milliseconds(300))
    }

    @Test func aServerThatStopsReadingTimesOutTheUpload() async throws {
        let release = DispatchSemaphore(value: 0)
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readHead() != nil else { return }
            // Far beyond the client's 500 ms: the client's time-out, not the server, ends the upload.
            _ = release.wait(timeout: .now() + 600)
        }
        defer { server.stop() }
        defer { release.signal() }
        let size = 1024 * Int64(Int.mebibyte)
        let fileURL = try ScriptedHTTPServer.sparseFile(size: size)
        defer { try? FileManager.default.removeItem(at: fileURL.deletingLastPathComponent()) }
        let file = try PlainBodyFile(path: fileURL.path)
        let transport = NativeHTTPTransport(configuration: .forTests())
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(
                HTTPRequest(
                    method: "PUT", url: Self.url(server.port),
                    body: HTTPRequestBody(segments: [.fileRegion(file, offset: 0, length: size)]),
                    idleTimeout: .milliseconds(500)),
                progress: nil)
        }
        #expect(error?.kind == .timedOut)
    }

    @Test(arguments: [false, true])
    func cancellationAbortsPromptlyAndTheConnectionIsNotReused(whileReceiving: Bool) async throws {
        let release = DispatchSemaphore(value: 0)
        let closedByClient = Mutex(false)
        let reached = Mutex(false)
        let server = try ScriptedHTTPServer { connection, index in
            guard index == 0 else {
                while connection.readRequest() != nil { connection.write(ScriptedHTTPServer.ok("fresh")) }
                return
            }
            guard connection.readHead() != nil else { return }
            _ = connection.readBody(whileReceiving ? 1024 : 64 * 1024)
            reached.withLock { $0 = true }
            _ = release.wait(timeout: .now() + 600)
            connection.drainUntilClosed()
            closedByClient.withLock { $0 = true }
        }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        let body: HTTPRequestBody =
            whileReceiving
            ? .data(Data(count: 1024)) : .data(Self.payload(size: 256 * .mebibyte, seed: 4))
        let request = HTTPRequest(method: "PUT", url: Self.url(server.port), body: body, idleTimeout: .seconds(600))
        let task = Task { try await transport.execute(request, progress: nil) }
        // Cancel only once the server holds the request (sending or awaiting the answer); no
        // deadline of its own, as giving up would cancel earlier, another case than this one.
        while !reached.withLock({ $0 }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        // Not the idle time-out nor the server's release (10 minutes, beyond the suite's time
        // limit): the cancel itself ended it.
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        release.signal()
        let fresh = try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        #expect(String(decoding: fresh.body, as: UTF8.self) == "fresh")
        #expect(transport.connectionsOpened == 2)
        // The server's thread sees the cancelled connection end once it reads again (the suite's
        // time limit ends a wait for a connection never closed).
        while !closedByClient.withLock({ $0 }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(closedByClient.withLock { $0 })
    }

    @Test func aCancelBeforeTheRequestStartsSendsNothing() async throws {
        let server = try ScriptedHTTPServer { connection, _ in _ = connection.readRequest() }
        defer { server.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server.port)), progress: nil)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.connectionsOpened == 0)
    }

    @Test func aRefusedConnectionIsAConnectFailureThatDoesNotNameTheURL() async throws {
        let url = URL(string: "http://127.0.0.1:1/upload?upload_id=SECRET-SESSION")!
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await NativeHTTPTransport(configuration: .forTests()).execute(
                HTTPRequest(method: "PUT", url: url, body: .data(Data("x".utf8))), progress: nil)
        }
        #expect(error?.kind == .connectFailed)
        #expect(error?.description.contains("SECRET") == false)
    }

    @Test func aResetInTheMiddleOfTheBodyIsAConnectionLoss() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readHead() != nil else { return }
            _ = connection.readBody(256 * 1024)
            connection.reset()
        }
        defer { server.stop() }
        let size = 256 * Int64(Int.mebibyte)
        let fileURL = try ScriptedHTTPServer.sparseFile(size: size)
        defer { try? FileManager.default.removeItem(at: fileURL.deletingLastPathComponent()) }
        let file = try PlainBodyFile(path: fileURL.path)
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await NativeHTTPTransport(configuration: .forTests()).execute(
                HTTPRequest(
                    method: "PUT", url: Self.url(server.port),
                    body: HTTPRequestBody(segments: [.fileRegion(file, offset: 0, length: size)])),
                progress: nil)
        }
        #expect(error?.kind == .connectionLost)
    }

    @Test func onlyHTTPAndHTTPSAreSpokenAndTheRefusalIsPermanent() async throws {
        let url = URL(string: "ftp://127.0.0.1:1/upload?upload_id=SECRET")!
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await NativeHTTPTransport(configuration: .forTests()).execute(
                HTTPRequest(method: "GET", url: url), progress: nil)
        }
        #expect(error?.kind == .other)
        #expect(error?.permanent == true)
        #expect(error?.description.contains("SECRET") == false)
    }

}

extension Int {
    fileprivate static let mebibyte = 1024 * 1024
}
