import Dispatch
import Foundation
import Synchronization
import SystemCalls

/// The threads the native transport runs its requests on: started on demand,
/// kept for a while when idle, so that a burst of small requests does not pay
/// for a new thread each.
///
/// A job runs at once on an idle thread, or on a new one when none is idle:
/// there is no queue and no upper bound here, because every job is a request
/// that already holds one of its host's connection leases
/// (``NativeConnectionPool/acquire(_:)``), and those are bounded. A job hands
/// its lease and its result over only once its thread is idle again, so the
/// request that gets the lease next finds that thread: the threads never
/// outnumber the leases. Idle threads
/// wait for work on a semaphore of their own, newest first (the warmest
/// stack runs the next job), and end after ``idleLifetime`` without any.
///
/// SIGPIPE is blocked on these threads (`sendfile` cannot suppress it per
/// call); a write to a closed connection fails with `EPIPE` instead.
final class NativeIOThreads: Sendable {
    /// One thread's mailbox: the job handed to it and the semaphore that wakes it.
    private final class Worker: Sendable {
        let wake = DispatchSemaphore(value: 0)
        let job = Mutex<Job?>(nil)
    }

    /// Work for a thread. What it returns runs once the thread is idle again: hand results over
    /// there, so that the work they lead to can run on this same, warm thread.
    typealias Job = @Sendable () -> (@Sendable () -> Void)?

    private struct State {
        var idle: [Worker] = []
        var threads = 0
    }

    /// How long a thread waits for another job before it ends.
    let idleLifetime: Duration
    private let name: String
    private let state = Mutex(State())

    init(name: String, idleLifetime: Duration = .seconds(10)) {
        self.name = name
        self.idleLifetime = idleLifetime
    }

    /// Threads alive now, busy or idle.
    var threadCount: Int { state.withLock { $0.threads } }

    /// Runs `job` on an idle thread, or on a new one; then, with the thread offered as idle, what it returned.
    func run(_ job: @escaping Job) {
        let idleWorker = state.withLock { state -> Worker? in
            if let worker = state.idle.popLast() { return worker }
            state.threads += 1
            return nil
        }
        if let idleWorker {
            idleWorker.job.withLock { $0 = job }
            idleWorker.wake.signal()
            return
        }
        let worker = Worker()
        worker.job.withLock { $0 = job }
        Thread.start(named: name) { [self] in
            Self.blockSIGPIPE()
            serve(worker)
        }
    }

    /// A thread's life: run the job in the mailbox, offer itself as idle, wait; end when idle too long.
    private func serve(_ worker: Worker) {
        let lifetime = DispatchTimeInterval.milliseconds(Int(idleLifetime / .milliseconds(1)))
        while true {
            // Scoped, so that nothing of the job (its request's body, its response) stays
            // referenced while the thread waits for the next one: a streamed upload's previous
            // request would otherwise stay alive beside the one being filled.
            do {
                let handOff = worker.job.withLock { job in
                    defer { job = nil }
                    return job
                }?()
                state.withLock { $0.idle.append(worker) }
                // A job handed to this thread meanwhile waits in the mailbox; its signal is counted.
                handOff?()
            }
            if worker.wake.wait(timeout: .now() + lifetime) == .success { continue }
            let retired = state.withLock { state -> Bool in
                guard let index = state.idle.firstIndex(where: { $0 === worker }) else { return false }
                state.idle.remove(at: index)
                state.threads -= 1
                return true
            }
            if retired { return }
            // A job was handed over just as the wait ended: its signal is on the way.
            worker.wake.wait()
        }
    }

    private static func blockSIGPIPE() {
        ProcessSignal.blockOnCurrentThread(ProcessSignal.brokenPipe)
    }
}
