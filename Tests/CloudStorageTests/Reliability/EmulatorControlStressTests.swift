import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// Seeded random interleavings of pause, resume and cancel — and cancelling the
/// Swift task of `putDataAsync` — against uploads in flight over real sockets,
/// on both protocols and each transport. Most runs slow every request with a
/// 20 ms stall after 64 KiB so that controls land inside requests as well as
/// between them.
@Suite("Reliability: control stress against the emulator", .timeLimit(.minutes(10)))
struct EmulatorControlStressTests {
    static let size = 3 * 1024 * 1024 + 5
    static let slowEveryRequest = Array(repeating: "stall-20ms-after-64K", count: 5000)

    @Test(arguments: Reliability.Route.all, 0..<24)
    func randomControlsEndExactlyOnceWithTheRightBytes(route: Reliability.Route, seed: Int) async throws {
        var generator = SeededGenerator(seed: UInt64(seed) &* 7919 &+ (route.wire == .gcs ? 0 : 104_729))
        let slow = seed % 3 != 0
        // One run in four takes the single-request path: pausing aborts it, resuming sends it again.
        let singleRequest = seed % 4 == 3
        try await Reliability.throttled {
            try await Reliability.withEmulator(for: route.via, faults: slow ? Self.slowEveryRequest : []) { emulator in
                let storage = Reliability.storage(route, emulator) {
                    try $0.uploads.setChunkSize(256 * 1024)
                    $0.uploads.multipartThreshold = singleRequest ? 8 * 1024 * 1024 : -1
                }
                let payload = TestSupport.payload(size: Self.size, seed: UInt64(seed) &+ 40)
                let source: Reliability.Source = seed.isMultiple(of: 2) ? .data : .file
                let name = "stress/\(seed).bin"
                let (task, cleanUp) = try Reliability.start(
                    payload, from: source, to: storage.reference(withPath: name))
                defer { cleanUp() }
                // Subscribed synchronously, before any control: no status change can be missed.
                let observers = (0..<3).map { _ in task.snapshots }.map { stream in
                    Task { await TestSupport.collect(stream) }
                }
                try await TestSupport.applyRandomControls(
                    to: task, maxCount: 10, maxWait: .milliseconds(40), using: &generator)

                let result = await task.result()
                for observer in observers {
                    let seen = await observer.value  // returns only once the stream finished
                    Reliability.expectOneTerminal(seen, matching: result)
                    // The latest snapshot first: the start, or the worker's first progress if it
                    // already ran (it runs on another thread from the moment putData returns).
                    #expect(seen.first?.status == .resume || seen.first?.status == .progress)
                }
                let statuses = await TestSupport.collect(task.snapshots).map(\.status)
                #expect(statuses.count == 1 && statuses[0].isTerminal, "a late stream gets just the end")
                #expect(task.subscriberCount == 0, "every stream was finished and released")
                try Self.expectOutcome(
                    result, payload: payload, name: name, in: emulator, singleRequest: singleRequest)
            }
        }
    }

    @Test(arguments: Reliability.Route.all, 0..<12)
    func cancellingTheSwiftTaskOfPutDataAsyncCancelsTheUpload(route: Reliability.Route, seed: Int) async throws {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 3000 &+ (route.wire == .gcs ? 0 : 50))
        try await Reliability.throttled {
            try await Reliability.withEmulator(for: route.via, faults: Self.slowEveryRequest) { emulator in
                let storage = Reliability.storage(route, emulator) {
                    try $0.uploads.setChunkSize(256 * 1024)
                    $0.uploads.multipartThreshold = -1
                }
                let payload = TestSupport.payload(size: Self.size, seed: UInt64(seed) &+ 90)
                let name = "async/\(seed).bin"
                let reference = storage.reference(withPath: name)
                let upload = Task { try await reference.putDataAsync(payload) }
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...120, using: &generator)))
                upload.cancel()
                let result: Result<StorageMetadata, StorageError> = await upload.result.mapError {
                    $0 as? StorageError ?? StorageError(.unknown, "not a StorageError: \($0)")
                }
                try Self.expectOutcome(result, payload: payload, name: name, in: emulator)
            }
        }
    }

    /// Success stores exactly the payload; failure is only ever `.cancelled`, stores
    /// nothing and leaves no session behind on the server.
    ///
    /// Except that a cancelled upload sent in one request (`singleRequest`) may
    /// be stored after all, whole: it has no session to delete. Once the
    /// transport reports its last byte sent, a cancel waits for the answer (and
    /// the task succeeds), but a cancel that races those last bytes aborts a
    /// connection whose bytes the server may still read to the end and store
    /// after the task ended in `.cancelled`, whichever transport sent them.
    static func expectOutcome(
        _ result: Result<StorageMetadata, StorageError>, payload: Data, name: String, in emulator: StorageEmulator,
        singleRequest: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        switch result {
        case .success(let metadata):
            try Reliability.expectStored(
                payload, as: name, in: emulator, returned: metadata, sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(
                error.code == .cancelled, "only cancellation can fail these uploads: \(error)",
                sourceLocation: sourceLocation)
            if singleRequest, Reliability.record(name, in: emulator) != nil {
                // The one request reached the server whole despite the cancel: never a part of it.
                try Reliability.expectStored(
                    payload, as: name, in: emulator, returned: nil, sourceLocation: sourceLocation)
            } else {
                #expect(
                    Reliability.record(name, in: emulator) == nil, "cancelled, yet the object was stored",
                    sourceLocation: sourceLocation)
            }
            #expect(
                Reliability.liveSessions(emulator) == 0, "a cancelled upload deletes its session",
                sourceLocation: sourceLocation)
        }
    }
}
