import Foundation
import HTTPTestServers
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient

@Suite("URLSession transport")
struct URLSessionTransportTests {
    /// Port 1 on loopback: nothing listens there on a test machine.
    static let refusing = URL(
        string: "http://127.0.0.1:1/upload/storage/v1/b/b/o?uploadType=resumable&upload_id=SECRET-SESSION")!

    @Test func aRefusedConnectionIsAConnectFailureThatDoesNotNameTheURL() async throws {
        let request = HTTPRequest(method: "PUT", url: Self.refusing, body: .data(Data("x".utf8)))
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await URLSessionTransport.shared.execute(request, progress: nil)
        }
        #expect(error?.kind == .connectFailed)
        #expect(error?.description.contains("SECRET") == false)
        #expect(error?.description.contains("upload_id") == false)
    }

    /// A sink that has what it wants ends the answer as complete: the response comes back as
    /// such, not as the aborted task's failure, while the server still holds the rest back.
    @Test func aSinkWithEnoughEndsTheAnswerWithTheResponse() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "a", count: 50))
            _ = connection.drainUntilClosed()
        }
        defer { server.stop() }
        var request = HTTPRequest(method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/o")!)
        request.responseSink = HTTPResponseSink(begin: { _, _ in true }, receive: { _ in .enough })
        let response = try await URLSessionTransport.shared.execute(request, progress: nil)
        #expect(response.status == 200 && response.body.isEmpty)
    }

    @Test(arguments: TestRoute.plain)
    func anUploadThatCannotConnectRunsOutOfRetriesWithoutLeakingSecrets(route: TestRoute) async throws {
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        try configuration.retry.setInitialDelay(.milliseconds(10))
        try configuration.retry.setMaxUploadTime(.milliseconds(300))
        let storage = Storage(
            bucket: "b",
            endpoint: .gcs(URL(string: "http://127.0.0.1:1")!),
            authorization: .bearerToken("SECRET-TOKEN"),
            configuration: configuration
        )
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "a").putDataAsync(Data("x".utf8))
        }
        #expect(error?.code == .retryLimitExceeded)
        #expect((error?.underlyingError as? StorageError)?.underlyingError is HTTPTransportError)
        #expect(error?.description.contains("SECRET") == false)
    }

    @Test func aURLThatURLSessionCannotLoadFailsAtOnceInsteadOfRetrying() async throws {
        var configuration = StorageConfiguration()
        configuration.transport = .urlSession
        try configuration.retry.setInitialDelay(.milliseconds(10))
        try configuration.retry.setMaxUploadTime(.seconds(1))
        // A scheme URLSession does not load: retrying cannot help, so no retries may happen.
        let storage = Storage(
            bucket: "b", endpoint: .gcs(URL(string: "gopher://127.0.0.1:1")!), configuration: configuration)
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "a").putDataAsync(Data("x".utf8))
        }
        #expect(error?.code == .invalidArgument, "a retried failure would end in retryLimitExceeded")
    }

    @Test func subSecondTimeOutsAreRoundedUpToTheWholeSecondsURLSessionKeeps() {
        #if canImport(FoundationNetworking)
        // swift-corelibs-foundation arms its timer with `Int(timeoutInterval) * 1000` ms.
        #expect(URLSessionTransport.timeoutInterval(for: .milliseconds(300)) == 1)
        #expect(URLSessionTransport.timeoutInterval(for: .milliseconds(1)) == 1)
        #expect(URLSessionTransport.timeoutInterval(for: .milliseconds(1500)) == 2)
        #expect(URLSessionTransport.timeoutInterval(for: .seconds(60)) == 60)
        #else
        #expect(URLSessionTransport.timeoutInterval(for: .milliseconds(300)) == 0.3)
        #expect(URLSessionTransport.timeoutInterval(for: .seconds(60)) == 60)
        #endif
    }

    /// With a 300 ms time-out taken as 0 ms, every request failed at once with
    /// `timedOut` on Linux, however promptly the server answered.
    ///
    /// A sub-second time-out is the subject, so the answer (20 ms) races the 1 s
    /// the time-out becomes; a loaded machine could delay one answer that long,
    /// so up to three attempts are made, where the 0 ms timer failed them all.
    @Test func aRequestWithASubSecondTimeOutGetsItsAnswer() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            Thread.sleep(forTimeInterval: 0.02)  // answer promptly, but not before a 0 ms timer
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        }
        defer { server.stop() }
        let request = HTTPRequest(
            method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/o")!, idleTimeout: .milliseconds(300))
        var answered: HTTPResponse?
        var errors: [String] = []
        for _ in 0..<3 where answered == nil {
            do {
                answered = try await URLSessionTransport.shared.execute(request, progress: nil)
            } catch {
                errors.append("\(error)")
            }
        }
        let response = try #require(answered, "every attempt failed: \(errors)")
        #expect(response.status == 200)
        #expect(response.body == Data("ok".utf8))
    }

    /// What keeps a Ctrl-C from ending a command quickly is never the
    /// transport: cancelling the calling task aborts a request the server
    /// holds unanswered, long before its idle time-out.
    @Test(.timeLimit(.minutes(10)))
    func cancellingARequestTheServerNeverAnswersEndsItAndHangsUp() async throws {
        let reached = Atomic(false)
        let hungUp = Atomic(false)
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            reached.store(true, ordering: .releasing)
            // Reads until the client closes; the receive time-out (20 s) only loops.
            var byte: UInt8 = 0
            while true {
                let count = recv(connection.fd, &byte, 1, 0)
                if count > 0 || (count < 0 && (errno == EAGAIN || errno == EINTR)) { continue }
                break
            }
            hungUp.store(true, ordering: .releasing)
        }
        defer { server.stop() }
        let transport = URLSessionTransport()
        let request = HTTPRequest(
            method: "POST", url: URL(string: "http://127.0.0.1:\(server.port)/upload")!, body: .data(Data("x".utf8)),
            idleTimeout: .seconds(600))
        let task = Task { try await transport.execute(request, progress: nil) }
        while !reached.load(ordering: .acquiring) {
            try await Task.sleep(for: .milliseconds(10))
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        while !hungUp.load(ordering: .acquiring) {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    // MARK: Bounded memory

    /// 64 MiB, the native transport's limit too.
    static let limit = 64 * 1024 * 1024

    /// A server that answers every request with `head`, then streams up to
    /// `total` body bytes (16 KiB chunks, chunk-framed when `chunked`),
    /// counting what it managed to hand to the kernel.
    ///
    /// With `awaitingClose`, it then sends nothing more and waits for the
    /// client to hang up, noting in `sent.clientHungUp` whether it did (a
    /// client still waiting for the rest lets the connection's 20 s receive
    /// time-out end the wait instead, and the script closes).
    static func streamingServer(
        head: String, total: Int64, chunked: Bool = false, awaitingClose: Bool = false, sent: StreamedBytes
    ) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { connection, _ in
            defer { sent.finished.store(true, ordering: .releasing) }
            guard connection.readRequest() != nil else { return }
            let payload = [UInt8](repeating: 0x61, count: 16 * 1024)
            let frame = chunked ? Array("4000\r\n".utf8) + payload + Array("\r\n".utf8) : payload
            var open = Self.sendAll(Array(head.utf8), on: connection.fd)
            while open && sent.bytes.load(ordering: .relaxed) < total {
                open = Self.sendAll(frame, on: connection.fd)
                if open { sent.bytes.add(Int64(payload.count), ordering: .relaxed) }
            }
            guard awaitingClose else { return }
            if open {
                var byte: UInt8 = 0
                let count = recv(connection.fd, &byte, 1, 0)
                open = count > 0 || (count < 0 && errno != ECONNRESET)
            }
            sent.clientHungUp.store(!open, ordering: .releasing)
        }
    }

    /// Sends all of `bytes`; false once the peer is gone.
    static func sendAll(_ bytes: [UInt8], on fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL)
            #else
            let flags: Int32 = 0
            #endif
            let count = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, flags) }
            if count <= 0 { return false }
            offset += count
        }
        return true
    }

    /// The error a `GET` through a new transport fails with (recorded as a failure if it succeeds).
    static func failedGET(port: Int) async -> HTTPTransportError? {
        let transport = URLSessionTransport()
        let request = HTTPRequest(method: "GET", url: URL(string: "http://127.0.0.1:\(port)/b/o")!)
        return await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(request, progress: nil)
        }
    }

    @Test func anAnnouncedLengthAboveTheLimitIsRefusedBeforeReading() async throws {
        let sent = StreamedBytes()
        // Announces 10 GB, sends 1 MiB, and waits for the client to give up.
        let server = try Self.streamingServer(
            head: "HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n", total: 1024 * 1024, awaitingClose: true,
            sent: sent)
        let error = await Self.failedGET(port: server.port)
        server.stop()
        #expect(error?.kind == .responseTooLarge)
        #expect(error?.message == "The response from 127.0.0.1:\(server.port) is larger than \(Self.limit) bytes.")
        // The client hung up on its own, far short of the 10 GB it was promised.
        let hungUp = sent.clientHungUp.load(ordering: .acquiring)
        #expect(hungUp)
    }

    @Test func aBodyOfUnannouncedLengthIsAbortedOnceItCrossesTheLimit() async throws {
        let sent = StreamedBytes()
        // One chunk past the limit, then nothing: only a client that stops there hangs up.
        let server = try Self.streamingServer(
            head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", total: Int64(Self.limit) + 16 * 1024,
            chunked: true, awaitingClose: true, sent: sent)
        let error = await Self.failedGET(port: server.port)
        server.stop()
        #expect(error?.kind == .responseTooLarge)
        #expect(error?.message.contains("is larger than \(Self.limit) bytes") == true)
        let hungUp = sent.clientHungUp.load(ordering: .acquiring)
        #expect(hungUp)
    }

    /// swift-corelibs-foundation queues every chunk it reads for the delegate
    /// without waiting; a sink slower than the network used to let the queue
    /// (and the process) grow by whatever the server sent.
    @Test(.enabled(if: URLSessionTransportTests.queuesChunksForTheDelegate))
    func aStalledResponseSinkStopsTheTransportReading() async throws {
        let sent = StreamedBytes()
        let total: Int64 = 128 * 1024 * 1024
        let server = try Self.streamingServer(
            head: "HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\nConnection: close\r\n\r\n", total: total, sent: sent)
        defer { server.stop() }
        let transport = URLSessionTransport(maxPendingCallbacks: 64)
        let release = DispatchSemaphore(value: 0)
        let received = Atomic<Int64>(0)
        var request = HTTPRequest(method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/b/o")!)
        request.responseSink = HTTPResponseSink(
            begin: { status, _ in status == 200 },
            receive: { bytes in
                // The first chunk stalls the sink, as a disk that stopped keeping up would.
                if received.add(Int64(bytes.count), ordering: .relaxed).oldValue == 0 { release.wait() }
                return .more
            })
        // Watched from a thread of its own: while the transport is held back, calls into
        // URLSession from Swift's cooperative threads may wait too.
        let watcher = Thread {
            // Either the queue holds the transport back, or (unbounded) the server sends it all.
            while transport.delegateQueue.holdBackCount == 0 && !sent.finished.load(ordering: .acquiring) {
                usleep(2000)
            }
            sent.whileStalled.store(sent.bytes.load(ordering: .relaxed), ordering: .releasing)
            release.signal()
        }
        watcher.start()
        let response = try await transport.execute(request, progress: nil)
        let sentWhileStalled = sent.whileStalled.load(ordering: .acquiring)
        #expect(transport.delegateQueue.holdBackCount > 0)
        #expect(sentWhileStalled < total / 2, "the stalled transport kept reading: \(sentWhileStalled) bytes")
        #expect(response.status == 200)
        #expect(received.load(ordering: .relaxed) == total)
    }

    /// Where the URLSession hands chunks to its delegate queue with
    /// `addOperation` (swift-corelibs-foundation); Apple's may not.
    static var queuesChunksForTheDelegate: Bool {
        #if canImport(FoundationNetworking)
        true
        #else
        false
        #endif
    }
}

/// What a streaming scripted server managed to send.
final class StreamedBytes: Sendable {
    let bytes = Atomic<Int64>(0)
    let finished = Atomic(false)
    /// Whether the client closed the connection while the server waited.
    let clientHungUp = Atomic(false)
    /// `bytes` when the client was seen stalled.
    let whileStalled = Atomic<Int64>(-1)
}
