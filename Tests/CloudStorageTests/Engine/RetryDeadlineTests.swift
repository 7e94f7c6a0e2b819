import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// The upload's retry time is a deadline that only a new high of the committed
/// offset moves: ground regained after the server lost a session does not.
///
/// Every wait is 60–90 ms (both delays 60 ms, up to 50% jitter) and the retry time
/// 100 ms, so exactly one retry fits since the last reset, however loaded the
/// machine: a second failure comes at least 60 ms after the first, and its wait
/// of at least 60 ms would end past 100 ms. Nothing here races a clock.
@Suite("Upload retry deadline", .timeLimit(.minutes(10)))
struct RetryDeadlineTests {
    static func storage(_ transport: ScriptedGCSTransport) -> Storage {
        UploadEngineProtocolTests.storage(transport) { configuration in
            try configuration.uploads.setChunkSize(StorageConfiguration.Uploads.chunkGranularity)
            try configuration.retry.setInitialDelay(.milliseconds(60))
            try configuration.retry.setMaxDelay(.milliseconds(60))
            try configuration.retry.setMaxUploadTime(.milliseconds(100))
        }
    }

    static func isSecondChunk(_ request: HTTPRequest) -> Bool {
        UploadEngineProtocolTests.isPut(request) && request.headers["Content-Range"]?.hasPrefix("bytes 262144-") == true
    }

    @Test func regainingLostGroundDoesNotRestartTheDeadline() async throws {
        let transport = ScriptedGCSTransport()
        // The first chunk is committed; the second fails; the session is then gone, and in a
        // new one the first chunk is committed again (no new high) before the second fails again.
        transport.inject(.status(503), when: Self.isSecondChunk)
        transport.inject(.status(404), when: UploadEngineProtocolTests.isQuery)
        transport.inject(.status(503), when: Self.isSecondChunk)
        let error = await #expect(throws: StorageError.self) {
            try await Self.storage(transport).reference(withPath: "o").putDataAsync(
                TestSupport.payload(size: UploadEngineProtocolTests.size, seed: 21))
        }
        #expect(error?.code == .retryLimitExceeded)
        #expect(transport.sessionsStarted == 2)
        #expect(transport.finalized == nil)
    }

    @Test func aNewHighRestartsTheDeadline() async throws {
        let transport = ScriptedGCSTransport()
        // Each chunk fails once before it is committed: every failure follows a new high.
        for chunk in 1...3 {
            let prefix = "bytes \(chunk * 262_144)-"
            transport.inject(.status(503)) { request in
                UploadEngineProtocolTests.isPut(request) && request.headers["Content-Range"]?.hasPrefix(prefix) == true
            }
        }
        let payload = TestSupport.payload(size: UploadEngineProtocolTests.size, seed: 22)
        _ = try await Self.storage(transport).reference(withPath: "o").putDataAsync(payload)
        #expect(transport.finalized == payload)
    }
}
