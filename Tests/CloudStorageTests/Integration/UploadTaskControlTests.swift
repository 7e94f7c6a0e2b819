import FakeGCSServer
import Foundation
import HTTPTestServers
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// Pause, resume and cancel, on each route (``TestRoute``).
///
/// Controls meant to land mid-transfer run against the emulator, which holds
/// the upload's third request (`stall-after-100K`) until the client closes it:
/// the upload cannot finish before the control arrives, however slow the
/// machine, and the test sends the control once the emulator has counted the
/// bytes (an event, not a sleep). The other cases run against fake-gcs-server.
@Suite("Upload task control", .timeLimit(.minutes(10)))
struct UploadTaskControlTests {
    /// The emulator's plan: the session start and the first chunk pass; the second chunk is held.
    static let heldPlan = ["pass", "pass", "stall-after-100K"]
    static let chunk = 512 * 1024
    /// Body bytes the emulator has read once it holds the second chunk (the start's JSON body adds a few).
    static let heldAt = Int64(chunk + 100 * 1024)

    /// Runs `body` with an emulator that holds the upload's second chunk, and a `Storage` for it
    /// that always uses a resumable session in 512 KiB chunks.
    static func withHeldUpload(
        route: TestRoute, _ body: (Storage, StorageEmulator) async throws -> Void
    ) async throws {
        try await Reliability.withEmulator(for: route, faults: heldPlan) { emulator in
            let storage = Reliability.storage(Reliability.Route(wire: .gcs, via: route), emulator) {
                try $0.uploads.setChunkSize(Int64(chunk))
                $0.uploads.multipartThreshold = -1
            }
            try await body(storage, emulator)
        }
    }

    /// Waits until the emulator holds the second chunk: no bound of its own (a starved whole-suite
    /// run exceeded two minutes), the suite's time limit ends the sleep if it never comes.
    static func waitUntilHeld(_ emulator: StorageEmulator) async throws {
        while emulator.bytesReceived < heldAt {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test(arguments: TestRoute.all)
    func pauseThenResumeMidTransferStoresEveryByte(route: TestRoute) async throws {
        try await Self.withHeldUpload(route: route) { storage, emulator in
            try await Self.pauseThenResume(storage, emulator)
        }
    }

    static func pauseThenResume(_ storage: Storage, _ emulator: StorageEmulator) async throws {
        let payload = TestSupport.payload(size: 4 * .mebibyte, seed: 11)
        let file = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let ref = storage.reference(withPath: "paused/big.bin")
        let task = ref.putFile(from: file)
        let observed = TestSupport.observe(task)

        try await waitUntilHeld(emulator)
        await task.pause()
        #expect(task.snapshot.status == .pause)
        // Only ever passes wrongly on a slow machine: a paused task publishes nothing at all.
        try await Task.sleep(for: .milliseconds(100))
        #expect(task.snapshot.status == .pause, "nothing is published while paused")
        await task.resume()
        let metadata = try await task.value
        #expect(metadata.size == Int64(payload.count))
        try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)

        let statuses = await observed.value.map(\.status).filter { $0 != .progress }
        // The first `.resume` is missed only if progress began before the subscription.
        #expect(statuses == [.resume, .pause, .resume, .success] || statuses == [.pause, .resume, .success])
    }

    @Test(arguments: TestRoute.all)
    func pauseAndResumeASmallUploadBeforeItStarts(route: TestRoute) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "pause", route: route)
        let payload = TestSupport.payload(size: 100 * .kibibyte, seed: 12)
        let ref = storage.reference(withPath: "paused/small.bin")
        let task = ref.putData(payload)
        await task.pause()
        await task.pause()  // a second pause changes nothing
        await task.resume()
        _ = try await task.value
        try await TestSupport.expectStored(payload, at: ref.fullPath, in: storage, server: server)
    }

    @Test(arguments: TestRoute.all)
    func cancelMidTransferEndsInCancelledAndStoresNothing(route: TestRoute) async throws {
        try await Self.withHeldUpload(route: route) { storage, emulator in
            try await Self.cancelMidTransfer(storage, emulator)
        }
    }

    static func cancelMidTransfer(_ storage: Storage, _ emulator: StorageEmulator) async throws {
        let payload = TestSupport.payload(size: 4 * .mebibyte, seed: 13)
        let ref = storage.reference(withPath: "cancelled/big.bin")
        let task = ref.putData(payload)
        let observed = TestSupport.observe(task)
        try await waitUntilHeld(emulator)
        await task.cancel()
        await #expect(throws: StorageError.self) { try await task.value }
        do {
            _ = try await task.value
        } catch {
            #expect(error.code == .cancelled)
        }
        let snapshots = await observed.value
        #expect(snapshots.last?.status == .failure)
        #expect(snapshots.last?.error?.code == .cancelled)
        #expect(snapshots.filter { $0.status.isTerminal }.count == 1)
        #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        #expect(Reliability.liveSessions(emulator) == 0, "the cancel deleted the session")
    }

    /// A pause or cancel that aborts the finalizing request after the server stored the object
    /// (`hold-response`: it took effect, its answer never comes) ends in success with that
    /// object: the engine asks the session before the stop ends the upload. Never `.cancelled`
    /// beside a stored object.
    @Test(
        arguments: Reliability.Route.all,
        [(false, Reliability.Source.data), (true, .data), (false, .file), (true, .file)])
    func aStopAfterTheServerFinalizedEndsInSuccess(
        route: Reliability.Route, stop: (pausing: Bool, source: Reliability.Source)
    ) async throws {
        let pausing = stop.pausing
        // The session start and the first 512 KiB pass; the last request (its CRC32C is
        // computed up front below 32 MiB, so it is the third) is stored, then held unanswered.
        try await Reliability.withEmulator(for: route.via, faults: ["pass", "pass", "hold-response"]) { emulator in
            let storage = Reliability.storage(route, emulator) {
                try $0.uploads.setChunkSize(Int64(Self.chunk))
                $0.uploads.multipartThreshold = -1
            }
            let payload = TestSupport.payload(size: 2 * Self.chunk, seed: 14)
            let ref = storage.reference(withPath: "finalized/\(pausing ? "paused" : "cancelled").bin")
            let (task, cleanUp) = try Reliability.start(payload, from: stop.source, to: ref)
            defer { cleanUp() }
            let observed = TestSupport.observe(task)
            // The suite's time limit ends the wait if the object never comes.
            while Reliability.record(ref.fullPath, in: emulator) == nil {
                try await Task.sleep(for: .milliseconds(5))
            }
            if pausing { await task.pause() } else { await task.cancel() }
            let metadata = try await task.value
            try Reliability.expectStored(payload, as: ref.fullPath, in: emulator, returned: metadata)
            let terminals = await observed.value.filter(\.status.isTerminal)
            #expect(terminals.map(\.status) == [.success])
        }
    }

    @Test(arguments: TestRoute.all)
    func cancelWhilePausedEndsInCancelled(route: TestRoute) async throws {
        try await Self.withHeldUpload(route: route) { storage, emulator in
            let ref = storage.reference(withPath: "cancelled/paused.bin")
            let task = ref.putData(TestSupport.payload(size: 4 * .mebibyte, seed: 14))
            try await Self.waitUntilHeld(emulator)
            await task.pause()
            await task.cancel()
            await task.resume()  // too late: changes nothing
            let error = await #expect(throws: StorageError.self) { try await task.value }
            #expect(error?.code == .cancelled)
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }

    @Test(arguments: TestRoute.all)
    func cancellingTheCallingTaskCancelsPutDataAsync(route: TestRoute) async throws {
        try await Self.withHeldUpload(route: route) { storage, emulator in
            let ref = storage.reference(withPath: "cancelled/async.bin")
            let payload = TestSupport.payload(size: 4 * .mebibyte, seed: 15)
            let upload = Task { try await ref.putDataAsync(payload) }
            try await Self.waitUntilHeld(emulator)
            upload.cancel()
            let error = await #expect(throws: StorageError.self) { try await upload.value }
            #expect(error?.code == .cancelled)
            #expect(Reliability.record(ref.fullPath, in: emulator) == nil)
        }
    }

    @Test(arguments: TestRoute.all)
    func controlsAfterTheEndChangeNothing(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "ended", route: route)
        let task = storage.reference(withPath: "ended/a").putData(Data("abc".utf8))
        let metadata = try await task.value
        await task.pause()
        await task.cancel()
        await task.resume()
        #expect(task.snapshot.status == .success)
        #expect(try await task.value == metadata)
        // A subscriber after the end gets the terminal snapshot, then the stream ends.
        let late = await TestSupport.collect(task.snapshots)
        #expect(late.map(\.status) == [.success])
        #expect(late.first?.metadata == metadata)
    }

    @Test(arguments: TestRoute.all)
    func manySubscribersSeeTheSameStatusesInOrder(route: TestRoute) async throws {
        let (storage, _) = try await TestSupport.fakeGCSStorage(label: "subs", route: route)
        let task = storage.reference(withPath: "subs/a").putData(TestSupport.payload(size: 12 * .mebibyte, seed: 16))
        let observers = (0..<20).map { _ in TestSupport.observe(task) }
        _ = try await task.value
        for observer in observers {
            let seen = await observer.value
            #expect(seen.last?.status == .success)
            #expect(seen.filter { $0.status.isTerminal }.count == 1)
            let completed = seen.map(\.progress.completedUnitCount)
            #expect(completed == completed.sorted())
        }
    }

    @Test(arguments: TestRoute.all)
    func aTaskNobodyHoldsStillFinishes(route: TestRoute) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "detached", route: route)
        let payload = TestSupport.payload(size: 9 * .mebibyte, seed: 17)
        storage.reference(withPath: "detached/a").putData(payload)
        // The bound only matters once the test failed (the object never appears).
        let deadline = ContinuousClock.now + .seconds(240)
        while await TestSupport.isAbsent("detached/a", in: storage, server: server), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await TestSupport.expectStored(payload, at: "detached/a", in: storage, server: server)
    }

    /// Set by a server thread, polled by a test.
    final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    /// A server that reads a whole one-request upload, says so, and answers only when released.
    static func answerOnRelease(
        _ payload: Data, received: Flag, release: DispatchSemaphore, scheme: TestRoute.Scheme
    ) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer(scheme: scheme) { connection, _ in
            guard connection.readRequest() != nil else { return }
            received.set()
            // Beyond the suite's time limit: only the test releases it.
            _ = release.wait(timeout: .now() + 600)
            let body = """
                {"name":"one","bucket":"b","generation":"1","size":"\(payload.count)",\
                "crc32c":"\(CRC32CEncoding.base64(CRC32C.checksum(payload)))"}
                """
            connection.write(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
        }
    }

    @Test(arguments: TestRoute.all, [false, true])
    func aOneRequestUploadStoppedAfterItsLastByteWaitsForTheAnswerAndSucceeds(
        route: TestRoute, cancelling: Bool
    ) async throws {
        let payload = TestSupport.payload(size: 64 * 1024, seed: 23)
        let received = Flag()
        let release = DispatchSemaphore(value: 0)
        let server = try Self.answerOnRelease(payload, received: received, release: release, scheme: route.scheme)
        defer {
            release.signal()
            server.stop()
        }
        var configuration = StorageConfiguration()
        route.apply(to: &configuration)
        try configuration.retry.setMaxUploadTime(.seconds(20))
        let storage = Storage(bucket: "b", endpoint: .gcs(server.baseURL), configuration: configuration)
        let task = storage.reference(withPath: "one").putData(payload)
        // The server has every byte: whatever the task is told now, the object may be stored.
        // And the client has seen its last byte go out (progress reports follow the transport's).
        // No deadline of its own: giving up early would pause the task before it saw its last byte
        // go out, another case than this one; the suite's time limit ends a wait that never ends.
        while !received.isSet || task.snapshot.progress.completedUnitCount < Int64(payload.count) {
            try await Task.sleep(for: .milliseconds(5))
        }
        if cancelling { await task.cancel() } else { await task.pause() }
        release.signal()
        // A paused task that wrongly aborted its request would wait for a resume forever: the
        // suite's time limit is the guard, not a guess a starved machine can exceed.
        while ![.success, .failure].contains(task.snapshot.status) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(task.snapshot.status == .success)
        await task.cancel()  // ends a task that is still paused; does nothing after success
        let metadata = try await task.value
        #expect(metadata.size == Int64(payload.count))
    }
}
