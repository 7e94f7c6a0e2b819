import Foundation
import HTTPTestServers
import NativeTLS
import Testing

@testable import HTTPClient

/// The native transport over `https://`: TLS as a stream layer under the same HTTP/1.1
/// exchange, against ``TLSTestServer``. No verdict depends on timing: tests wait for the
/// server's events, and time limits only guard against hangs. (What the SDK makes of TLS
/// failures and trust roots is tested in CloudStorageTests, `NativeTLSTransportWithSDKTests`.)
@Suite("Native transport over TLS", .timeLimit(.minutes(10)), .enabled(if: TLSLibrary.isAvailable))
struct NativeTLSTransportTests {
    // MARK: - Success

    @Test func getAndUploadGoByteIdenticallyOverOneConnection() async throws {
        let server = try TLSTestServer(.tls("localhost"))
        defer { server.stop() }
        let transport = TLSTestPKI.transport()
        let download = try await transport.execute(HTTPRequest(method: "GET", url: server.url()), progress: nil)
        #expect(download.status == 200)
        #expect(download.body == Data(TLSTestServer.getBody))

        // An upload-sized body from a file region (pread through the connection's buffer) and from memory.
        let payload = Data(testBytes(count: 5 * 1024 * 1024 + 123, seed: 42))
        let fileURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("httpclient-tests-\(UUID().uuidString)-tls-upload.bin")
        try payload.write(to: fileURL)
        defer { try? FileManager.default.removeItem(at: fileURL) }
        let file = try PlainBodyFile(path: fileURL.path)
        let head = Data("head".utf8)
        let body = HTTPRequestBody(segments: [
            .data(head), .fileRegion(file, offset: 0, length: Int64(payload.count)), .data(payload),
        ])
        let upload = try await transport.execute(
            HTTPRequest(method: "PUT", url: server.url(), body: body), progress: nil)
        let expected = TLSTestServer.answer(toUploadOf: [UInt8](head + payload + payload))
        #expect(upload.status == 200)
        #expect(String(decoding: upload.body, as: UTF8.self) == expected)
        #expect(transport.connectionsOpened == 1)

        // Closing the idle connection lets the server's side of it end and report.
        transport.pool.closeAll()
        let reports = try await server.connectionsSoFar()
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
        let reports = try await server.connectionsSoFar()
        #expect(reports.map(\.sessionResumed) == [false, true])
    }

    // MARK: - Trust roots

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
                HTTPRequest(method: "PUT", url: server.url(), body: .data(body)), progress: nil)
        }
        for await event in server.events {
            if case .holding = event { break }
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
