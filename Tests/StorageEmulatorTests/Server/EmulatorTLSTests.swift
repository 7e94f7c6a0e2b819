import Foundation
import NativeTLS
import Testing

@testable import StorageEmulator

/// The emulator over HTTPS, driven byte by byte by ``RawClient`` with a TLS client that trusts
/// only the committed test CA (Tests/TLSTestCertificates).
@Suite("Emulator over TLS", .serialized, .timeLimit(.minutes(10)))
struct EmulatorTLSTests {
    static let certificates = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("TLSTestCertificates")

    static func path(_ name: String) -> String {
        certificates.appendingPathComponent(name).path
    }

    static func identity(_ name: String = "localhost") -> StorageEmulator.TLSIdentity {
        .init(certificateChain: .file(path("\(name).pem")), privateKey: .file(path("\(name).key")))
    }

    static func client() throws -> TLSContext {
        try TLSContext(
            client: TLSClientConfiguration(additionalTrustRoots: [.file(path("test-ca.pem"))], trustsSystemRoots: false)
        )
    }

    /// Starts an HTTPS emulator and stops it after `body`.
    func withTLSEmulator<T: Sendable>(_ body: (StorageEmulator) async throws -> T) async throws -> T {
        var configuration = StorageEmulator.Configuration()
        configuration.tls = Self.identity()
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        return try await body(emulator)
    }

    @Test func anUploadReadsBackByteIdenticallyOnOneKeptAliveConnection() async throws {
        try await withTLSEmulator { emulator in
            #expect(emulator.baseURL.absoluteString == "https://127.0.0.1:\(emulator.port)")
            let port = emulator.port
            let context = try Self.client()
            let bytes = testBytes(300_000)
            try await onThread {
                let client = try RawClient(port: port)
                try client.startTLS(context)
                try client.send(
                    "POST /upload/storage/v1/b/bkt/o?uploadType=media&name=a%2Fb HTTP/1.1\r\nHost: localhost\r\n"
                        + "Content-Type: application/octet-stream\r\nContent-Length: \(bytes.count)\r\n\r\n")
                try client.send(bytes)
                let upload = try client.readResponse(requestMethod: "POST")
                #expect(upload.status == 200)
                #expect(upload.headers["Connection"] == nil)
                // The same TLS connection carries the next request.
                try client.send("GET /storage/v1/b/bkt/o/a%2Fb?alt=media HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let download = try client.readResponse()
                #expect(download.status == 200)
                #expect(download.body == bytes)
            }
        }
    }

    @Test func plainHTTPToTheTLSPortGetsNoAnswerAndUsesNoFaultStep() async throws {
        try await withTLSEmulator { emulator in
            let port = emulator.port
            let plan = try emulator.installFaultPlan(["return-503"])
            let context = try Self.client()
            try await onThread {
                let plain = try RawClient(port: port)
                try plain.send("GET /storage/v1/b/bkt/o/x HTTP/1.1\r\nHost: h\r\nx-emulator-faults: \(plan)\r\n\r\n")
                // The server may answer with a TLS alert or a reset, never with HTTP.
                _ = try? plain.readToEOF()
                #expect(!plain.pending.starts(with: Array("HTTP/".utf8)))

                let client = try RawClient(port: port)
                try client.startTLS(context)
                let target = "/storage/v1/b/bkt/o/x?alt=media"
                try client.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\nx-emulator-faults: \(plan)\r\n\r\n")
                // The plain request never reached the application: the plan's one step is still there.
                #expect(try client.readResponse().status == 503)
                // Now it is used up and the request passes (to a missing object), on the same connection.
                try client.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\nx-emulator-faults: \(plan)\r\n\r\n")
                #expect(try client.readResponse().status == 404)
            }
        }
    }

    @Test func aClientThatAbortsMidHandshakeDoesNotStopTheServer() async throws {
        try await withTLSEmulator { emulator in
            let port = emulator.port
            let context = try Self.client()
            try await onThread {
                do {
                    let aborting = try RawClient(port: port)
                    // A TLS handshake record header announcing 512 bytes, then nothing: the client goes away.
                    try aborting.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00])
                }
                let client = try RawClient(port: port)
                try client.startTLS(context)
                try client.send("GET /storage/v1/b/bkt/o/none?alt=media HTTP/1.1\r\nHost: localhost\r\n\r\n")
                #expect(try client.readResponse().status == 404)
            }
        }
    }

    @Test func aResetFaultOverTLSEndsOnlyThatConnection() async throws {
        try await withTLSEmulator { emulator in
            let port = emulator.port
            let plan = try emulator.installFaultPlan(["reset-after-1K"])
            let context = try Self.client()
            try await onThread {
                let client = try RawClient(port: port)
                try client.startTLS(context)
                // One write, so that the reset cannot fail a second one.
                try client.send(
                    Array(
                        ("POST /upload/storage/v1/b/bkt/o?uploadType=media&name=r HTTP/1.1\r\nHost: localhost\r\n"
                            + "x-emulator-faults: \(plan)\r\nContent-Length: 4096\r\n\r\n").utf8) + testBytes(4096))
                #expect(throws: (any Error).self) { try client.readResponse(requestMethod: "POST") }

                let next = try RawClient(port: port)
                try next.startTLS(context)
                try next.send("GET /storage/v1/b/bkt/o/r HTTP/1.1\r\nHost: localhost\r\n\r\n")
                // Nothing was stored by the reset upload.
                #expect(try next.readResponse().status == 404)
            }
        }
    }

    @Test func chunkedBodiesAndPipelinedRequestsWorkOverTLS() async throws {
        let server = try TLSContext(
            server: TLSServerConfiguration(
                certificateChain: .file(Self.path("localhost.pem")), privateKey: .file(Self.path("localhost.key"))))
        let context = try Self.client()
        // Reads of 7 bytes stop inside chunks and TLS records alike.
        try await withServer(EchoApplication(readSize: 7), tls: server) { _, port in
            try await onThread {
                let client = try RawClient(port: port)
                try client.startTLS(context)
                try client.send(
                    "PUT /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "5\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n"
                        + "POST /d HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                let chunked = try client.readResponse()
                #expect(chunked.text == "helloabcdefghijklmnopqrstuvwxyz")
                #expect(chunked.headers["X-Content-Length"] == "chunked")
                let last = try client.readResponse()
                #expect(last.text == "ok")
                #expect(last.headers["Connection"] == "close")
                // The server ends with close_notify: a clean end of stream, not a truncation.
                #expect(try client.readToEOF().isEmpty)
            }
        }
    }

    @Test func aConnectionBeyondTheLimitIsClosedNotAnsweredInClearText() async throws {
        var limits = EmulatorHTTPServer.Limits()
        limits.maxConnections = 1
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let application = ClosureApplication { _, responder in
            entered.signal()
            release.wait()
            try? responder.respond(status: 200, headers: [:], body: Data())
        }
        let server = try TLSContext(
            server: TLSServerConfiguration(
                certificateChain: .file(Self.path("localhost.pem")), privateKey: .file(Self.path("localhost.key"))))
        let context = try Self.client()
        let refusal = try await withServer(application, limits: limits, tls: server) { _, port in
            try await onThread {
                let busy = try RawClient(port: port)
                try busy.startTLS(context)
                try busy.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                entered.wait()
                let refused = try RawClient(port: port)
                let refusal: TLSError.Kind?
                do {
                    try refused.startTLS(context)
                    refusal = nil
                } catch let error as TLSError {
                    refusal = error.kind
                }
                release.signal()
                #expect(try busy.readResponse().status == 200)
                return refusal
            }
        }
        // Closed during the handshake, which a client retries; a clear-text 503 would read as a plain-HTTP server.
        #expect(refusal != nil)
        #expect(refusal != .plainHTTPServer)
    }

    @Test func stopEndsAConnectionStillInItsHandshake() async throws {
        var configuration = StorageEmulator.Configuration()
        configuration.tls = Self.identity()
        let emulator = try StorageEmulator.start(configuration)
        let port = emulator.port
        try await onThread {
            let silent = try RawClient(port: port)
            // Half a record header: the server's handshake waits for the rest.
            try silent.send([0x16, 0x03])
            emulator.stop()
            // The server closed it; it never answered.
            _ = try? silent.readToEOF()
            #expect(!silent.pending.starts(with: Array("HTTP/".utf8)))
        }
    }

    @Test func anUnusableCertificateOrKeyFailsBeforeListening() throws {
        var configuration = StorageEmulator.Configuration()
        configuration.tls = .init(
            certificateChain: .file(Self.path("no-such.pem")), privateKey: .file(Self.path("localhost.key")))
        let missing = #expect(throws: StorageEmulator.EmulatorError.self) { try StorageEmulator.start(configuration) }
        #expect(missing?.description.contains("no-such.pem") == true)

        configuration.tls = .init(
            certificateChain: .file(Self.path("localhost.pem")), privateKey: .file(Self.path("other-name.key")))
        let mismatched = #expect(throws: StorageEmulator.EmulatorError.self) {
            try StorageEmulator.start(configuration)
        }
        #expect(mismatched?.description.contains("private key") == true)

        configuration.tls = .init(certificateChain: .bytes(Array("not PEM".utf8)), privateKey: .bytes([]))
        #expect(throws: StorageEmulator.EmulatorError.self) { try StorageEmulator.start(configuration) }
    }
}
