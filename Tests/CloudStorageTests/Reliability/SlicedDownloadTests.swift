import Foundation
import HTTP1
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

/// Sliced file downloads against the emulator, with tiny thresholds so that files stay small:
/// the bytes are exact whatever the slice count, a fault in one slice re-requests only that
/// slice from its own offset, a corrupt slice fails the combined CRC32C, an object replaced
/// meanwhile ends in ``StorageErrorCode/objectChanged``, pause, resume and cancel with every
/// slice held in flight, and the objects and downloads that never slice.
///
/// Which slice a fault hits is chosen by its `Range` (``TestTransport/fault(sliceStartingAt:with:)``),
/// never by the order in which concurrent requests arrive; waits are for events (bytes arrived,
/// held connections), never for a clock.
@Suite("Reliability: sliced downloads", .timeLimit(.minutes(5)))
struct SlicedDownloadTests {
    static let name = "sliced/object.bin"

    /// Downloads with `configure`'s slicing through a probe, after uploading `size` bytes.
    static func withSlicedDownload<T>(
        size: Int, slices: Int, threshold: Int64 = 1, seed: UInt64 = 7, route: TestRoute = .nativeHTTP,
        slicingProbe: StorageConfiguration.Downloads.SlicingProbe? = nil,
        _ body: (_ emulator: StorageEmulator, _ probe: TestTransport, _ storage: Storage, _ payload: Data) async throws
            ->
            T
    ) async throws -> T {
        try await Reliability.withEmulator(for: route) { emulator in
            let uploads = Reliability.storage(Reliability.Route(wire: .gcs, via: route), emulator)
            let payload = TestSupport.payload(size: size, seed: seed)
            _ = try await uploads.reference(withPath: name).putDataAsync(payload)
            let probe = TestTransport(wrapping: route.makeTransport(for: .gcs(emulator.baseURL)))
            var configuration = StorageConfiguration()
            route.apply(to: &configuration)
            configuration.applyForTest {
                try $0.retry.setInitialDelay(.milliseconds(5))
                try $0.retry.setMaxDelay(.milliseconds(40))
                $0.downloads.slicingThreshold = threshold
                try $0.downloads.setSliceCount(slices)
                $0.downloads.slicingProbe = slicingProbe
            }
            let storage = Storage(
                bucket: Reliability.bucket, endpoint: .gcs(emulator.baseURL), authorization: .none,
                configuration: configuration, transport: probe)
            return try await body(emulator, probe, storage, payload)
        }
    }

    /// Writes `reference` to `file` in a new temporary directory and expects the call to return
    /// that file and its bytes to be `expected`; `inspect` sees the directory before it goes.
    static func expectDownload(
        _ reference: StorageReference, toFileNamed file: String = "copy.bin", equals expected: Data,
        sourceLocation: SourceLocation = #_sourceLocation, inspect: (_ directory: URL) throws -> Void = { _ in }
    ) async throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent(file)
        #expect(try await reference.writeAsync(toFile: target) == target, sourceLocation: sourceLocation)
        #expect(try Data(contentsOf: target) == expected, sourceLocation: sourceLocation)
        try inspect(directory)
    }

    /// The slices' ranges the SDK plans for `size` bytes in `count` slices.
    static func plan(_ size: Int, _ count: Int) -> [ByteRange] {
        RangedDownloadStateMachine.slices(of: Int64(size), count: count)
    }

    @Test(arguments: [(1, 4), (3, 4), (4, 4), (1000, 3), (256 * 1024 + 1, 4), (1024 * 1024 + 3, 7), (99_999, 2)])
    func bytesAreExactForEverySliceCount(size: Int, slices: Int) async throws {
        try await Self.withSlicedDownload(size: size, slices: slices) { emulator, probe, storage, payload in
            try await Self.expectDownload(storage.reference(withPath: Self.name), equals: payload) { directory throws in
                #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["copy.bin"])
            }
            let plan = Self.plan(size, slices)
            let gets = probe.mediaGets
            #expect(gets.count == plan.count, "one GET per slice, and none more")
            // The first is today's request; every other asks for one slice of the pinned generation.
            #expect(gets.first?.range == nil && gets.first?.pinned == nil)
            let generation = try #require(Reliability.record(Self.name, in: emulator).map { $0.generation })
            #expect(
                Set(gets.dropFirst().map { "\($0.range ?? "") \($0.pinned ?? "")" })
                    == Set(plan.dropFirst().map { "bytes=\($0.start)-\($0.end!) \(generation)" }))
        }
    }

    @Test(arguments: TestRoute.all)
    func slicesOnEveryTransport(route: TestRoute) async throws {
        let size = 500_001
        try await Self.withSlicedDownload(size: size, slices: 3, route: route) { _, probe, storage, payload in
            try await Self.expectDownload(storage.reference(withPath: Self.name), equals: payload)
            #expect(probe.mediaGets.count == 3)
        }
    }

    @Test func aFirstConnectionFastEnoughKeepsTheDownloadOnIt() async throws {
        let size = 8 * 1024 * 1024 + 3
        let enough = try StorageConfiguration.Downloads.SlicingProbe(duration: .zero, rate: 1)
        try await Self.withSlicedDownload(size: size, slices: 4, slicingProbe: enough) { _, probe, storage, payload in
            try await Self.expectDownload(storage.reference(withPath: Self.name), equals: payload)
            #expect(probe.mediaGets.map(\.range) == [nil], "one request for the whole object")
        }
    }

    @Test func aFirstConnectionBelowTheRateIsSlicedFromWhereItStands() async throws {
        let size = 8 * 1024 * 1024 + 3
        // No maximum load: however busy the machine, the rate alone decides.
        let never = try StorageConfiguration.Downloads.SlicingProbe(duration: .zero, rate: .max, maximumClientLoad: nil)
        try await Self.withSlicedDownload(size: size, slices: 4, slicingProbe: never) {
            emulator, probe, storage, payload in
            try await Self.expectDownload(storage.reference(withPath: Self.name), equals: payload)
            let gets = probe.mediaGets
            #expect(gets.count == 4 && gets.first?.range == nil)
            // The other three cover, back to back, the bytes from some point after the first
            // connection's first piece to the end, each pinned to the generation it read.
            let generation = try #require(Reliability.record(Self.name, in: emulator).map { $0.generation })
            #expect(gets.dropFirst().allSatisfy { $0.pinned == "\(generation)" })
            let ranges = gets.dropFirst().compactMap { get -> (Int, Int)? in
                guard let text = get.range?.dropFirst("bytes=".count).split(separator: "-"), text.count == 2,
                    let first = Int(text[0]), let last = Int(text[1])
                else { return nil }
                return (first, last)
            }.sorted { $0.0 < $1.0 }
            #expect(ranges.count == 3 && ranges.first.map { $0.0 > 0 } == true && ranges.last?.1 == size - 1)
            #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.1 + 1 == $1.0 })
        }
    }

    @Test func belowTheThresholdIsOneRequestAsBefore() async throws {
        let size = 300_000
        try await Self.withSlicedDownload(size: size, slices: 8, threshold: Int64(size) + 1) {
            _, probe, storage, payload in
            try await Self.expectDownload(storage.reference(withPath: Self.name), equals: payload)
            #expect(probe.mediaGets.map(\.range) == [nil])
        }
    }

    @Test func memoryAndStreamDownloadsNeverSlice() async throws {
        try await Self.withSlicedDownload(size: 100_000, slices: 4) { _, probe, storage, payload in
            let reference = storage.reference(withPath: Self.name)
            #expect(try await reference.data(maxSize: 1 << 20) == payload)
            var streamed = Data()
            for try await chunk in reference.dataStream() { streamed.append(chunk) }
            #expect(streamed == payload)
            #expect(probe.mediaGets.map(\.range) == [nil, nil])
        }
    }

    /// Firebase Storage v0 cannot ask for one generation, so a slice could not be held to the
    /// first answer's: its downloads stay single-stream.
    @Test func aFirebaseDownloadIsNeverSliced() async throws {
        try await Reliability.withEmulator(for: .nativeHTTP) { emulator in
            let route = Reliability.Route(wire: .firebase, via: .nativeHTTP)
            let payload = TestSupport.payload(size: 300_000, seed: 5)
            _ = try await Reliability.storage(route, emulator).reference(withPath: Self.name).putDataAsync(payload)
            let probe = TestTransport(wrapping: TestRoute.nativeHTTP.makeTransport(for: .firebase(emulator.baseURL)))
            var configuration = StorageConfiguration()
            configuration.applyForTest {
                $0.downloads.slicingThreshold = 1
                try $0.downloads.setSliceCount(4)
                $0.downloads.slicingProbe = nil
            }
            let storage = Storage(
                bucket: Reliability.bucket, endpoint: .firebase(emulator.baseURL), authorization: .none,
                configuration: configuration, transport: probe)
            try await Self.expectDownload(storage.reference(withPath: Self.name), equals: payload)
            #expect(probe.mediaGets.map(\.range) == [nil])
        }
    }

    @Test func aGzipStoredObjectIsNeverSliced() async throws {
        try await Self.withSlicedDownload(size: 1, slices: 4) { _, probe, storage, _ in
            let original = Data(String(repeating: "sliced downloads keep gzip in order. ", count: 4000).utf8)
            let stored = Data(try original.withUnsafeBytes { try GzipEncoder.encode($0) })
            let reference = storage.reference(withPath: "sliced/app.js")
            var metadata = StorageMetadata()
            metadata.contentEncoding = "gzip"
            _ = try await reference.putDataAsync(stored, metadata: metadata)
            try await Self.expectDownload(reference, toFileNamed: "app.js", equals: original)
            #expect(probe.mediaGets.map(\.range) == [nil], "one GET, whole")
        }
    }

    @Test func aResetInOneSliceReRequestsOnlyThatSliceFromItsOffset() async throws {
        let size = 1024 * 1024 + 5
        try await Self.withSlicedDownload(size: size, slices: 4) { emulator, probe, storage, payload in
            let plan = Self.plan(size, 4)
            let faulted = plan[2]
            probe.fault(sliceStartingAt: faulted.start, with: try emulator.installFaultPlan(["reset-after-100000"]))
            try await Self.expectDownload(storage.reference(withPath: Self.name), equals: payload)
            let gets = probe.mediaGets
            #expect(gets.count == plan.count + 1, "one request more than the slices: the faulted slice's resumption")
            #expect(emulator.requestsReceived == 1 + plan.count + 1, "the server saw the upload and those GETs only")
            let resumed = try #require(gets.last)
            let start = try #require(resumed.start)
            #expect(start >= faulted.start && start <= faulted.start + 100_000, "from the slice's own offset")
            #expect(resumed.range == "bytes=\(start)-\(faulted.end!)")
            #expect(resumed.pinned != nil, "the resumption keeps the pinned generation")
            // Every other slice was asked for once.
            for slice in plan.dropFirst() where slice != faulted {
                #expect(gets.filter { $0.range == "bytes=\(slice.start)-\(slice.end!)" }.count == 1)
            }
        }
    }

    @Test func aCorruptSliceFailsTheCombinedChecksumAndLeavesNoFile() async throws {
        let size = 200_003
        try await Self.withSlicedDownload(size: size, slices: 3) { _, probe, storage, _ in
            probe.corrupt(sliceStartingAt: Self.plan(size, 3)[1].start)
            let directory = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let target = directory.appendingPathComponent("copy.bin")
            let error = await #expect(throws: StorageError.self) {
                try await storage.reference(withPath: Self.name).writeAsync(toFile: target)
            }
            #expect(error?.code == .nonMatchingChecksum)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }

    @Test func anObjectReplacedBetweenSlicesEndsAsObjectChanged() async throws {
        let size = 300_000
        try await Self.withSlicedDownload(size: size, slices: 3) { emulator, probe, storage, _ in
            let uploads = Reliability.storage(Reliability.Route(wire: .gcs, via: .nativeHTTP), emulator)
            // Before the last slice is asked for, another generation replaces the object.
            probe.beforeSending(sliceStartingAt: Self.plan(size, 3)[2].start) {
                _ = try await uploads.reference(withPath: Self.name).putDataAsync(Data(repeating: 1, count: size))
            }
            let directory = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let target = directory.appendingPathComponent("copy.bin")
            let error = await #expect(throws: StorageError.self) {
                try await storage.reference(withPath: Self.name).writeAsync(toFile: target)
            }
            #expect(error?.code == .objectChanged)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }

    /// Holds every slice's first answer after `held` bytes, and waits until all of them are in.
    static func startHeld(
        _ emulator: StorageEmulator, _ probe: TestTransport, _ storage: Storage, size: Int, slices: Int, held: Int,
        into target: URL
    ) async throws -> StorageDownloadTask<URL> {
        let plan = plan(size, slices)
        probe.fault(sliceStartingAt: nil, with: try emulator.installFaultPlan(["stall-after-\(held)"]))
        for slice in plan.dropFirst() {
            probe.fault(sliceStartingAt: slice.start, with: try emulator.installFaultPlan(["stall-after-\(held)"]))
        }
        let task = storage.reference(withPath: name).write(toFile: target)
        let all = Int64(held * plan.count)
        for await snapshot in task.snapshots
        where snapshot.progress.completedUnitCount >= all || snapshot.status.isTerminal {
            break
        }
        #expect(task.snapshot.progress.completedUnitCount == all, "every slice holds its first \(held) bytes")
        #expect(task.snapshot.progress.totalUnitCount == Int64(size), "progress is one number for the object")
        return task
    }

    @Test func pauseWithEverySliceInFlightThenResumeContinuesEachFromItsOffset() async throws {
        let (size, slices, held) = (400_000, 4, 20_000)
        try await Self.withSlicedDownload(size: size, slices: slices) { emulator, probe, storage, payload in
            let directory = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let target = directory.appendingPathComponent("copy.bin")
            let task = try await Self.startHeld(
                emulator, probe, storage, size: size, slices: slices, held: held, into: target)
            await task.pause()
            for await snapshot in task.snapshots where snapshot.status == .pause { break }
            let beforeResume = probe.mediaGets.count
            #expect(beforeResume == slices)
            await task.resume()
            #expect(try await task.value == target)
            #expect(try Data(contentsOf: target) == payload)
            let resumed = probe.mediaGets.dropFirst(beforeResume)
            #expect(
                Set(resumed.map { $0.range ?? "" })
                    == Set(Self.plan(size, slices).map { "bytes=\($0.start + Int64(held))-\($0.end!)" }),
                "each slice resumes from its own committed offset")
            #expect(resumed.allSatisfy { $0.pinned != nil })
        }
    }

    /// Random pause, resume and cancel while every slice runs: the task ends exactly once, with
    /// the whole file or none, and progress never runs past the object's size.
    @Test(arguments: 0..<24)
    func randomControlsEndExactlyOnceWithTheWholeFileOrNone(seed: Int) async throws {
        let size = 3 * 1024 * 1024 + 77
        var generator = SeededGenerator(seed: UInt64(seed) &* 7919)
        try await Self.withSlicedDownload(size: size, slices: 4, seed: UInt64(seed)) { _, _, storage, payload in
            let directory = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let target = directory.appendingPathComponent("copy.bin")
            let task = storage.reference(withPath: Self.name).write(toFile: target)
            let observer = Task { await TestSupport.collect(task.snapshots) }
            try await TestSupport.applyRandomControls(
                to: task, maxCount: 10, maxWait: .milliseconds(3), using: &generator)
            switch await task.result() {
            case .success:
                #expect(try Data(contentsOf: target) == payload)
                #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["copy.bin"])
            case .failure(let error):
                #expect(error.code == .cancelled, "only cancellation can fail these downloads: \(error)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
            }
            let seen = await observer.value
            #expect(seen.filter { $0.status.isTerminal }.count == 1)
            #expect(seen.last?.status.isTerminal == true)
            #expect(seen.allSatisfy { $0.progress.completedUnitCount <= Int64(size) })
        }
    }

    @Test func cancelWithEverySliceInFlightEndsAndLeavesNoFile() async throws {
        let (size, slices, held) = (400_000, 4, 20_000)
        try await Self.withSlicedDownload(size: size, slices: slices) { emulator, probe, storage, _ in
            let directory = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let target = directory.appendingPathComponent("copy.bin")
            let task = try await Self.startHeld(
                emulator, probe, storage, size: size, slices: slices, held: held, into: target)
            await task.cancel()
            guard case .failure(let error) = await task.result() else {
                Issue.record("a cancelled download succeeded")
                return
            }
            #expect(error.code == .cancelled)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
            #expect(probe.mediaGets.count == slices, "nothing is asked for after the cancel")
        }
    }
}

/// What a ``TestTransport`` under a sliced download recorded of its media GETs (their `Range`
/// and pinned generation), and what it does to the requests of chosen slices, picked by where
/// their `Range` starts (nil for the first request, which has none): names a fault plan,
/// corrupts a body byte, or runs a step first.
extension TestTransport {
    /// A media GET as it went out.
    struct MediaGet: Sendable {
        var range: String?
        /// The `ifGenerationMatch` the request carries.
        var pinned: String?

        /// Where the range starts.
        var start: Int64? {
            range.flatMap { Int64($0.dropFirst("bytes=".count).prefix { $0 != "-" }) }
        }

        /// What `request` asks for, or nil when it is no media GET.
        init?(_ request: HTTPRequest) {
            guard request.method == "GET", request.url.query?.contains("alt=media") == true else { return nil }
            let query = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            range = request.headers["Range"]
            pinned = query.first { $0.name == "ifGenerationMatch" }?.value
        }
    }

    /// The media GETs sent, in order.
    var mediaGets: [MediaGet] { sent.compactMap { MediaGet($0.request) } }

    /// Names the fault plan `plan` on every media GET of the slice starting at `start`.
    func fault(sliceStartingAt start: Int64?, with plan: String) {
        rewrite { request in
            if let get = MediaGet(request), get.start == start { request.headers.set("x-emulator-faults", plan) }
        }
    }

    /// Flips the first body byte the next media GET of the slice starting at `start` receives.
    func corrupt(sliceStartingAt start: Int64) {
        let armed = Atomic(true)
        rewrite { request in
            guard let get = MediaGet(request), get.start == start, armed.exchange(false, ordering: .relaxed),
                let sink = request.responseSink
            else { return }
            let first = Mutex(true)
            request.responseSink = HTTPResponseSink(
                begin: sink.begin,
                receive: { bytes in
                    let isFirst = first.withLock { isFirst in
                        defer { isFirst = false }
                        return isFirst
                    }
                    guard isFirst, !bytes.isEmpty else {
                        return try sink.receive(bytes)
                    }
                    var copy = [UInt8](bytes)
                    copy[0] ^= 0xFF
                    return try copy.withUnsafeBytes { try sink.receive($0) }
                })
        }
    }

    /// Runs `step` before the next media GET of the slice starting at `start` goes out.
    func beforeSending(sliceStartingAt start: Int64, _ step: @escaping @Sendable () async throws -> Void) {
        let armed = Atomic(true)
        rewrite { request in
            guard let get = MediaGet(request), get.start == start, armed.exchange(false, ordering: .relaxed) else {
                return
            }
            try await step()
        }
    }
}
