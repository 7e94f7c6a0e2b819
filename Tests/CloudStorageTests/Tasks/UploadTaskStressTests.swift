import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Random interleavings of pause, resume, cancel and Swift task cancellation
/// against uploads in flight, with request latency so that every control
/// lands at every point of an exchange.
@Suite("Upload task stress", .timeLimit(.minutes(10)))
struct UploadTaskStressTests {
    static let size = 1024 * 1024 + 123

    @Test(arguments: 0..<120)
    func randomControlsEndExactlyOnceWithTheRightBytes(seed: Int) async throws {
        var generator = SeededGenerator(seed: UInt64(seed) &* 7919)
        let transport = ScriptedGCSTransport(latencyMicroseconds: 0...400)
        let storage = UploadEngineProtocolTests.storage(transport) { try $0.uploads.setChunkSize(256 * 1024) }
        let payload = TestSupport.payload(size: Self.size, seed: UInt64(seed))
        let useSwiftCancellation = seed % 5 == 0

        let task = storage.reference(withPath: "stress/\(seed)").putData(payload)
        // Subscribed here, synchronously, before any control.
        let observers = (0..<3).map { _ in task.snapshots }.map { stream in Task { await TestSupport.collect(stream) } }
        let awaiting = Task { try await task.value }
        let asyncUpload: Task<StorageMetadata, any Error>? =
            useSwiftCancellation
            ? Task { try await storage.reference(withPath: "stress/\(seed)-async").putDataAsync(payload) }
            : nil

        try await TestSupport.applyRandomControls(to: task, maxCount: 12, maxWait: .milliseconds(2), using: &generator)
        asyncUpload?.cancel()

        let outcome = await awaiting.result
        switch outcome {
        case .success(let metadata):
            #expect(metadata.size == Int64(Self.size))
        case .failure(let error):
            #expect((error as? StorageError)?.code == .cancelled, "only cancellation can fail these uploads: \(error)")
        }
        for observer in observers {
            let seen = await observer.value
            #expect(seen.filter { $0.status.isTerminal }.count == 1)
            #expect(seen.last?.status.isTerminal == true)
            // The latest snapshot comes first: `.resume`, or already `.progress` if the
            // worker (on another thread) got going before the subscription.
            #expect(seen.first?.status == .resume || seen.first?.status == .progress)
        }
        // After the end, a new stream holds just the terminal snapshot.
        let statuses = await TestSupport.collect(task.snapshots).map(\.status)
        #expect(statuses.count == 1 && statuses[0].isTerminal)
        #expect(task.subscriberCount == 0, "every stream was finished and released")

        if let asyncUpload {
            let result = await asyncUpload.result
            if case .failure(let error) = result {
                #expect((error as? StorageError)?.code == .cancelled)
            }
        }
    }

    @Test(arguments: 0..<40)
    func cancelAlwaysDiscardsTheSessionUnlessTheObjectWasStored(seed: Int) async throws {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 100)
        let transport = ScriptedGCSTransport(latencyMicroseconds: 0...300)
        let storage = UploadEngineProtocolTests.storage(transport) { try $0.uploads.setChunkSize(256 * 1024) }
        let payload = TestSupport.payload(size: Self.size, seed: UInt64(seed))
        let task = storage.reference(withPath: "cancel/\(seed)").putData(payload)
        try await Task.sleep(for: .microseconds(Int.random(in: 0...4000, using: &generator)))
        if Bool.random(using: &generator) { await task.pause() }
        await task.cancel()
        switch await task.result() {
        case .success:
            #expect(transport.finalized == payload)
        case .failure(let error):
            #expect(error.code == .cancelled)
            #expect(transport.finalized == nil)
            if transport.sessionsStarted > 0 {
                #expect(transport.lastSessionDeleted, "a cancelled upload deletes its session")
            }
        }
    }

    @Test(arguments: 0..<40)
    func pausesAndResumesNeverCorruptTheObject(seed: Int) async throws {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 500)
        let transport = ScriptedGCSTransport(latencyMicroseconds: 0...300)
        let storage = UploadEngineProtocolTests.storage(transport) { try $0.uploads.setChunkSize(256 * 1024) }
        let payload = TestSupport.payload(size: Self.size, seed: UInt64(seed) + 1)
        let task = storage.reference(withPath: "pause/\(seed)").putData(payload)
        for _ in 0..<Int.random(in: 1...8, using: &generator) {
            try await Task.sleep(for: .microseconds(Int.random(in: 0...1500, using: &generator)))
            await task.pause()
            try await Task.sleep(for: .microseconds(Int.random(in: 0...500, using: &generator)))
            await task.resume()
        }
        let metadata = try await task.value
        #expect(metadata.size == Int64(Self.size))
        #expect(transport.finalized == payload)
    }
}
