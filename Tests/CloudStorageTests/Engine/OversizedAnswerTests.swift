import Foundation
import HTTPTestServers
import Testing

@testable import CloudStorage

/// An answer announced larger than any answer held in memory may be (64 MiB) is refused as a
/// protocol violation, at once and for good: asking again would only be answered the same.
///
/// Only the first request gets the oversized answer; a second would be answered well (a
/// 404, a token), so an operation that retried would end differently. The server's counts
/// show there was no second request.
@Suite("Oversized answers are not retried", .timeLimit(.minutes(10)))
struct OversizedAnswerTests {
    @Test("a metadata answer announcing 10 GB", arguments: TestRoute.all)
    func oversizedMetadata(route: TestRoute) async throws {
        let server = try NumberedServer(scheme: route.scheme) { connection, _, index, _ in
            guard index > 0 else {
                connection.write(NumberedServer.tenGigabyteHead)
                // Not a byte of the body: the client must refuse the head alone.
                connection.drainUntilClosed()
                return .close
            }
            connection.write(
                "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
            return .keepReading
        }
        defer { server.stop() }
        // The default retry time (120 s): a retry would come 1 ms after the refusal.
        let storage = SlowPeerBudgetTests.storage(server, route: route) { _ in }
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "o").getMetadata()
        }
        #expect(error?.code == .protocolViolation, "\(String(describing: error))")
        #expect(error?.message.contains("larger than") == true)
        #expect(SlowPeerBudgetTests.transportFailure(error)?.kind == .responseTooLarge)
        #expect(server.requests(to: SlowPeerBudgetTests.objectPath) == 1)
    }

    @Test("a token endpoint answer announcing 10 GB", arguments: TestRoute.plain)
    func oversizedTokenAnswer(route: TestRoute) async throws {
        let server = try NumberedServer { connection, path, index, _ in
            switch (path, index) {
            case (SlowPeerBudgetTests.tokenPath, 0):
                connection.write(NumberedServer.tenGigabyteHead)
                connection.drainUntilClosed()
                return .close
            case (SlowPeerBudgetTests.tokenPath, _):
                let token = #"{"access_token":"ya29.second","expires_in":3599,"token_type":"Bearer"}"#
                connection.write(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(token.utf8.count)\r\n\r\n"
                        + token)
            default:
                connection.write(NumberedServer.empty(204))
            }
            return .keepReading
        }
        defer { server.stop() }
        let storage = SlowPeerBudgetTests.storage(
            server, route: route, authorization: try SlowPeerBudgetTests.serviceAccount(server)
        ) { _ in }
        let error = await #expect(throws: StorageError.self) { try await storage.reference(withPath: "o").delete() }
        #expect(error?.code == .protocolViolation, "\(String(describing: error))")
        #expect(SlowPeerBudgetTests.transportFailure(error)?.kind == .responseTooLarge)
        #expect(server.requests(to: SlowPeerBudgetTests.tokenPath) == 1)
        #expect(server.requests(to: SlowPeerBudgetTests.objectPath) == 0)
    }
}
