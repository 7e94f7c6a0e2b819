import Foundation
import Synchronization

/// The CRC32C of a large source, computed on a blocking thread while the
/// upload already sends it, so that hashing and sending overlap instead of
/// adding up (DESIGN.md, decision 6; issue 4's "one pass" requirement).
///
/// The engine needs the value only for the request that finalizes the
/// session and to check what the server stored; until then the bytes go out.
/// Any number of tasks may wait for it; a waiter that is cancelled stops
/// waiting at once (a pause is never held up by the checksum), while the
/// computation goes on for the next run of the same upload. The computation
/// stops when the last reference to this object goes (the upload ended).
final class PendingChecksum: Sendable {
    /// The state the computing thread and the waiters share; the thread holds only this.
    private final class Computation: Sendable {
        struct State {
            var result: Result<UInt32, StorageError>?
            var waiters: [UInt64: CheckedContinuation<Result<UInt32, StorageError>, Never>] = [:]
            var nextWaiter: UInt64 = 0
        }

        let state = Mutex(State())
        let stopped = Atomic(false)

        func finish(_ result: Result<UInt32, StorageError>) {
            let waiters = state.withLock { state in
                state.result = result
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume(returning: result) }
        }
    }

    private let computation = Computation()

    /// Starts `compute` on a blocking thread; it should return early, with any error,
    /// once the `stop` it is given returns true.
    init(computing compute: @escaping @Sendable (_ stop: @Sendable () -> Bool) -> Result<UInt32, StorageError>) {
        let computation = computation
        BlockingIO.start {
            computation.finish(compute { computation.stopped.load(ordering: .relaxed) })
        }
    }

    deinit {
        computation.stopped.store(true, ordering: .relaxed)
    }

    /// The checksum if it is known already, without waiting.
    var valueIfReady: UInt32? {
        computation.state.withLock { state in
            if case .success(let value)? = state.result { return value }
            return nil
        }
    }

    /// Waits for the checksum.
    ///
    /// - Throws: What reading the source threw (``StorageErrorCode/fileChanged``,
    ///   ``StorageErrorCode/unreadableFile``), or ``StorageErrorCode/cancelled`` when the
    ///   calling task is cancelled first.
    func value() async throws(StorageError) -> UInt32 {
        let computation = computation
        let id = computation.state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<UInt32, StorageError>, Never>) in
                let ready = computation.state.withLock { state -> Result<UInt32, StorageError>? in
                    if let result = state.result { return result }
                    // Checked under the lock: a cancel either finds this waiter or is seen here.
                    if Task.isCancelled { return .failure(.cancelled()) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = computation.state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: .failure(.cancelled()))
        }
        return try result.get()
    }
}
