import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// A finished task that nobody holds is freed, and with it the bytes it uploaded.
@Suite("Upload task lifetime", .timeLimit(.minutes(10)))
struct UploadTaskLifetimeTests {
    /// Waits until `isFreed` holds (the worker lets go of the task just after
    /// publishing the end): a loaded two-core run can delay any task for longer
    /// than any guess, and a leak never frees at all, so the suite's time limit
    /// is the only bound (its cancellation ends the sleep, and the test).
    static func waitUntilFreed(_ isFreed: () -> Bool) async throws {
        while !isFreed() {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test(arguments: [false, true])
    func aFinishedTaskIsFreed(observed: Bool) async throws {
        let transport = ScriptedGCSTransport()
        let storage = UploadEngineProtocolTests.storage(transport)
        weak var weakTask: StorageUploadTask?
        do {
            let task = storage.reference(withPath: "lifetime").putData(TestSupport.payload(size: 700_000, seed: 1))
            weakTask = task
            if observed {
                let seen = await TestSupport.collect(task.snapshots)
                #expect(seen.last?.status == .success)
            }
            _ = try await task.value
            #expect(task.snapshot.status == .success)
        }
        // A finished task must not be kept alive by its own snapshots.
        try await Self.waitUntilFreed { weakTask == nil }
    }

    @Test func aCancelledTaskIsFreed() async throws {
        let transport = ScriptedGCSTransport(latencyMicroseconds: 100...300)
        let storage = UploadEngineProtocolTests.storage(transport) { try $0.uploads.setChunkSize(256 * 1024) }
        weak var weakTask: StorageUploadTask?
        do {
            let task = storage.reference(withPath: "lifetime").putData(TestSupport.payload(size: 2_000_000, seed: 2))
            weakTask = task
            await task.cancel()
            _ = await task.result()
        }
        try await Self.waitUntilFreed { weakTask == nil }
    }

    @Test func theDataOfAFinishedTaskIsReleasedEvenWhileTheTaskIsHeld() async throws {
        let transport = ScriptedGCSTransport()
        let storage = UploadEngineProtocolTests.storage(transport)
        final class Box: @unchecked Sendable {}  // SAFETY: no state; only its lifetime is observed.
        weak var weakOwner: Box?
        let task: StorageUploadTask
        do {
            // Bytes whose release can be watched: the deallocator holds `owner`.
            let owner = Box()
            weakOwner = owner
            let count = 300_000
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 8)
            bytes.initializeMemory(as: UInt8.self, repeating: 7, count: count)
            let payload = Data(
                bytesNoCopy: bytes,
                count: count,
                deallocator: .custom { pointer, _ in
                    withExtendedLifetime(owner) { pointer.deallocate() }
                }
            )
            task = storage.reference(withPath: "lifetime").putData(payload)
        }
        _ = try await task.value
        // The engine lets go of the bytes when the task ends.
        try await Self.waitUntilFreed { weakOwner == nil }
        #expect(task.snapshot.status == .success)
    }
}
