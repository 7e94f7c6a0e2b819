import Foundation
import HTTPTestServers
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// A server that accepts the connection and never answers the ClientHello: the
/// native transport's request time-out and cancellation end the handshake too,
/// as they end a stalled exchange, instead of waiting on the socket.
///
/// The server reads until the client goes, so only the client can end each case.
@Suite("TLS handshake stalls", .timeLimit(.minutes(10)))
struct TLSHandshakeStallTests {
    /// Accepts and drains, never speaking TLS.
    static func silentServer() throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { connection, _ in connection.drainUntilClosed() }
    }

    static func storage(
        _ server: ScriptedHTTPServer, configure: (inout StorageConfiguration) throws -> Void = { _ in }
    )
        -> Storage
    {
        var configuration = StorageConfiguration()
        TestRoute.nativeHTTPS.apply(to: &configuration)
        configuration.applyForTest(configure)
        return Storage(
            bucket: "b", endpoint: .gcs(URL(string: "https://127.0.0.1:\(server.port)")!),
            configuration: configuration)
    }

    @Test func aSilentHandshakeTimesOut() async throws {
        let server = try Self.silentServer()
        defer { server.stop() }
        let storage = Self.storage(server) {
            try $0.timeouts.setRequest(.seconds(1))
            try $0.retry.setMaxOperationTime(.zero)
        }
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "o").getMetadata()
        }
        #expect(error?.code == .retryLimitExceeded)
        let transportError = (error?.underlyingError as? StorageError)?.underlyingError as? HTTPTransportError
        #expect(transportError?.kind == .timedOut, "\(String(describing: error))")
        // Which step the deadline ends depends on when the (possibly starved) client gets there:
        // the handshake, or connecting itself. Either way one deadline ended the whole setup.
        let description = transportError?.description ?? ""
        #expect(description.contains("handshake") || description.contains("Connecting"), "\(description)")
    }

    /// A server that sends its handshake a byte at a time (the start of a 16 KiB record, then a
    /// byte every 10 ms) keeps every read of the handshake short of the time-out: connecting
    /// and the handshake must end at their deadline instead, while the bytes still come.
    @Test func aHandshakeDrippedByteByByteTimesOut() async throws {
        let peer = DrippingPeer()
        let server = try ScriptedHTTPServer { connection, _ in
            peer.run(on: connection, prefix: DrippingPeer.handshakeRecordStart, belowTLS: true)
        }
        defer { server.stop() }
        let storage = Self.storage(server) {
            try $0.timeouts.setRequest(.seconds(1))
            try $0.retry.setMaxOperationTime(.zero)
        }
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "o").getMetadata()
        }
        #expect(error?.code == .retryLimitExceeded)
        let transportError = (error?.underlyingError as? StorageError)?.underlyingError as? HTTPTransportError
        #expect(transportError?.kind == .timedOut, "\(String(describing: error))")
        // Which step the deadline ends depends on when the (possibly starved) client gets there:
        // the handshake, or connecting itself. Either way one deadline ended the whole setup.
        let description = transportError?.description ?? ""
        #expect(description.contains("handshake") || description.contains("Connecting"), "\(description)")
        if server.acceptedConnections == 1 {
            #expect(try await peer.ended() == .clientGone, "the client gave up while bytes still came")
        }
    }

    @Test func cancellingDuringTheHandshakeEndsTheOperation() async throws {
        let server = try Self.silentServer()
        defer { server.stop() }
        // The default 60 s time-out: only the cancel can end the request in time for the suite's limit.
        let storage = Self.storage(server)
        let operation = Task { try await storage.reference(withPath: "o").getMetadata() }
        // A hang guard: the bound only matters once the test failed.
        let deadline = ContinuousClock.now + .seconds(60)
        while server.acceptedConnections == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        operation.cancel()
        let error = await #expect(throws: StorageError.self) { try await operation.value }
        #expect(error?.code == .cancelled)
    }

    @Test func cancellingAnUploadDuringTheHandshakeEndsIt() async throws {
        let server = try Self.silentServer()
        defer { server.stop() }
        let storage = Self.storage(server)
        let task = storage.reference(withPath: "o").putData(Data(count: 1000))
        let deadline = ContinuousClock.now + .seconds(60)
        while server.acceptedConnections == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        await task.cancel()
        let error = await #expect(throws: StorageError.self) { try await task.value }
        #expect(error?.code == .cancelled)
        #expect(task.snapshot.status == .failure)
    }
}
