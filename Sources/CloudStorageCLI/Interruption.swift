import Dispatch
import Synchronization
import SystemCalls

/// How a command that waits on the network ends early.
///
/// The first SIGINT or SIGTERM (or cancellation of the Swift task running the
/// command, taken as a SIGINT) runs the stop action, which asks the operation
/// to wind down cleanly (an upload deletes its server session), and starts a
/// grace period. The command gives up waiting when the grace period ends or a
/// second signal arrives, whichever is first: a server that never answers
/// cannot keep the command alive for its request time-out.
final class Interruption: Sendable {
    private struct State {
        /// The first signal, once one arrived.
        var signal: Int32?
        /// Set once the command stops waiting; later signals do nothing.
        var abandoned = false
        var onAbandon: (@Sendable (Int32) -> Void)?
    }

    /// How long the operation may take to stop after the first signal.
    let grace: Duration
    private let stop: @Sendable () -> Void
    private let state = Mutex(State())

    /// - Parameters:
    ///   - grace: How long a clean stop may take before the command gives up on it.
    ///   - stop: Asks the operation to stop; called once, on the first signal.
    init(grace: Duration = .seconds(2), stop: @escaping @Sendable () -> Void) {
        self.grace = grace
        self.stop = stop
    }

    /// The first signal received, if any.
    var signal: Int32? { state.withLock { $0.signal } }

    /// Takes a signal: the first stops the operation, the second abandons it.
    func interrupt(_ number: Int32) {
        let first = state.withLock { state -> Bool? in
            guard !state.abandoned else { return nil }
            guard state.signal == nil else { return false }
            state.signal = number
            return true
        }
        switch first {
        case true?:
            stop()
            let grace = grace
            Task { [self] in
                try? await Task.sleep(for: grace)
                abandon()
            }
        case false?:
            abandon()
        case nil:
            break
        }
    }

    /// Runs `action` with the first signal's number when the command stops waiting.
    func onAbandon(_ action: @escaping @Sendable (Int32) -> Void) {
        let abandoned = state.withLock { state -> Int32? in
            if state.abandoned { return state.signal }
            state.onAbandon = action
            return nil
        }
        if let abandoned { action(abandoned) }
    }

    private func abandon() {
        let (action, number) = state.withLock { state -> ((@Sendable (Int32) -> Void)?, Int32) in
            guard !state.abandoned else { return (nil, 0) }
            state.abandoned = true
            defer { state.onAbandon = nil }
            return (state.onAbandon, state.signal ?? ProcessSignal.interrupt)
        }
        action?(number)
    }
}
