import Foundation
import Testing

@testable import StorageEmulator

/// A shaped connection waits on its own thread, and stopping the server cuts the wait short
/// instead of waiting it out.
@Suite("Server: stopping while a connection waits for the network model", .timeLimit(.minutes(5)))
struct ShapedShutdownTests {
    @Test func stopDoesNotWaitOutALatency() async throws {
        let latency = Duration.seconds(60)
        let server = EmulatorHTTPServer(
            application: EchoApplication(), shape: StorageEmulator.NetworkShape(latency: latency))
        let port = try server.start()
        let stopped = try await onThread { () throws -> Duration in
            let client = try RawClient(port: port, receiveTimeout: .seconds(120))
            try client.send("GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
            // The connection computed its wait (two round trips: TCP's handshake, then the
            // request's) and is in it, or about to be.
            try waitUntil { server.shapingCounters.totals.latency == latency * 2 }
            let start = ContinuousClock.now
            server.stop()
            let took = start.duration(to: .now)
            #expect(((try? client.readToEOF()) ?? []).isEmpty, "nothing is answered once the server stopped")
            return took
        }
        #expect(server.liveThreadCount == 0)
        // Seconds of margin either way: a stop that waited the latency out takes two minutes.
        #expect(stopped < latency)
    }
}
