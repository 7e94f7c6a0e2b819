import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Committed offsets a server must never report: past `Int64.max`, below what it
/// reported before in the same session (a `308` without `Range` after a positive
/// offset included), or beyond the bytes sent. Each is a protocol violation that
/// ends the upload at once — never a trap, a retry loop or a false success.
@Suite("Committed offset violations", .timeLimit(.minutes(10)))
struct CommittedOffsetViolationTests {
    static let mebibyte = 1024 * 1024

    // MARK: GCS JSON API

    @Test func aRangeEndingAtInt64MaxIsAViolationNotATrap() async throws {
        let transport = ScriptedGCSTransport()
        transport.inject(.range("bytes=0-9223372036854775807"), when: UploadEngineProtocolTests.isPut)
        let error = await #expect(throws: StorageError.self) {
            try await UploadEngineProtocolTests.storage(transport).reference(withPath: "o").putDataAsync(
                TestSupport.payload(size: 10 * Self.mebibyte, seed: 1))
        }
        #expect(error?.code == .protocolViolation)
        #expect(transport.finalized == nil)
    }

    /// The server that kept an upload alive past its retry time: `bytes=0-524287`, then
    /// `bytes=0-262143`, then no `Range`, over and over.
    @Test(arguments: ["bytes=0-262143", nil] as [String?])
    func aCommittedOffsetThatGoesBackIsAViolation(second: String?) async throws {
        let transport = ScriptedGCSTransport()
        let storage = UploadEngineProtocolTests.storage(transport) { try $0.uploads.setChunkSize(512 * 1024) }
        // The first chunk is committed and answered as usual (bytes=0-524287); the second is
        // answered as if the server had lost committed bytes.
        transport.inject(.range(second)) { request in
            UploadEngineProtocolTests.isPut(request)
                && request.headers["Content-Range"]?.hasPrefix("bytes 524288-") == true
        }
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").putDataAsync(
                TestSupport.payload(size: UploadEngineProtocolTests.size, seed: 2))
        }
        #expect(error?.code == .protocolViolation)
        #expect(error?.message.contains("went back from 524288") == true)
        let puts = transport.exchanges.filter { $0.method == "PUT" }
        #expect(puts.count == 2, "not retried")
        #expect(transport.lastSessionDeleted)
    }

    @Test func a308ClaimingMoreThanWasSentIsAViolationNotASuccess() async throws {
        let transport = ScriptedGCSTransport()
        let size = 10 * Self.mebibyte
        let storage = UploadEngineProtocolTests.storage(transport) {
            try $0.uploads.setChunkSize(Int64(4 * Self.mebibyte))
        }
        transport.inject(.range("bytes=0-\(size - 1)"), when: UploadEngineProtocolTests.isPut)
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").putDataAsync(TestSupport.payload(size: size, seed: 3))
        }
        #expect(error?.code == .protocolViolation)
        #expect(error?.message.contains("only \(4 * Self.mebibyte) were sent") == true)
        #expect(transport.finalized == nil)
    }

    // MARK: Firebase Storage v0

    @Test func aSizeReceivedAtInt64MaxIsAViolation() async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.sizeReceived("9223372036854775807"), when: ScriptedFirebaseTransport.isUpload)
        let storage = FirebaseV0ProtocolTests.storage(transport) { try $0.uploads.setChunkSize(512 * 1024) }
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").putDataAsync(
                TestSupport.payload(size: FirebaseV0ProtocolTests.size, seed: 4))
        }
        #expect(error?.code == .protocolViolation)
        #expect(transport.finalized == nil)
    }

    @Test(arguments: ["262144", "0"])
    func aSizeReceivedThatGoesBackIsAViolation(second: String) async throws {
        let transport = ScriptedFirebaseTransport()
        transport.inject(.sizeReceived("524288"), when: ScriptedFirebaseTransport.isUpload)
        transport.inject(.sizeReceived(second), when: ScriptedFirebaseTransport.isUpload)
        let storage = FirebaseV0ProtocolTests.storage(transport) { try $0.uploads.setChunkSize(512 * 1024) }
        let error = await #expect(throws: StorageError.self) {
            try await storage.reference(withPath: "o").putDataAsync(
                TestSupport.payload(size: FirebaseV0ProtocolTests.size, seed: 5))
        }
        #expect(error?.code == .protocolViolation)
        #expect(transport.exchanges.filter { $0.command?.hasPrefix("upload") == true }.count == 2, "not retried")
        #expect(transport.finalized == nil)
    }
}
