import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// A file upload whose retries ran out leaves its session open for ``Storage/resumeUpload(_:from:)``
/// (an outage outlasted `retry.maxUploadTime`); every other end still deletes it.
///
/// Deterministic: the emulator passes the session start and two 256 KiB chunks, then answers the
/// third with a fault; a retry time of zero allows no retry at all, so the first fault ends the
/// upload whatever the clock says.
@Suite("A session left open when retries run out", .timeLimit(.minutes(10)))
struct KeptSessionTests {
    static let chunk = 256 * 1024
    static let size = 4 * chunk + 5
    static let committed = Int64(2 * chunk)

    /// The session start and two chunks pass; the third request gets `fault`.
    static func plan(_ fault: String) -> [String] {
        ["pass", "pass", "pass", fault]
    }

    static func storage(_ route: Reliability.Route, _ emulator: StorageEmulator) -> Storage {
        Reliability.storage(route, emulator) {
            $0.uploads.multipartThreshold = -1
            try $0.uploads.setChunkSize(Int64(chunk))
            try $0.retry.setMaxUploadTime(.zero)
        }
    }

    @Test(arguments: Reliability.Wire.allCases, [503, 429])
    func aFileUploadWhoseRetriesRanOutKeepsItsSessionForResumeUpload(wire: Reliability.Wire, status: Int) async throws {
        let route = Reliability.Route(wire: wire, via: .nativeHTTP)
        try await Reliability.withEmulator(for: route.via, faults: Self.plan("return-\(status)")) { emulator in
            let payload = TestSupport.payload(size: Self.size, seed: 93)
            let file = try TestSupport.file(containing: payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let task = Self.storage(route, emulator).reference(withPath: "kept/big.bin").putFile(from: file)
            let error = try #require(await task.result().storageError)
            #expect(error.code == (status == 429 ? .quotaExceeded : .retryLimitExceeded))
            #expect(error.message.contains("left open"), "\(error)")
            #expect(Reliability.liveSessions(emulator) == 1, "the session was not deleted")
            // Readable after the end, so a caller who learns only now that it should save it can.
            let session = try #require(task.resumableSession)
            #expect(await task.waitForResumableSession() == session)
            #expect(session.source.size == Int64(Self.size))

            let before = emulator.bytesReceived
            let fresh = Reliability.storage(route, emulator)
            let metadata = try await fresh.resumeUpload(session, from: file).value
            let sent = emulator.bytesReceived - before
            #expect(sent == Int64(Self.size) - Self.committed, "sent \(sent) bytes after resuming")
            try Reliability.expectStored(payload, as: "kept/big.bin", in: emulator, returned: metadata)
        }
    }

    @Test func aCancelStillDeletesTheSession() async throws {
        let route = Reliability.Route(wire: .gcs, via: .nativeHTTP)
        // The third request is held until the client lets go, so the cancel comes mid-upload.
        try await Reliability.withEmulator(for: route.via, faults: Self.plan("stall-after-100K")) { emulator in
            let file = try TestSupport.file(containing: TestSupport.payload(size: Self.size, seed: 94))
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let task = Self.storage(route, emulator).reference(withPath: "cancelled.bin").putFile(from: file)
            try await ResumableSessionTests.waitUntilHeld(emulator, at: Self.committed + 100 * 1024)
            #expect(task.resumableSession != nil)
            await task.cancel()
            #expect(await task.result().failureCode == .cancelled)
            #expect(Reliability.liveSessions(emulator) == 0, "the cancel deleted the session")
            #expect(task.resumableSession == nil)
        }
    }

    /// Refused credentials are final: retrying later would be refused as well.
    @Test func aDefinitiveFailureStillDeletesTheSession() async throws {
        let route = Reliability.Route(wire: .gcs, via: .nativeHTTP)
        try await Reliability.withEmulator(for: route.via, faults: Self.plan("return-403")) { emulator in
            let file = try TestSupport.file(containing: TestSupport.payload(size: Self.size, seed: 95))
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let task = Self.storage(route, emulator).reference(withPath: "refused.bin").putFile(from: file)
            let error = try #require(await task.result().storageError)
            #expect(error.code == .unauthorized)
            #expect(!error.message.contains("left open"))
            #expect(Reliability.liveSessions(emulator) == 0, "a definitive failure deletes the session")
            #expect(task.resumableSession == nil)
        }
    }

    /// A stream cannot be read again by another process: its session goes, as a `Data` upload's does.
    @Test func aStreamWhoseRetriesRanOutStillDeletesItsSession() async throws {
        let route = Reliability.Route(wire: .gcs, via: .nativeHTTP)
        try await Reliability.withEmulator(for: route.via, faults: Self.plan("return-503")) { emulator in
            let payload = TestSupport.payload(size: Self.size, seed: 96)
            let task = Self.storage(route, emulator).reference(withPath: "streamed.bin")
                .putStream(StreamUploadTests.elements(payload, of: 10_000), size: Int64(payload.count))
            let error = try #require(await task.result().storageError)
            #expect(error.code == .retryLimitExceeded)
            #expect(Reliability.liveSessions(emulator) == 0, "the stream's session was deleted")
            #expect(task.resumableSession == nil)
        }
    }
}

extension Result where Failure == StorageError {
    /// The error, or nil for a success.
    fileprivate var storageError: StorageError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
