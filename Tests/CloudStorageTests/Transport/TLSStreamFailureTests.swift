import Foundation
import HTTPTestServers
import NativeTLS
import Testing

@testable import CloudStorage

/// What becomes of a TLS stream that fails after the handshake, in the middle of an answer.
///
/// A stream that breaks TLS itself — bytes that are no TLS record, a record that fails
/// decryption, a record header longer than TLS allows — is a protocol violation, and not
/// retried: every record is authenticated, so the server (or the path) is broken. A stream
/// that merely ends early — in the middle of a record, or with a close_notify in the middle
/// of the body — is a cut connection, and retried.
///
/// Only the first request is answered so; a second would get `204`. So a failure that was
/// retried ends in success, one that was not ends in an error, and the server's counts show
/// which happened.
@Suite("TLS streams that fail after the handshake", .timeLimit(.minutes(10)), .enabled(if: TLSLibrary.isAvailable))
struct TLSStreamFailureTests {
    enum Breakage: String, CaseIterable, Sendable {
        /// Clear text where a record should start.
        case garbage
        /// A well-formed application data record whose contents are random: decryption fails.
        case badRecordMAC
        /// A record header announcing 65535 bytes, more than TLS allows.
        case oversizedRecordHeader
        /// The start of a record, then the end of the connection (FIN, no close_notify).
        case truncatedRecord
        /// Half the announced body, then close_notify.
        case closeNotifyMidBody

        /// Whether a retry may help.
        var isTransient: Bool { self == .truncatedRecord || self == .closeNotifyMidBody }

        /// Answers the first request so, on the script's thread.
        func misbehave(on connection: ScriptedConnection) -> NumberedServer.Next {
            let random = testBytes(count: 64, seed: 3)
            switch self {
            case .garbage:
                connection.writeBelowTLS(Array("this is no TLS record at all\r\n".utf8))
            case .badRecordMAC:
                connection.writeBelowTLS([0x17, 0x03, 0x03, 0x00, 0x40] + random)
            case .oversizedRecordHeader:
                connection.writeBelowTLS([0x17, 0x03, 0x03, 0xFF, 0xFF] + random)
            case .truncatedRecord:
                connection.writeBelowTLS([0x17, 0x03, 0x03, 0x01, 0x00] + random[0..<20])
                connection.finishSendingBelowTLS()
            case .closeNotifyMidBody:
                // Returning ends the connection with close_notify.
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                return .close
            }
            // The client must decide from the bytes alone, not from a close.
            connection.drainUntilClosed()
            return .close
        }
    }

    @Test(arguments: Breakage.allCases)
    func brokenStreamsFailAtOnceAndCutOnesAreRetried(failure: Breakage) async throws {
        let server = try NumberedServer(scheme: .https) { connection, _, index, _ in
            guard index > 0 else { return failure.misbehave(on: connection) }
            connection.write(NumberedServer.empty(204))
            return .keepReading
        }
        defer { server.stop() }
        // The default retry time (120 s), retries 1 ms apart.
        let storage = SlowPeerBudgetTests.storage(server, route: .nativeHTTPS) { _ in }
        var failed: StorageError?
        do throws(StorageError) {
            // A delete of one generation is idempotent: retried where the failure allows it.
            try await storage.reference(withPath: "o").delete(preconditions: StoragePreconditions(ifGenerationMatch: 1))
        } catch {
            failed = error
        }
        let requests = server.requests(to: SlowPeerBudgetTests.objectPath)
        if failure.isTransient {
            #expect(failed == nil, "\(String(describing: failed))")
            #expect(requests == 2, "retried once, on a new connection")
            #expect(server.acceptedConnections == 2)
        } else {
            let error = try #require(failed)
            #expect(error.code == .protocolViolation, "\(error)")
            #expect(error.message.contains("corrupt"), "\(error)")
            #expect(SlowPeerBudgetTests.transportFailure(error)?.kind == .corruptStream)
            #expect(requests == 1, "not retried")
            #expect(server.acceptedConnections == 1)
        }
    }
}
