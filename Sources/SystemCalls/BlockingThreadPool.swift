import Foundation
import Synchronization

/// A fixed number of threads that run submitted jobs in the order they came (FIFO).
///
/// A job must never wait for another job of the same pool: with every thread
/// waiting, the job waited for could never start. Jobs that block for long (a
/// checksum pass over a large file) hold one thread each, which delays the
/// others but cannot deadlock them.
package final class BlockingThreadPool: Sendable {
    /// The process's one pool for blocking file work: a few threads, since each job is one file
    /// call or one checksum pass.
    package static let shared = BlockingThreadPool(
        threadCount: min(max(ProcessInfo.processInfo.activeProcessorCount, 4), 16))

    /// A queued job: runs the work, or is told that its submitter went away first.
    private struct Job {
        var id: UInt64
        /// Runs the work on a pool thread.
        var run: @Sendable () -> Void
        /// Tells the submitter the job will never run (nil for ``start(_:)``'s jobs).
        var abandon: (@Sendable () -> Void)?
    }

    private struct State {
        var queue: [Job] = []
        /// The index of the next job to run; the slots before it are spent.
        var head = 0
        var nextID: UInt64 = 0
        var threadsStarted = 0
    }

    /// The number of threads, started as the first jobs arrive.
    package let threadCount: Int
    private let state = Mutex(State())
    /// Counts queued jobs (and cancellations): a thread waits on it for the next one.
    private let ready = DispatchSemaphore(value: 0)

    /// A pool of `threadCount` threads (at least one).
    package init(threadCount: Int) {
        self.threadCount = max(1, threadCount)
    }

    /// The jobs queued but not started (for tests).
    package var waitingCount: Int {
        state.withLock { $0.queue.count - $0.head }
    }

    /// Runs `body` on a pool thread once the jobs before it have started.
    ///
    /// - Returns: What `body` returned or threw.
    /// - Throws: `CancellationError` when the calling task is cancelled before `body`
    ///   started; it is then taken off the queue and never runs.
    package func run<T: Sendable, E: Error>(
        _ body: @escaping @Sendable () throws(E) -> T
    ) async throws(CancellationError) -> Result<T, E> {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>?, Never>) in
                enqueue(
                    Job(
                        id: id,
                        run: { continuation.resume(returning: Result { () throws(E) -> T in try body() }) },
                        abandon: { continuation.resume(returning: nil) }
                    ),
                    unlessCancelled: true)
            }
        } onCancel: {
            cancel(id)
        }
        guard let outcome else { throw CancellationError() }
        return outcome
    }

    /// Queues `body` and returns at once; it runs whatever becomes of the caller.
    package func start(_ body: @escaping @Sendable () -> Void) {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        enqueue(Job(id: id, run: body, abandon: nil), unlessCancelled: false)
    }

    /// Queues `job` (or abandons it at once when `checkCancellation` finds the task
    /// cancelled: a cancel that came before the job was queued found nothing to remove),
    /// starting a thread while fewer than ``threadCount`` run.
    private func enqueue(_ job: Job, unlessCancelled checkCancellation: Bool) {
        let (queued, startThread) = state.withLock { state -> (Bool, Bool) in
            if checkCancellation && Task.isCancelled { return (false, false) }
            state.queue.append(job)
            guard state.threadsStarted < threadCount else { return (true, false) }
            state.threadsStarted += 1
            return (true, true)
        }
        guard queued else {
            job.abandon?()
            return
        }
        if startThread {
            Thread.start(named: "BlockingThreadPool") { [self] in work() }
        }
        ready.signal()
    }

    /// Takes job `id` off the queue if it has not started, and tells its submitter.
    private func cancel(_ id: UInt64) {
        let removed = state.withLock { state -> Job? in
            guard let index = state.queue[state.head...].firstIndex(where: { $0.id == id }) else { return nil }
            return state.queue.remove(at: index)
        }
        removed?.abandon?()
    }

    /// A pool thread's life: run the next job, for ever (the pool lives as long as the process).
    private func work() {
        while true {
            ready.wait()
            let job = state.withLock { state -> Job? in
                // A cancelled job leaves its signal behind: then there is nothing to take.
                guard state.head < state.queue.count else { return nil }
                let job = state.queue[state.head]
                state.head += 1
                // Spent slots are dropped in batches, so taking a job is O(1) on average.
                if state.head >= 64 && state.head * 2 >= state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                return job
            }
            job?.run()
        }
    }
}
