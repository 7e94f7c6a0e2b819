import Synchronization
import SystemCalls

/// Runs a command's network work so that Ctrl-C (SIGINT), SIGTERM or
/// cancellation of the calling task stops it cleanly: the work runs in a
/// task of its own, which the first signal cancels (each transfer inside
/// cancels its SDK task, deleting upload sessions and partial files), and the
/// command stops waiting after ``Interruption``'s grace period or a second
/// signal.
enum Interruptibly {
    /// How waiting for the work ended.
    enum Ending<Value: Sendable>: Sendable {
        /// The work ended with this value.
        case finished(Value)
        /// A signal's grace period ran out first (or a second signal came).
        case abandoned(signal: Int32)
    }

    /// Runs `work` until it ends or a signal makes the command give up on it.
    ///
    /// The signals are taken over before `work` starts, so none can end the process with a
    /// transfer left running.
    ///
    /// - Returns: How it ended, and the first signal received (nil if none).
    static func run<Value: Sendable>(
        _ work: @escaping @Sendable () async -> Value
    ) async -> (ending: Ending<Value>, signal: Int32?) {
        let slot = WorkSlot()
        let interruption = Interruption { slot.cancel() }
        let interrupts = SignalHandler { interruption.interrupt($0) }
        // Cancelling the Swift task that runs the command (as a caller embedding it does, and as
        // the tests do) is a Ctrl-C too.
        let ending = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Ending<Value>, Never>) in
                let once = OnceFlag()
                interruption.onAbandon { signal in
                    if once.take() { continuation.resume(returning: .abandoned(signal: signal)) }
                }
                slot.set(
                    Task {
                        let value = await work()
                        if once.take() { continuation.resume(returning: .finished(value)) }
                    })
            }
        } onCancel: {
            interruption.interrupt(ProcessSignal.interrupt)
        }
        withExtendedLifetime(interrupts) {}
        return (ending, interruption.signal)
    }
}

/// The task a signal cancels, which may arrive before the task exists.
private final class WorkSlot: Sendable {
    private let state = Mutex<(task: Task<Void, Never>?, cancelled: Bool)>((nil, false))

    /// Cancels the task now, or as soon as it is set.
    func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    func set(_ task: Task<Void, Never>) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }
}
