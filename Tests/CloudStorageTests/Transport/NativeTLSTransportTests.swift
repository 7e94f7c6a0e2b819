import Foundation
import HTTPTestServers
import NativeTLS
import Testing

@testable import CloudStorage
@testable import HTTPClient

#if canImport(Glibc)
import Glibc
#endif

/// The native transport over `https://`: TLS as a stream layer under the same HTTP/1.1
/// exchange, against ``TLSTestServer``. No verdict depends on timing: tests wait for the
/// server's events, and time limits only guard against hangs.
@Suite("Native transport over TLS", .timeLimit(.minutes(10)), .enabled(if: TLSLibrary.isAvailable))
struct NativeTLSTransportTests {
    static func url(_ server: TLSTestServer, _ path: String = "/x") -> URL {
        URL(string: "https://127.0.0.1:\(server.port)\(path)")!
    }

    /// The reports of every connection accepted before a sentinel connection, which (the
    /// accept queue being first-in first-out) proves no other attempt is still queued.
    static func connectionsSoFar(_ server: TLSTestServer) async throws -> [TLSTestServer.Report] {
        let sentinel = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(sentinel) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(server.port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let connected = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(sentinel, $0, length) == 0 && getsockname(sentinel, $0, &length) == 0
            }
        }
        try #require(connected)
        let sentinelPort = Int(UInt16(bigEndian: address.sin_port))
        var accepted: [Int] = []
        var finished: [Int: TLSTestServer.Report] = [:]
        var sawSentinel = false
        for await event in server.events {
            switch event {
            case .accepted(let port) where port == sentinelPort: sawSentinel = true
            case .accepted(let port): accepted.append(port)
            case .finished(let port, let report): finished[port] = report
            case .holding: break
            }
            if sawSentinel && accepted.allSatisfy({ finished[$0] != nil }) { break }
        }
        return accepted.compactMap { finished[$0] }
    }

    // MARK: - Success

    @Test func getAndUploadGoByteIdenticallyOverOneConnection() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let transport = TLSTestPKI.transport()
        let download = try await transport.execute(HTTPRequest(method: "GET", url: Self.url(server)), progress: nil)
        #expect(download.status == 200)
        #expect(download.body == Data(TLSTestServer.getBody))

        // An upload-sized body from a file region (pread through the connection's buffer) and from memory.
        let payload = Data(testBytes(count: 5 * 1024 * 1024 + 123, seed: 42))
        let fileURL = try TestSupport.temporaryDirectory().appendingPathComponent("tls-upload.bin")
        try payload.write(to: fileURL)
        let file = try ReadOnlyFile(path: fileURL.path)
        let head = Data("head".utf8)
        let body = HTTPRequestBody(segments: [
            .data(head), .fileRegion(file, offset: 0, length: Int64(payload.count)), .data(payload),
        ])
        let upload = try await transport.execute(
            HTTPRequest(method: "PUT", url: Self.url(server), body: body), progress: nil)
        var crc = CRC32C()
        crc.update(head)
        crc.update(payload)
        crc.update(payload)
        let expected = "\(head.count + 2 * payload.count) \(crc.value)"
        #expect(upload.status == 200)
        #expect(String(decoding: upload.body, as: UTF8.self) == expected)
        #expect(transport.connectionsOpened == 1)

        // Closing the idle connection lets the server's side of it end and report.
        transport.pool.closeAll()
        let reports = try await Self.connectionsSoFar(server)
        #expect(reports.count == 1)
        #expect(reports.first?.requests == 2)
    }

    @Test func aNewConnectionResumesTheSession() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        // No idle connections kept: each request opens (and handshakes) a connection of its own.
        let transport = TLSTestPKI.transport(maxIdleConnectionsPerHost: 0)
        for _ in 0..<2 {
            let url = URL(string: "https://localhost:\(server.port)/x")!
            let response = try await transport.execute(HTTPRequest(method: "GET", url: url), progress: nil)
            #expect(response.body == Data(TLSTestServer.getBody))
        }
        #expect(transport.connectionsOpened == 2)
        let reports = try await Self.connectionsSoFar(server)
        #expect(reports.map(\.sessionResumed) == [false, true])
    }

    // MARK: - Verification failures

    @Test(arguments: [
        ("untrusted", "not trusted"), ("other-name", "another name"), ("expired", "expired"), ("plain", "plain HTTP"),
    ])
    func aServerThatCannotBeVerifiedFailsOnceWithoutSeeingTheRequest(certificate: String, cause: String) async throws {
        let server = try TLSTestServer(certificate == "plain" ? .plainHTTP : .tls(certificate))
        defer { server.stop() }
        var configuration = StorageConfiguration()
        configuration.transport = .native
        configuration.tls.additionalTrustRoots = [.file(URL(fileURLWithPath: TLSTestPKI.path("test-ca.pem")))]
        try configuration.retry.setMaxOperationTime(.seconds(60))
        let storage = Storage(
            bucket: "bucket", endpoint: .gcs(URL(string: "https://127.0.0.1:\(server.port)")!),
            authorization: .bearerToken("secret"), configuration: configuration)
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "object").getMetadata()
        }
        #expect(error?.code == .tlsFailure)
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains(cause))
        #expect(!message.contains("secret"))

        let reports = try await Self.connectionsSoFar(server)
        #expect(reports.count == 1)
        #expect(reports.allSatisfy { !$0.handshakeSucceeded && $0.requests == 0 && !$0.sawAuthorization })
        if certificate != "plain" {
            #expect(reports.allSatisfy { $0.applicationBytes == 0 })
        }
    }

    // MARK: - Trust roots

    @Test func aTrustRootIsCheckedWhereItIsGiven() throws {
        let pem = try Data(contentsOf: URL(fileURLWithPath: TLSTestPKI.path("test-ca.pem")))
        _ = try StorageConfiguration.TrustRoot.pem(pem)
        let error = #expect(throws: StorageError.self) {
            _ = try StorageConfiguration.TrustRoot.pem(Data("not a certificate".utf8))
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test func anUnusableTrustRootFailsEachRequestSayingWhy() async throws {
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.additionalTrustRoots = [.file("/nonexistent/ca.pem")]
        let transport = NativeHTTPTransport(configuration: configuration)
        for _ in 0..<2 {
            let error = await #expect(throws: HTTPTransportError.self) {
                _ = try await transport.execute(
                    HTTPRequest(method: "GET", url: URL(string: "https://127.0.0.1:1/x")!), progress: nil)
            }
            #expect(error?.kind == .tlsFailure)
            #expect(error?.permanent == true)
            #expect(error?.message.contains("/nonexistent/ca.pem") == true)
        }
        // Refused before connecting: nothing was opened.
        #expect(transport.connectionsOpened == 0)
    }

    // MARK: - Cancellation

    @Test func cancellingAnUploadTheServerHoldsEndsIt() async throws {
        let server = try TLSTestServer(.tls("localhost"), holdsUploads: true)
        defer { server.stop() }
        let transport = TLSTestPKI.transport()
        let body = Data(testBytes(count: 16 * 1024 * 1024, seed: 3))
        let task = Task {
            try await transport.execute(
                HTTPRequest(method: "PUT", url: Self.url(server), body: .data(body)), progress: nil)
        }
        for await event in server.events {
            if case .holding = event { break }
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
