import Foundation
import Testing

@testable import CloudStorage

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

    @Test(arguments: TestSupport.transports)
    func anUploadThatCannotConnectRunsOutOfRetriesWithoutLeakingSecrets(transport: StorageTransportChoice) async throws
    {
        var configuration = StorageConfiguration()
        configuration.transport = transport
        configuration.initialRetryDelay = .milliseconds(10)
        configuration.maxUploadRetryTime = .milliseconds(300)
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
        configuration.initialRetryDelay = .milliseconds(10)
        configuration.maxUploadRetryTime = .seconds(1)
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
}
