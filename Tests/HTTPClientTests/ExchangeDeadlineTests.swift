import Foundation
import HTTPTestServers
import NativeTLS
import Testing

@testable import HTTPClient

/// Deadlines that a peer cannot move by trickling bytes: connecting plus the TLS handshake
/// (``NativeHTTPTransport/Configuration/connectTimeout``), and a whole exchange
/// (``HTTPRequest/deadline``).
///
/// Each peer drips a byte every 10 ms (``DrippingPeer``) and never completes what it started,
/// while every idle time-out is a minute: only the deadline can end the request, and when it
/// does the peer is still dripping (it sees the client go). A client that only had idle
/// time-outs would wait for the peer's hang guard, which closes the connection: a lost
/// connection, not a time-out.
@Suite("Deadlines a trickling peer cannot stretch", .timeLimit(.minutes(10)))
struct ExchangeDeadlineTests {
    /// A client of the HTTP client's own: the native one over plain HTTP and over TLS (trusting
    /// only the test CA), and the URLSession one over plain HTTP (on Linux it cannot be told to
    /// trust a private CA).
    enum Client: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case nativeHTTP, urlSessionHTTP, nativeHTTPS

        var scheme: ScriptedHTTPServer.Scheme { self == .nativeHTTPS ? .https : .http }

        var testDescription: String { rawValue }

        func makeTransport() -> any HTTPTransport {
            switch self {
            case .nativeHTTP: NativeHTTPTransport(configuration: .forTests())
            case .urlSessionHTTP: URLSessionTransport.shared
            case .nativeHTTPS: TLSTestPKI.transport()
            }
        }
    }

    @Test(.enabled(if: TLSLibrary.isAvailable))
    func aHandshakeDrippedByteByByteEndsAtTheConnectDeadline() async throws {
        let peer = DrippingPeer()
        // A plain server, so that its bytes reach the client as they are: the start of a record.
        let server = try ScriptedHTTPServer { connection, _ in
            peer.run(on: connection, prefix: DrippingPeer.handshakeRecordStart, belowTLS: true)
        }
        defer { server.stop() }
        var configuration = NativeHTTPTransport.Configuration.forTests()
        configuration.additionalTrustRoots = [.file(TLSTestPKI.path("test-ca.pem"))]
        configuration.trustsSystemRoots = false
        // A deadline for connecting and the handshake together, not a time-out per read.
        configuration.connectTimeout = .milliseconds(500)
        let transport = NativeHTTPTransport(configuration: configuration)
        let request = HTTPRequest(
            method: "GET", url: URL(string: "https://127.0.0.1:\(server.port)/o")!, idleTimeout: .seconds(60))
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(request, progress: nil)
        }
        #expect(error?.kind == .timedOut, "\(String(describing: error))")
        #expect(error?.message.contains("handshake") == true)
        if server.acceptedConnections == 1 {
            #expect(try await peer.ended() == .clientGone, "the client gave up while bytes still came")
        }
    }

    @Test(arguments: Client.allCases)
    func anAnswerDrippedByteByByteEndsAtTheRequestsDeadline(client: Client) async throws {
        let peer = DrippingPeer()
        let server = try NumberedServer(scheme: client.scheme) { connection, _, index, _ in
            // The first request warms the connection up (and, over https, the TLS context).
            guard index > 0 else {
                connection.write(NumberedServer.empty(204))
                return .keepReading
            }
            peer.run(on: connection, prefix: Array("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".utf8))
            return .close
        }
        defer { server.stop() }
        let transport = client.makeTransport()
        var request = HTTPRequest(
            method: "GET", url: server.baseURL.appendingPathComponent("o"), idleTimeout: .seconds(60))
        #expect(try await transport.execute(request, progress: nil).status == 204)
        request.deadline = .now + .seconds(1)
        let error = await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(request, progress: nil)
        }
        #expect(error?.kind == .timedOut, "\(String(describing: error))")
        #expect(error?.message.contains("deadline") == true)
        // On a starved machine the deadline may pass before the server read the request.
        if server.requests(to: "/o") == 2 {
            #expect(try await peer.ended() == .clientGone, "the client gave up while bytes still came")
        }
    }
}
