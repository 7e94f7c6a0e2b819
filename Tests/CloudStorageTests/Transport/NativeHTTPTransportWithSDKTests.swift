import Foundation
import HTTPTestServers
import StorageEmulator
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// The native HTTP client where it needs more than a scripted server: a real server (the
/// emulator) to upload to and read back from, the SDK's file type and errors, and the SDK's
/// choice of transport. Its other tests are in HTTPClientTests, `NativeHTTPTransportTests`.
@Suite("Native HTTP transport with the emulator and the SDK", .timeLimit(.minutes(10)))
struct NativeHTTPTransportWithSDKTests {
    // MARK: - Helpers

    static func url(_ port: Int, _ path: String = "/x") -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    static func mediaUploadURL(_ emulator: StorageEmulator, bucket: String, name: String) -> URL {
        URL(string: "\(emulator.baseURL)/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=\(name)")!
    }

    static func mediaURL(_ emulator: StorageEmulator, bucket: String, name: String) -> URL {
        URL(string: "\(emulator.baseURL)/storage/v1/b/\(bucket)/o/\(name)?alt=media")!
    }

    /// Collects progress reports.
    final class ProgressLog: Sendable {
        private let values = Mutex<[Int64]>([])
        var all: [Int64] { values.withLock { $0 } }
        var callback: @Sendable (Int64) -> Void { { value in self.values.withLock { $0.append(value) } } }
    }

    // MARK: - Connections

    @Test func sequentialRequestsReuseOneConnection() async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        let transport = NativeHTTPTransport(configuration: .forTests())
        for index in 0..<10 {
            let payload = Data("object number \(index)".utf8)
            let upload = try await transport.execute(
                HTTPRequest(
                    method: "POST", url: Self.mediaUploadURL(emulator, bucket: "reuse", name: "o\(index)"),
                    body: .data(payload)),
                progress: nil)
            #expect(upload.status == 200)
            let download = try await transport.execute(
                HTTPRequest(method: "GET", url: Self.mediaURL(emulator, bucket: "reuse", name: "o\(index)")),
                progress: nil)
            #expect(download.status == 200)
            #expect(download.body == payload)
        }
        #expect(transport.connectionsOpened == 1)
        #expect(transport.pool.idleCount == 1)
    }

    @Test func aBurstToOneHostUsesAtMostTheLimitOfConnectionsAndFewThreads() async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.maxConnectionsPerHost = 4
        let transport = NativeHTTPTransport(configuration: configuration)
        let payloads = (0..<200).map { Data("burst object \($0)".utf8) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, payload) in payloads.enumerated() {
                group.addTask {
                    let response = try await transport.execute(
                        HTTPRequest(
                            method: "POST", url: Self.mediaUploadURL(emulator, bucket: "burst", name: "o\(index)"),
                            body: .data(payload)),
                        progress: nil)
                    #expect(response.status == 200)
                }
            }
            try await group.waitForAll()
        }
        // The limit holds at every moment. How many connections were opened in all also
        // depends on time (an idle one ages out after maxIdleTime, or the server closes it,
        // and a slow machine makes the burst long), so that count only shows reuse.
        #expect(transport.pool.peakLeasesOut <= 4)
        #expect(transport.connectionsOpened < 20)
        #expect(transport.threads.threadCount <= 4)
        #expect(transport.pool.leasesOut == 0)
        #expect(transport.pool.waiting == 0)
        for (index, payload) in payloads.enumerated() {
            let download = try await transport.execute(
                HTTPRequest(method: "GET", url: Self.mediaURL(emulator, bucket: "burst", name: "o\(index)")),
                progress: nil)
            #expect(download.body == payload)
        }
    }

    // MARK: - Bodies

    @Test("file segments go out byte for byte from their offsets", arguments: [true, false])
    func fileSegmentsAtOffsets(usesSendfile: Bool) async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        let payload = TestSupport.payload(size: 3 * .mebibyte + 17, seed: 11)
        let fileURL = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: fileURL.deletingLastPathComponent()) }
        let file = try ReadOnlyFile(path: fileURL.path)
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.usesSendfile = usesSendfile
        let transport = NativeHTTPTransport(configuration: configuration)
        let length = 2 * Int64(Int.mebibyte) + 5
        let log = ProgressLog()
        let upload = try await transport.execute(
            HTTPRequest(
                method: "POST", url: Self.mediaUploadURL(emulator, bucket: "files", name: "part"),
                body: HTTPRequestBody(segments: [.fileRegion(file, offset: 1000, length: length)])),
            progress: log.callback)
        #expect(upload.status == 200)
        let stored = try await transport.execute(
            HTTPRequest(method: "GET", url: Self.mediaURL(emulator, bucket: "files", name: "part")), progress: nil)
        #expect(stored.body == payload[1000..<(1000 + Int(length))])
        let reports = log.all
        #expect(reports.last == length)
        #expect(reports == reports.sorted())
        #expect(reports.count < 200, "progress is rate-limited")
    }

    @Test("memory and file segments mix in order", arguments: [true, false])
    func mixedSegments(usesSendfile: Bool) async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        let payload = TestSupport.payload(size: 3 * .mebibyte, seed: 12)
        let fileURL = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: fileURL.deletingLastPathComponent()) }
        let file = try ReadOnlyFile(path: fileURL.path)
        let memory = TestSupport.payload(size: 200_000, seed: 13)
        let segments: [HTTPRequestBody.Segment] = [
            .data(Data("head-".utf8)),
            .fileRegion(file, offset: 7, length: 100_000),
            .data(memory[500..<70_000]),  // a slice with a non-zero start index
            .data(Data()),
            .fileRegion(file, offset: 2 * Int64(Int.mebibyte), length: Int64(Int.mebibyte)),
            .fileRegion(file, offset: 0, length: 1),
            .data(memory[199_000...]),
        ]
        var expected = Data("head-".utf8)
        expected += payload[7..<100_007]
        expected += memory[500..<70_000]
        expected += payload[(2 * .mebibyte)...]
        expected += payload[0..<1]
        expected += memory[199_000...]
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.usesSendfile = usesSendfile
        let transport = NativeHTTPTransport(configuration: configuration)
        let upload = try await transport.execute(
            HTTPRequest(
                method: "POST", url: Self.mediaUploadURL(emulator, bucket: "mixed", name: "m"),
                body: HTTPRequestBody(segments: segments)),
            progress: nil)
        #expect(upload.status == 200)
        let stored = try await transport.execute(
            HTTPRequest(method: "GET", url: Self.mediaURL(emulator, bucket: "mixed", name: "m")), progress: nil)
        #expect(stored.body.count == expected.count)
        #expect(stored.body == expected)
    }

    @Test("a file that shrinks mid-send is reported as changed", arguments: [true, false])
    func fileTruncatedMidSend(usesSendfile: Bool) async throws {
        let size = 64 * Int64(Int.mebibyte)
        let fileURL = try ScriptedHTTPServer.sparseFile(size: size)
        defer { try? FileManager.default.removeItem(at: fileURL.deletingLastPathComponent()) }
        let path = fileURL.path
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readHead() != nil else { return }
            _ = connection.readBody(1024 * 1024)
            _ = truncate(path, 2 * 1024 * 1024)
            connection.drainUntilClosed()
        }
        defer { server.stop() }
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.usesSendfile = usesSendfile
        let transport = NativeHTTPTransport(configuration: configuration)
        let file = try ReadOnlyFile(path: path)
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(
                HTTPRequest(
                    method: "PUT", url: Self.url(server.port),
                    body: HTTPRequestBody(segments: [.fileRegion(file, offset: 0, length: size)])),
                progress: nil)
        }
        #expect(error?.kind == .bodySourceFailed)
        #expect((error?.underlying as? StorageError)?.code == .fileChanged)
    }

    // MARK: - Selection

    @Test func storagePicksTheTransportByChoiceAndScheme() throws {
        let http = StorageEndpoint.gcs(URL(string: "http://127.0.0.1:4443")!)
        var configuration = StorageConfiguration()
        #expect(configuration.transport == .automatic)
        #expect(Storage(bucket: "b", endpoint: http).transport is SchemeRoutingTransport)
        // An https endpoint's transport depends on OpenSSL 3 (TransportRoutingTests).
        configuration.transport = .native
        #expect(Storage(bucket: "b", configuration: configuration).transport is NativeHTTPTransport)
        configuration.transport = .urlSession
        #expect(Storage(bucket: "b", endpoint: http, configuration: configuration).transport is URLSessionTransport)
        #expect(Storage(bucket: "b", endpoint: http).transport.maximumBodyLength == nil)
    }

    @Test func anUnsupportedSchemeWithTheNativeTransportFailsAtOnce() async throws {
        var configuration = StorageConfiguration()
        configuration.transport = .native
        // A retry would wait 10 minutes first: finishing well before that proves there was none.
        try configuration.retry.setInitialDelay(.seconds(600))
        try configuration.retry.setMaxDelay(.seconds(600))
        let storage = Storage(
            bucket: "b", endpoint: .gcs(URL(string: "ftp://127.0.0.1:1")!), configuration: configuration)
        let started = ContinuousClock.now
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "a").putDataAsync(Data("x".utf8))
        }
        #expect(error?.code == .invalidArgument)
        #expect(started.duration(to: .now) < .seconds(120))
    }
}
