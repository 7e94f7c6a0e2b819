import Dispatch
import Synchronization
import SystemCalls
import Testing

@testable import CloudStorage

/// The bounded pool that blocking file work runs on (``BlockingThreadPool``): never more jobs at
/// once than it has threads, every job run in the end, and a job whose task is cancelled before
/// it started never run at all.
@Suite("Blocking thread pool", .timeLimit(.minutes(10)))
struct BlockingThreadPoolTests {
    /// Counts the jobs running at once and the most there ever were.
    final class Concurrency: Sendable {
        let running = Atomic(0)
        let most = Atomic(0)

        func enter() {
            let now = running.add(1, ordering: .sequentiallyConsistent).newValue
            most.max(now, ordering: .sequentiallyConsistent)
        }

        func leave() {
            running.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Whether a job ran.
    final class Flag: Sendable {
        private let value = Atomic(false)
        var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
        func set() { value.store(true, ordering: .sequentiallyConsistent) }
    }

    /// Waits (suspending, never blocking a cooperative thread) until `condition` holds; a
    /// generous bound on the number of looks keeps a broken pool from hanging the suite.
    static func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<60_000 where !condition() {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(condition())
    }

    @Test("More jobs than threads: all complete, never more than the threads at once")
    func boundedConcurrency() async throws {
        let pool = BlockingThreadPool(threadCount: 3)
        let concurrency = Concurrency()
        let gate = DispatchSemaphore(value: 0)
        let jobs = 40
        let results = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<jobs {
                    group.addTask {
                        try await pool.run { () -> Int in
                            concurrency.enter()
                            defer { concurrency.leave() }
                            gate.wait()
                            return index
                        }.get()
                    }
                }
                return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
            }
        }
        // Every thread holds a job at the gate and the rest wait their turn in the queue.
        try await Self.waitUntil {
            concurrency.running.load(ordering: .sequentiallyConsistent) == 3 && pool.waitingCount == jobs - 3
        }
        for _ in 0..<jobs { gate.signal() }
        #expect(try await results.value == Set(0..<jobs))
        #expect(concurrency.most.load(ordering: .sequentiallyConsistent) == 3)
    }

    @Test("A job cancelled before it starts throws CancellationError and never runs")
    func cancelledBeforeStart() async throws {
        let pool = BlockingThreadPool(threadCount: 1)
        let concurrency = Concurrency()
        let gate = DispatchSemaphore(value: 0)
        let blocker = Task {
            try await pool.run {
                concurrency.enter(); gate.wait()
            }.get()
        }
        try await Self.waitUntil { concurrency.running.load(ordering: .sequentiallyConsistent) == 1 }

        let ran = Flag()
        let waiting = Task { try await pool.run { ran.set() }.get() }
        try await Self.waitUntil { pool.waitingCount == 1 }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(pool.waitingCount == 0)

        gate.signal()
        try await blocker.value
        // One thread, in order: had the cancelled job stayed queued, it would have run by now.
        #expect(try await pool.run { 7 }.get() == 7)
        #expect(!ran.isSet)
    }

    @Test("A task cancelled before it submits gets CancellationError; BlockingIO turns it into .cancelled")
    func cancelledBeforeSubmitting() async throws {
        let pool = BlockingThreadPool(threadCount: 1)
        let ran = Flag()
        let job = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pool.run { ran.set() }.get()
        }
        await #expect(throws: CancellationError.self) { try await job.value }
        let storage = Task { () throws(StorageError) -> Bool in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await BlockingIO.run { () throws(StorageError) -> Bool in
                ran.set()
                return true
            }
        }
        await #expect { try await storage.value } throws: { ($0 as? StorageError)?.code == .cancelled }
        #expect(!ran.isSet)
    }
}
