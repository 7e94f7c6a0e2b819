import Foundation
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// `putStream`: round trips, faults at and around the buffer's boundaries, a server that loses
/// bytes already dropped, sequences that throw or disagree with their size, pause and cancel.
@Suite("Streamed uploads", .timeLimit(.minutes(10)))
struct StreamUploadTests {
    static let granule = Reliability.granule
    static let route = TestRoute.nativeHTTP

    /// A payload whose bytes differ at every offset a bug could confuse.
    static func payload(_ count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
    }

    /// `data` as a sequence of elements of `elementSize` bytes (the last may be shorter).
    static func elements(_ data: Data, of elementSize: Int) -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            var offset = 0
            while offset < data.count {
                let end = min(offset + elementSize, data.count)
                continuation.yield([UInt8](data[offset..<end]))
                offset = end
            }
            continuation.finish()
        }
    }

    static func storage(_ wire: Reliability.Wire, _ emulator: StorageEmulator, chunk: Int64? = nil) -> Storage {
        Reliability.storage(Reliability.Route(wire: wire, via: route), emulator) { configuration in
            try? configuration.uploads.setChunkSize(chunk)
        }
    }

    static let sizes = [0, 1, granule - 1, granule, granule + 1, 3 * 1024 * 1024 + 7]

    @Test("round trips: every byte and the CRC32C arrive", arguments: Reliability.Wire.allCases, sizes)
    func roundTrip(wire: Reliability.Wire, size: Int) async throws {
        let payload = Self.payload(size)
        for elementSize in [4093, 300_000] {
            for declared in [Int64(size), nil] {
                try await Reliability.withEmulator(for: Self.route) { emulator in
                    let storage = Self.storage(wire, emulator, chunk: 512 * 1024)
                    let name = "stream-\(size)-\(elementSize)-\(declared == nil ? "unknown" : "known")"
                    let task = storage.reference(withPath: name)
                        .putStream(Self.elements(payload, of: elementSize), size: declared)
                    let snapshots = task.snapshots
                    let observer = Task { await TestSupport.collect(snapshots) }
                    let metadata = try await task.result().get()
                    try Reliability.expectStored(payload, as: name, in: emulator, returned: metadata)
                    let seen = await observer.value
                    #expect(seen.last?.progress.totalUnitCount == Int64(size))
                    if declared == nil {
                        // The total is unknown (0) until the sequence ended.
                        #expect(seen.first?.progress.totalUnitCount == 0 || size == 0)
                    }
                }
            }
        }
    }

    /// The first chunk passes; the second request faults after N bytes, at and around the
    /// 256 KiB units the server commits in: the upload resumes from its buffer.
    @Test(
        "a fault in a later request resumes from the buffer",
        arguments: Reliability.Wire.allCases,
        [
            "reset-after-0", "reset-after-262143", "reset-after-262144", "reset-after-262145",
            "reset-after-524287", "return-503-after-262144", "drop-response",
        ])
    func faultResumesFromBuffer(wire: Reliability.Wire, fault: String) async throws {
        let payload = Self.payload(2 * 1024 * 1024 + 5)
        for declared in [Int64(payload.count), nil] {
            try await Reliability.withEmulator(for: Self.route, faults: ["pass", "pass", fault]) { emulator in
                let storage = Self.storage(wire, emulator, chunk: 512 * 1024)
                let task = storage.reference(withPath: "faulted")
                    .putStream(Self.elements(payload, of: 65_537), size: declared)
                let metadata = try await task.result().get()
                try Reliability.expectStored(payload, as: "faulted", in: emulator, returned: metadata)
            }
        }
    }

    /// Without a size, the last request may carry no bytes (`bytes */N`): the sequence ended
    /// exactly at a request's end, and a fault there must still finalize with the right total.
    @Test(
        "unknown size ending on a request boundary, with a fault on the last request",
        arguments: Reliability.Wire.allCases, ["pass", "reset-after-0", "drop-response"])
    func unknownSizeOnBoundary(wire: Reliability.Wire, fault: String) async throws {
        let payload = Self.payload(1024 * 1024)
        try await Reliability.withEmulator(for: Self.route, faults: ["pass", "pass", fault]) { emulator in
            let storage = Self.storage(wire, emulator, chunk: 512 * 1024)
            let task = storage.reference(withPath: "boundary")
                .putStream(Self.elements(payload, of: 512 * 1024), size: nil)
            let metadata = try await task.result().get()
            try Reliability.expectStored(payload, as: "boundary", in: emulator, returned: metadata)
        }
    }

    /// The server forgets the session after committing the first chunk: those bytes were
    /// dropped from the buffer, so the upload fails with dataLoss and stores nothing.
    @Test("a server that lost dropped bytes fails with dataLoss, no object")
    func lostSessionIsDataLoss() async throws {
        let payload = Self.payload(1024 * 1024)
        try await Reliability.withEmulator(for: Self.route, faults: ["pass", "pass", "return-410"]) { emulator in
            let storage = Self.storage(.gcs, emulator, chunk: 256 * 1024)
            let task = storage.reference(withPath: "lost")
                .putStream(Self.elements(payload, of: 10_000), size: Int64(payload.count))
            let error = await task.result().failure
            #expect(error?.code == .dataLoss)
            #expect(Reliability.record("lost", in: emulator) == nil)
            #expect(Reliability.liveSessions(emulator) == 0)
        }
    }

    struct Boom: Error {}

    @Test("the documented example stores a request body, with and without its length")
    func documentedExample() async throws {
        let payload = Self.payload(700_000)
        for length in [Int64(payload.count), nil] {
            try await Reliability.withEmulator(for: Self.route) { emulator in
                let storage = Self.storage(.gcs, emulator)
                // The example of `putStream(_:size:metadata:preconditions:)`, verbatim.
                func store(
                    _ body: some AsyncSequence<Data, any Error> & Sendable, length: Int64?, id: String
                ) async throws -> StorageMetadata {
                    let task = storage.reference(withPath: "uploads/\(id).bin").putStream(body, size: length)
                    return try await task.value
                }
                let body = AsyncThrowingStream<Data, any Error> { continuation in
                    continuation.yield(payload.prefix(300_000))
                    continuation.yield(payload.dropFirst(300_000))
                    continuation.finish()
                }
                let metadata = try await store(body, length: length, id: "42")
                try Reliability.expectStored(payload, as: "uploads/42.bin", in: emulator, returned: metadata)
            }
        }
    }

    @Test("a sequence that throws fails the upload, no object, no session", arguments: Reliability.Wire.allCases)
    func throwingSequence(wire: Reliability.Wire) async throws {
        let chunk = [UInt8](repeating: 7, count: 100_000)
        let bytes = AsyncThrowingStream<[UInt8], any Error> { continuation in
            for _ in 0..<6 { continuation.yield(chunk) }
            continuation.finish(throwing: Boom())
        }
        try await Reliability.withEmulator(for: Self.route) { emulator in
            let storage = Self.storage(wire, emulator, chunk: 256 * 1024)
            let error = await storage.reference(withPath: "thrown").putStream(bytes, size: 1_000_000).result().failure
            #expect(error?.code == .unreadableFile)
            #expect(error?.message.contains("Boom") == true)
            #expect(Reliability.record("thrown", in: emulator) == nil)
            #expect(Reliability.liveSessions(emulator) == 0)
        }
    }

    @Test("a sequence longer or shorter than its size fails, no object", arguments: [-1, 1, -300_000, 300_000])
    func sizeMismatch(difference: Int) async throws {
        let declared = 600_000
        let payload = Self.payload(declared + difference)
        try await Reliability.withEmulator(for: Self.route) { emulator in
            let storage = Self.storage(.gcs, emulator, chunk: 256 * 1024)
            let error = await storage.reference(withPath: "mismatch")
                .putStream(Self.elements(payload, of: 50_000), size: Int64(declared)).result().failure
            #expect(error?.code == .invalidArgument)
            #expect(Reliability.record("mismatch", in: emulator) == nil)
            #expect(Reliability.liveSessions(emulator) == 0)
        }
    }

    @Test("a negative size fails at once")
    func negativeSize() async throws {
        try await Reliability.withEmulator(for: Self.route) { emulator in
            let storage = Self.storage(.gcs, emulator)
            let error = await storage.reference(withPath: "negative")
                .putStream(Self.elements(Data(), of: 1), size: -1).result().failure
            #expect(error?.code == .invalidArgument)
        }
    }

    /// Waits for a snapshot that satisfies `condition` (or the end of the stream).
    static func waitFor(_ task: StorageUploadTask, _ condition: (TaskSnapshot) -> Bool) async {
        for await snapshot in task.snapshots where condition(snapshot) || snapshot.status.isTerminal { return }
    }

    @Test("pause waits for bytes without losing the sequence; resume finishes", arguments: Reliability.Wire.allCases)
    func pauseAndResume(wire: Reliability.Wire) async throws {
        let payload = Self.payload(1024 * 1024 + 3)
        let (bytes, feed) = AsyncStream<Data>.makeStream()
        feed.yield(payload[0..<(512 * 1024)])
        try await Reliability.withEmulator(for: Self.route) { emulator in
            let storage = Self.storage(wire, emulator, chunk: 256 * 1024)
            let task = storage.reference(withPath: "paused").putStream(bytes, size: Int64(payload.count))
            await Self.waitFor(task) { $0.progress.completedUnitCount >= 256 * 1024 }
            await task.pause()
            await Self.waitFor(task) { $0.status == .pause }
            feed.yield(payload[(512 * 1024)...])
            feed.finish()
            await task.resume()
            let metadata = try await task.result().get()
            try Reliability.expectStored(payload, as: "paused", in: emulator, returned: metadata)
        }
    }

    @Test("cancel ends the sequence's iteration, discards the session, stores nothing")
    func cancelEndsIteration() async throws {
        let (ended, endedFeed) = AsyncStream<Void>.makeStream()
        let (base, feed) = AsyncStream<Data>.makeStream()
        feed.yield(Self.payload(512 * 1024))
        let bytes = Watched(base: base, token: Token { endedFeed.finish() })
        try await Reliability.withEmulator(for: Self.route) { emulator in
            let storage = Self.storage(.gcs, emulator, chunk: 256 * 1024)
            let task = storage.reference(withPath: "cancelled").putStream(bytes, size: 4 * 1024 * 1024)
            await Self.waitFor(task) { $0.progress.completedUnitCount >= 256 * 1024 }
            await task.cancel()
            #expect(await task.result().failure?.code == .cancelled)
            for await _ in ended {}  // returns only once the iterator is gone: the iteration ended
            #expect(Reliability.record("cancelled", in: emulator) == nil)
            #expect(Reliability.liveSessions(emulator) == 0)
        }
        feed.finish()
    }

    @Test("putStreamAsync returns the metadata; cancelling the caller cancels the upload, stores nothing")
    func asyncVariantFollowsTheCaller() async throws {
        let payload = Self.payload(700_000)
        try await Reliability.withEmulator(for: Self.route) { emulator in
            let storage = Self.storage(.gcs, emulator, chunk: 256 * 1024)
            let stored = try await storage.reference(withPath: "async").putStreamAsync(
                Self.elements(payload, of: 65_536))
            try Reliability.expectStored(payload, as: "async", in: emulator, returned: stored)
            let sessionsBefore = Reliability.liveSessions(emulator)  // the emulator keeps finalized ones

            // A body that yields half a megabyte, then nothing more until the caller goes away.
            let (ended, endedFeed) = AsyncStream<Void>.makeStream()
            let (base, feed) = AsyncStream<Data>.makeStream()
            feed.yield(Self.payload(512 * 1024))
            let bytes = Watched(base: base, token: Token { endedFeed.finish() })
            let (progressed, progressFeed) = AsyncStream<Void>.makeStream()
            let caller = Task {
                try await storage.reference(withPath: "abandoned").putStreamAsync(bytes, size: 4 * 1024 * 1024) {
                    if $0.completedUnitCount >= 256 * 1024 { progressFeed.yield() }
                }
            }
            for await _ in progressed { break }
            caller.cancel()
            let error = await #expect(throws: StorageError.self) { try await caller.value }
            #expect(error?.code == .cancelled)
            for await _ in ended {}  // returns only once the iterator is gone: the iteration ended
            #expect(Reliability.record("abandoned", in: emulator) == nil)
            #expect(Reliability.liveSessions(emulator) == sessionsBefore)
            feed.finish()
        }
    }
}

/// Calls `onDeinit` when the last copy of the iterator holding it goes.
final class Token: Sendable {
    let onDeinit: @Sendable () -> Void
    init(_ onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
    deinit { onDeinit() }
}

/// `base`, whose iterators hold a ``Token``; the sequence itself holds none.
struct Watched<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == Data {
    typealias Element = Data
    let base: Base
    let makeToken: @Sendable () -> Token

    init(base: Base, token: @autoclosure @escaping @Sendable () -> Token) {
        self.base = base
        self.makeToken = token
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let token: Token
        mutating func next() async throws -> Data? { try await base.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), token: makeToken()) }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
