import Foundation
import HTTPTestServers
import NativeTLS
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#endif

/// A server that cannot be verified (an untrusted issuer, an expired certificate,
/// another name) or does not speak TLS at all (a plain HTTP server behind
/// `https://`) fails the operation with ``StorageErrorCode/tlsFailure`` naming
/// the cause, on every route, and the server sees no request and no token.
///
/// Each `Storage` keeps a 600 s retry budget, so a failure treated as transient
/// would be retried (and reconnect) long past the suite's time limit; the
/// verdict is what the server counted: exactly one connection, no HTTP request.
@Suite("TLS failures on every route", .timeLimit(.minutes(10)), .enabled(if: TLSLibrary.isAvailable))
struct TLSFailureTests {
    enum Route: String, CaseIterable, Sendable {
        case native, automatic, urlSession

        var choice: StorageTransportChoice {
            switch self {
            case .native: .native
            case .automatic: .automatic
            case .urlSession: .urlSession
            }
        }
    }

    enum Server: String, CaseIterable, Sendable {
        case untrusted, expired, otherName = "other-name", plain

        var mode: TLSTestServer.Mode { self == .plain ? .plainHTTP : .tls(rawValue) }

        /// Words of the message that name the cause.
        var cause: String {
            switch self {
            case .untrusted: "issuer is not trusted"
            case .expired: "certificate has expired"
            case .otherName: "certificate is for another name"
            case .plain: "plain HTTP server"
            }
        }
    }

    /// Every route against every server, except where the route cannot tell: `URLSession`
    /// on Linux trusts only the system store (no way to give it the test CA: libcurl's CA
    /// file is fixed when FoundationNetworking sets up each transfer), so an expired or
    /// wrong-name certificate from the test CA is, to it, first of all untrusted.
    static let cases: [(Route, Server)] = Route.allCases.flatMap { route in
        Server.allCases.compactMap { server in
            #if canImport(FoundationNetworking)
            if route == .urlSession && (server == .expired || server == .otherName) { return nil }
            #endif
            return (route, server)
        }
    }

    static func storage(_ route: Route, port: Int) -> Storage {
        var configuration = StorageConfiguration()
        configuration.transport = route.choice
        configuration.tls.additionalTrustRoots = [.file(URL(fileURLWithPath: TLSTestPKI.path("test-ca.pem")))]
        configuration.applyForTest { try $0.retry.setMaxOperationTime(.seconds(600)) }
        return Storage(
            bucket: "bucket", endpoint: .gcs(URL(string: "https://127.0.0.1:\(port)")!),
            authorization: .bearerToken("secret-token"), configuration: configuration)
    }

    @Test(arguments: cases)
    func failsOnceWithItsCauseAndTheServerSeesNoRequest(route: Route, server kind: Server) async throws {
        let server = try TLSTestServer(kind.mode)
        defer { server.stop() }
        let storage = Self.storage(route, port: server.port)
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "object.bin").putDataAsync(Data("secret bytes".utf8))
        }
        #expect(error?.code == .tlsFailure)
        let message = error?.message ?? ""
        #expect(message.contains(kind.cause), "\(message)")
        #expect(message.contains("127.0.0.1:\(server.port)"), "names the server")
        #expect(!message.contains("secret"))
        if route == .urlSession {
            #expect(message.contains("URLSession"), "\(message)")
        } else {
            // The native transport's words: on Linux `.automatic` carries https itself.
            #expect(!message.contains("URLSession"), "\(message)")
        }

        let reports = try await server.connectionsSoFar()
        #expect(reports.count == 1, "one connection attempt, no retry")
        for report in reports {
            #expect(!report.handshakeSucceeded)
            #expect(report.requests == 0)
            #expect(!report.sawAuthorization)
            // In TLS nothing was decrypted; in clear text only the ClientHello arrived.
            #expect(kind == .plain || report.applicationBytes == 0)
        }
    }
}

extension TLSFailureTests {
    /// The emulator on plain HTTP, addressed as `https://` (an easy slip with
    /// `STORAGE_EMULATOR_HOST`): it answers the ClientHello with a 400 in clear text, so
    /// both transports can say it is a plain HTTP server rather than retry a silent close.
    @Test(arguments: Route.allCases)
    func thePlainEmulatorBehindHTTPSIsNamedAsSuch(route: Route) async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        #expect(emulator.baseURL.scheme == "http")
        let storage = Self.storage(route, port: emulator.port)
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "object.bin").putDataAsync(Data("secret bytes".utf8))
        }
        #expect(error?.code == .tlsFailure)
        #expect(error?.message.contains("plain HTTP") == true, "\(String(describing: error))")
        #expect(emulator.application.store.record(bucket: "bucket", name: "object.bin") == nil)
    }
}

extension TLSFailureTests {
    /// A plain server whose answer to the ClientHello is text that does not start with
    /// `HTTP/` (as Python's `http.server` answers with an HTML page): OpenSSL reports a
    /// "wrong version number", which both transports name as a plain server.
    @Test(arguments: Route.allCases)
    func aPlainTextAnswerThatIsNotHTTPIsNamedAsAPlainServer(route: Route) async throws {
        let sentinel = Array("SENTINEL".utf8)
        let sentinelIndex = Mutex<Int?>(nil)
        let server = try ScriptedHTTPServer { connection, index in
            let first = connection.readBody(sentinel.count)
            if first == sentinel {
                sentinelIndex.withLock { $0 = index }
                return
            }
            connection.write("<!DOCTYPE HTML>\n<html><body><h1>Error response</h1></body></html>\n")
        }
        defer { server.stop() }
        let storage = Self.storage(route, port: server.port)
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "object.bin").putDataAsync(Data("secret bytes".utf8))
        }
        #expect(error?.code == .tlsFailure)
        #expect(error?.message.contains("plain HTTP server") == true, "\(String(describing: error))")

        // Connections are accepted in order: a sentinel numbered 1 proves one attempt came before it.
        let probe = try #require(Self.connect(port: server.port))
        defer { Glibc.close(probe) }
        #expect(sentinel.withUnsafeBytes { Glibc.send(probe, $0.baseAddress, $0.count, 0) } == sentinel.count)
        while sentinelIndex.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
        #expect(sentinelIndex.withLock { $0 } == 1, "one connection attempt, no retry")
    }

    /// A connected loopback TCP socket, or nil.
    static func connect(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }
}

/// What swift-corelibs-foundation's `URLSession` reports for TLS failures, read into a
/// cause. It reports them all as `URLError(.unknown)`, with libcurl's message as the
/// description; the messages here are those libcurl 7.88.1 with OpenSSL 3.0 gave against
/// the TLS emulator serving each test certificate (through `URLSession` for the untrusted
/// and plain cases; through `curl --cacert test-ca.pem`, the same libcurl, for the rest).
@Suite("URLSession TLS failure causes")
struct URLSessionTLSFailureTests {
    @Test(arguments: [
        (
            "SSL certificate problem: self-signed certificate in certificate chain",
            URLSessionTLSFailure.Cause.untrustedIssuer
        ),
        ("SSL certificate problem: unable to get local issuer certificate", .untrustedIssuer),
        ("SSL certificate problem: certificate has expired", .expired),
        ("SSL certificate problem: certificate is not yet valid", .notYetValid),
        ("SSL certificate problem: certificate revoked", .certificateRejected),
        ("SSL: no alternative certificate subject name matches target host name '127.0.0.1'", .nameMismatch),
        ("SSL: no alternative certificate subject name matches target ipv4 address '127.0.0.1'", .nameMismatch),
        ("OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number", .plainHTTPServer),
        ("OpenSSL/3.0.19: error:0A000102:SSL routines::unsupported protocol", .protocolVersion),
        ("OpenSSL/3.0.19: error:0A000410:SSL routines::sslv3 alert handshake failure", .handshakeRefused),
    ])
    func libcurlsMessageNamesTheCause(message: String, cause: URLSessionTLSFailure.Cause) {
        let failure = URLSessionTLSFailure(code: URLError.Code.unknown.rawValue, description: message)
        #expect(failure?.cause == cause)
        let error = failure?.transportError(server: "example.com:443")
        #expect(error?.kind == .tlsFailure)
        #expect(error?.permanent == true)
        #expect(error?.message.contains(message) == true)
        #expect(error?.message.contains("example.com:443") == true)
    }

    @Test(arguments: [
        // A connection broken mid-handshake (the emulator drops a ClientHello on a plain port so).
        "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:18450 ",
        "Connection reset by peer",
        "Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server",
        "",
    ])
    func otherFailuresStayRetryable(message: String) {
        #expect(URLSessionTLSFailure(code: URLError.Code.unknown.rawValue, description: message) == nil)
    }

    @Test func applesCertificateCodesNameTheCause() {
        let codes: [(URLError.Code, URLSessionTLSFailure.Cause)] = [
            (.serverCertificateHasUnknownRoot, .untrustedIssuer), (.serverCertificateHasBadDate, .expired),
            (.serverCertificateNotYetValid, .notYetValid), (.serverCertificateUntrusted, .certificateRejected),
        ]
        for (code, cause) in codes {
            #expect(
                URLSessionTLSFailure(code: code.rawValue, description: "The certificate is invalid.")?.cause == cause)
        }
        #expect(URLSessionTLSFailure(code: URLError.Code.secureConnectionFailed.rawValue, description: nil) == nil)
    }
}
