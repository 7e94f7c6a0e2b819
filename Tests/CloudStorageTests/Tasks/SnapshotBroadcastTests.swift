import Synchronization
import Testing

@testable import CloudStorage

/// A stand-in for `TaskSnapshot`: which kind of publish produced it and a value.
private enum E: Sendable, Equatable {
    case status(Int)
    case progress(Int)
    case done(Int)

    var isDone: Bool {
        if case .done = self { return true }
        return false
    }

    var statusValue: Int? {
        if case .status(let value) = self { return value }
        return nil
    }

    var progressValue: Int? {
        if case .progress(let value) = self { return value }
        return nil
    }
}

/// Reads `stream` to its end, in the calling task (so cancelling it ends the stream).
private func collect(_ stream: AsyncStream<E>) async -> [E] {
    var elements: [E] = []
    for await element in stream {
        elements.append(element)
    }
    return elements
}

/// Reads `stream` to its end; `nil` if it did not end within the deadline.
private func elements(of stream: AsyncStream<E>) async -> [E]? {
    await within { await collect(stream) }
}

/// The value of `task`; `nil` if it did not finish within the deadline.
private func value<T: Sendable>(of task: Task<T, Never>) async -> T? {
    await within { await task.value }
}

/// Runs `body` in a task of its own and returns its result, or `nil` (after
/// cancelling it) if it takes longer than `timeout`.
///
/// A broken broadcast can leave a consumer suspended for good, ignoring
/// cancellation; the suite's time limit would then report but never finish.
/// This returns regardless, so such a test fails instead of hanging. The
/// deadline is beyond the suite's five-minute time limit, which reports a
/// test that takes too long: a healthy run needs a second or two, but the whole
/// test suite shares two cores, and a starved stress round took longer than
/// the two minutes this once allowed.
private func within<T: Sendable>(
    _ timeout: Duration = .seconds(600),
    _ body: @escaping @Sendable () async -> T
) async -> T? {
    await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        let once = ResumeOnce(continuation)
        let worker = Task { once.resume(returning: await body()) }
        Task {
            try? await Task.sleep(for: timeout)
            worker.cancel()
            once.resume(returning: nil)
        }
    }
}

/// A continuation that only the first of several racing callers resumes.
private final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T?, Never>?>

    init(_ continuation: CheckedContinuation<T?, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume(returning value: T?) {
        let taken = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        taken?.resume(returning: value)
    }
}

/// Polls `condition` until it holds: no bound of its own, which a starved machine could
/// exceed; the suite's time limit ends a wait that never ends (the sleep throws once the
/// test is cancelled, and the wait then gives up).
private func eventually(_ condition: () -> Bool) async -> Bool {
    while !condition() {
        do {
            try await Task.sleep(for: .milliseconds(1))
        } catch {
            return false
        }
    }
    return true
}

/// A value shared between test tasks.
private final class Shared: Sendable {
    let epoch = Atomic<UInt64>(0)
    let stop = Atomic<Bool>(false)
}

@Suite("SnapshotBroadcast", .timeLimit(.minutes(10)))
struct SnapshotBroadcastTests {
    // MARK: First element

    @Test func firstElementIsTheInitialOne() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        #expect(broadcast.latest == .status(0))
        let stream = broadcast.subscribe()
        broadcast.finish(with: .done(0))
        #expect(await elements(of: stream) == [.status(0), .done(0)])
    }

    @Test func firstElementIsTheLatestStatus() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        broadcast.publishStatus(.status(1), progressEpoch: 1)
        broadcast.publishStatus(.status(2), progressEpoch: 2)
        #expect(broadcast.latest == .status(2))
        let stream = broadcast.subscribe()
        // The first element counts as a status: progress queues behind it.
        broadcast.publishProgress(.progress(20), epoch: 2)
        broadcast.publishProgress(.progress(21), epoch: 2)
        broadcast.finish(with: .done(0))
        #expect(await elements(of: stream) == [.status(2), .progress(21), .done(0)])
    }

    @Test func firstElementIsTheLatestProgress() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        broadcast.publishStatus(.status(1), progressEpoch: 7)
        broadcast.publishProgress(.progress(10), epoch: 7)
        broadcast.publishProgress(.progress(11), epoch: 7)
        #expect(broadcast.latest == .progress(11))
        let stream = broadcast.subscribe()
        broadcast.publishStatus(.status(2), progressEpoch: nil)
        broadcast.finish(with: .done(0))
        #expect(await elements(of: stream) == [.progress(11), .status(2), .done(0)])
    }

    @Test func aFirstElementThatIsProgressIsCoalescedLikeAnyProgress() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        broadcast.publishStatus(.status(1), progressEpoch: 1)
        broadcast.publishProgress(.progress(10), epoch: 1)
        let stream = broadcast.subscribe()
        broadcast.publishProgress(.progress(11), epoch: 1)
        #expect(broadcast.pendingCounts == [1])
        broadcast.finish(with: .done(0))
        #expect(await elements(of: stream) == [.progress(11), .done(0)])
    }

    @Test func subscriberAfterFinishGetsTheTerminalThenEnds() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        broadcast.publishStatus(.status(1), progressEpoch: 1)
        #expect(broadcast.finish(with: .done(5)))
        #expect(broadcast.latest == .done(5))
        let late = broadcast.subscribe()
        #expect(broadcast.subscriberCount == 0)
        #expect(await elements(of: late) == [.done(5)])
    }

    // MARK: Ordering

    @Test func oneSubscriberSeesEveryElementInOrder() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        let consumer = Task { await collect(stream) }
        var expected: [E] = [.status(0)]
        for step in 1...200 {
            broadcast.publishStatus(.status(step), progressEpoch: UInt64(step))
            broadcast.publishProgress(.progress(step), epoch: UInt64(step))
            expected += [.status(step), .progress(step)]
            if step.isMultiple(of: 3) { await Task.yield() }
        }
        broadcast.finish(with: .done(0))
        expected.append(.done(0))
        // One progress per status: coalescing can never merge two of them.
        #expect(await value(of: consumer) == expected)
        #expect(broadcast.subscriberCount == 0)
    }

    @Test func fiftyConcurrentSubscribersSeeEveryStatusAndOneTerminal() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let streams = (0..<50).map { _ in broadcast.subscribe() }
        #expect(broadcast.subscriberCount == 50)
        let statuses = 300
        let results = await within {
            await withTaskGroup(of: [E].self) { group in
                for stream in streams {
                    group.addTask { await collect(stream) }
                }
                for step in 1...statuses {
                    broadcast.publishStatus(.status(step), progressEpoch: UInt64(step))
                    if step.isMultiple(of: 10) { await Task.yield() }
                }
                broadcast.finish(with: .done(1))
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let expected = (0...statuses).map(E.status) + [.done(1)]
        #expect(results?.count == 50)
        for result in results ?? [] {
            #expect(result == expected)
        }
        #expect(broadcast.subscriberCount == 0)
    }

    // MARK: Coalescing

    @Test func progressIsCoalescedForAConsumerThatDoesNotRead() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        broadcast.publishStatus(.status(1), progressEpoch: 1)
        for value in 0..<10_000 {
            broadcast.publishProgress(.progress(value), epoch: 1)
        }
        // Initial, status 1 and one progress, whatever the progress volume.
        #expect(broadcast.pendingCounts == [3])
        broadcast.publishStatus(.status(2), progressEpoch: 2)
        for value in 10_000..<20_000 {
            broadcast.publishProgress(.progress(value), epoch: 2)
        }
        #expect(broadcast.pendingCounts == [5])
        broadcast.finish(with: .done(0))
        #expect(broadcast.pendingCounts == [6])
        #expect(
            await elements(of: stream) == [
                .status(0), .status(1), .progress(9_999), .status(2), .progress(19_999), .done(0),
            ]
        )
    }

    @Test func aSlowConsumerSeesIncreasingProgressEndingWithTheLastBeforeEachStatus() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        let consumer = Task {
            var elements: [E] = []
            for await element in stream {
                elements.append(element)
                if elements.count.isMultiple(of: 2) {
                    try? await Task.sleep(for: .microseconds(50))
                }
            }
            return elements
        }
        let rounds = 20
        let perRound = 2_000
        for round in 1...rounds {
            broadcast.publishStatus(.status(round), progressEpoch: UInt64(round))
            for index in 0..<perRound {
                broadcast.publishProgress(.progress(round * perRound + index), epoch: UInt64(round))
                if index.isMultiple(of: 500) { await Task.yield() }
            }
        }
        broadcast.finish(with: .done(0))
        let elements = await value(of: consumer) ?? []

        #expect(elements.compactMap(\.statusValue) == Array(0...rounds))
        #expect(elements.last == .done(0))
        let progress = elements.compactMap(\.progressValue)
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0 < $1 })
        // The element right before each later status (and before the terminal)
        // is the last progress published before it.
        for (index, element) in elements.enumerated() where index > 1 {
            guard let round = element.statusValue ?? (element.isDone ? rounds + 1 : nil) else { continue }
            #expect(elements[index - 1] == .progress((round - 1) * perRound + perRound - 1))
        }
    }

    // MARK: Epochs

    @Test func progressIsGatedByTheEpochOfTheLastStatus() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        // No status has named an epoch yet.
        broadcast.publishProgress(.progress(-1), epoch: 0)
        #expect(broadcast.latest == .status(0))

        broadcast.publishStatus(.status(1), progressEpoch: 1)
        broadcast.publishProgress(.progress(100), epoch: 2)  // a worker from the future
        broadcast.publishProgress(.progress(1), epoch: 1)
        #expect(broadcast.latest == .progress(1))

        broadcast.publishStatus(.status(2), progressEpoch: nil)  // paused
        broadcast.publishProgress(.progress(101), epoch: 1)  // the stale, paused worker
        #expect(broadcast.latest == .status(2))

        broadcast.publishStatus(.status(3), progressEpoch: 2)
        broadcast.publishProgress(.progress(102), epoch: 1)  // still stale
        broadcast.publishProgress(.progress(2), epoch: 2)

        broadcast.finish(with: .done(0))
        broadcast.publishProgress(.progress(103), epoch: 2)  // after finish
        broadcast.publishStatus(.status(4), progressEpoch: 2)
        #expect(broadcast.latest == .done(0))

        #expect(
            await elements(of: stream) == [
                .status(0), .status(1), .progress(1), .status(2), .status(3), .progress(2), .done(0),
            ]
        )
    }

    // MARK: Termination and leaks

    @Test func finishingTwiceHasNoSecondEffect() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        #expect(broadcast.finish(with: .done(1)))
        #expect(!broadcast.finish(with: .done(2)))
        #expect(broadcast.latest == .done(1))
        #expect(await elements(of: stream) == [.status(0), .done(1)])
        #expect(await elements(of: broadcast.subscribe()) == [.done(1)])
    }

    @Test func aStreamEndsRightAfterTheTerminalForAWaitingConsumer() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        let consumer = Task { await collect(stream) }
        #expect(await eventually { broadcast.waitingCount == 1 })
        broadcast.finish(with: .done(3))
        #expect(await value(of: consumer) == [.status(0), .done(3)])
        #expect(broadcast.subscriberCount == 0)
    }

    @Test func cancellingAWaitingConsumerEndsItsStreamAndRemovesIt() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        let other = broadcast.subscribe()
        let consumer = Task { await collect(stream) }
        #expect(await eventually { broadcast.waitingCount == 1 })
        #expect(broadcast.subscriberCount == 2)

        consumer.cancel()
        #expect(await value(of: consumer) == [.status(0)])
        // Removed by the cancellation, while the stream value itself is still alive.
        #expect(broadcast.subscriberCount == 1)
        broadcast.publishStatus(.status(1), progressEpoch: nil)
        #expect(broadcast.pendingCounts == [2])
        broadcast.finish(with: .done(0))
        #expect(await elements(of: other) == [.status(0), .status(1), .done(0)])
        // A cancelled stream stays over.
        #expect(await elements(of: stream) == [])
        #expect(broadcast.subscriberCount == 0)
    }

    @Test func aConsumerCancelledBeforeReadingGetsNothing() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        let elements = await within {
            withUnsafeCurrentTask { $0?.cancel() }
            return await collect(stream)
        }
        #expect(elements == [])
        #expect(broadcast.subscriberCount == 0)
        extendLifetime(stream)
    }

    @Test func aStreamDroppedWithoutIteratingIsRemoved() {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        _ = broadcast.subscribe()
        #expect(broadcast.subscriberCount == 0)
        for _ in 0..<100 {
            let stream = broadcast.subscribe()
            #expect(broadcast.subscriberCount == 1)
            extendLifetime(stream)
        }
        #expect(broadcast.subscriberCount == 0)
        broadcast.publishStatus(.status(1), progressEpoch: nil)
        #expect(broadcast.pendingCounts == [])
    }

    @Test func aStreamAbandonedMidwayIsRemoved() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        broadcast.publishStatus(.status(1), progressEpoch: nil)
        let first = await within { () -> E? in
            for await element in broadcast.subscribe() {
                return element
            }
            return nil
        }
        #expect(first == .status(1))
        #expect(broadcast.subscriberCount == 0)

        // Abandoned by its consumer while elements were still queued.
        func readOne() async -> E? {
            let stream = broadcast.subscribe()
            broadcast.publishStatus(.status(2), progressEpoch: nil)
            var iterator = stream.makeAsyncIterator()
            let element = await iterator.next()
            #expect(broadcast.pendingCounts == [1])
            return element
        }
        #expect(await readOne() == .status(1))
        #expect(broadcast.subscriberCount == 0)
        #expect(broadcast.pendingCounts == [])
    }

    @Test func concurrentNextCallsOnOneStreamShareTheElementsAndAllEnd() async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let stream = broadcast.subscribe()
        let readers = (0..<4).map { _ in Task { await collect(stream) } }
        #expect(await eventually { broadcast.waitingCount == 4 })
        for step in 1...100 {
            broadcast.publishStatus(.status(step), progressEpoch: nil)
        }
        broadcast.finish(with: .done(0))
        var all: [E] = []
        for reader in readers {
            all += await value(of: reader) ?? []
        }
        #expect(all.compactMap(\.statusValue).sorted() == Array(0...100))
        #expect(all.filter(\.isDone) == [.done(0)])
        #expect(broadcast.subscriberCount == 0)
    }

    // MARK: Stress

    @Test(arguments: 0..<12)
    func stress(round: Int) async {
        let broadcast = SnapshotBroadcast<E>(initial: .status(0))
        let shared = Shared()
        let statuses = 40
        let consumers = 24
        let epochScale = 1_000_000
        let streams = (0..<consumers).map { _ in broadcast.subscribe() }

        let results = await within {
            await withTaskGroup(of: [E]?.self) { group in
                for stream in streams {
                    group.addTask {
                        var elements: [E] = []
                        for await element in stream {
                            elements.append(element)
                            switch Int.random(in: 0..<10) {
                            case 0: try? await Task.sleep(for: .microseconds(Int.random(in: 1..<300)))
                            case 1...3: await Task.yield()
                            default: break
                            }
                        }
                        return elements
                    }
                }
                for publisher in 0..<3 {
                    group.addTask {
                        var counter = 0
                        while !shared.stop.load(ordering: .relaxed) {
                            // Read the epoch first: by the time this is published
                            // the status may have moved on, and it must be ignored.
                            let epoch = shared.epoch.load(ordering: .relaxed)
                            counter += 1
                            broadcast.publishProgress(
                                .progress(Int(epoch) * epochScale + publisher * 100_000 + counter % 100_000),
                                epoch: epoch
                            )
                            if counter.isMultiple(of: 16) { await Task.yield() }
                        }
                        return nil
                    }
                }
                group.addTask {
                    for step in 1...statuses {
                        // Every fifth status is a pause: no epoch accepts progress.
                        let paused = step.isMultiple(of: 5)
                        let epoch = UInt64(step)
                        shared.epoch.store(epoch, ordering: .relaxed)
                        broadcast.publishStatus(.status(step), progressEpoch: paused ? nil : epoch)
                        if !paused && step.isMultiple(of: 3) {
                            // Let some progress through, so the epoch checks below are never vacuous.
                            var spins = 0
                            while broadcast.latest == .status(step) && spins < 100_000 {
                                spins += 1
                                await Task.yield()
                            }
                        }
                        for _ in 0..<Int.random(in: 0..<4) { await Task.yield() }
                    }
                    broadcast.finish(with: .done(round))
                    shared.stop.store(true, ordering: .relaxed)
                    return nil
                }
                var results: [[E]] = []
                for await result in group {
                    if let result { results.append(result) }
                }
                return results
            }
        }

        #expect(results?.count == consumers)
        #expect(results?.contains { $0.contains { $0.progressValue != nil } } == true)
        for elements in results ?? [] {
            #expect(elements.compactMap(\.statusValue) == Array(0...statuses))
            #expect(elements.filter(\.isDone) == [.done(round)])
            #expect(elements.last == .done(round))
            // Progress only ever follows the status that named its epoch.
            var currentStatus = 0
            for element in elements {
                if let status = element.statusValue { currentStatus = status }
                if let value = element.progressValue {
                    #expect(value / epochScale == currentStatus)
                    #expect(!currentStatus.isMultiple(of: 5))
                }
            }
        }
        #expect(broadcast.subscriberCount == 0)
    }
}
