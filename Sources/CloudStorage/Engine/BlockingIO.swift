import Foundation
import Synchronization

/// Runs blocking work (file opens and reads, `stat`, `fsync`) on a bounded pool
/// of threads of its own, so that it never occupies one of Swift's few
/// cooperative threads, and a burst of uploads cannot start a thread per call.
enum BlockingIO {
    /// The SDK's one pool: a few threads, since each job is one file call or one checksum pass.
    static let pool = BlockingThreadPool(threadCount: min(max(ProcessInfo.processInfo.activeProcessorCount, 4), 16))

    /// Runs `body` on the pool and returns its result.
    ///
    /// The body is not interrupted once it runs; keep each call short (one read,
    /// one checksum block) and check for cancellation between calls.
    ///
    /// - Throws: What `body` throws, or ``StorageErrorCode/cancelled`` when the
    ///   calling task is cancelled before `body` started (it then never runs).
    static func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(StorageError) -> T
    ) async throws(StorageError) -> T {
        let result: Result<T, StorageError>
        do throws(CancellationError) {
            result = try await pool.run(body)
        } catch {
            throw .cancelled()
        }
        return try result.get()
    }

    /// Runs `body` on the pool even if the calling task is cancelled, and waits for it:
    /// for closing and cleaning up, which must happen on every path.
    static func runToCompletion<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            pool.start { continuation.resume(returning: body()) }
        }
    }

    /// Starts `body` on the pool and returns at once; it runs even if the caller is cancelled.
    static func start(_ body: @escaping @Sendable () -> Void) {
        pool.start(body)
    }
}

/// A fixed number of threads that run submitted jobs in the order they came (FIFO).
///
/// A job must never wait for another job of the same pool: with every thread
/// waiting, the job waited for could never start. Jobs that block for long (a
/// checksum pass over a large file) hold one thread each, which delays the
/// others but cannot deadlock them.
final class BlockingThreadPool: Sendable {
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
    let threadCount: Int
    private let state = Mutex(State())
    /// Counts queued jobs (and cancellations): a thread waits on it for the next one.
    private let ready = DispatchSemaphore(value: 0)

    /// A pool of `threadCount` threads (at least one).
    init(threadCount: Int) {
        self.threadCount = max(1, threadCount)
    }

    /// The jobs queued but not started (for tests).
    var waitingCount: Int {
        state.withLock { $0.queue.count - $0.head }
    }

    /// Runs `body` on a pool thread once the jobs before it have started.
    ///
    /// - Returns: What `body` returned or threw.
    /// - Throws: `CancellationError` when the calling task is cancelled before `body`
    ///   started; it is then taken off the queue and never runs.
    func run<T: Sendable, E: Error>(
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
    func start(_ body: @escaping @Sendable () -> Void) {
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
            let thread = Thread { [self] in work() }
            thread.name = "CloudStorage.BlockingIO"
            thread.start()
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
