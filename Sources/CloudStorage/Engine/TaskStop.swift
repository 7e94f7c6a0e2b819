import Synchronization

/// Why a worker is asked to stop, handed to the job so that it need not guess
/// from Swift cancellation alone.
///
/// Set at most once per worker: a later request does not overwrite the first.
final class TaskStop: Sendable {
    /// The reason a worker stops.
    enum Reason: Sendable, Equatable {
        /// Stop sending, keep what can be continued.
        case pause
        /// Stop for good and discard what was built up.
        case cancel
    }

    private let requested: Mutex<Reason?>

    /// A stop that nothing has asked for yet, or one already set to `reason`.
    init(_ reason: Reason? = nil) {
        requested = Mutex(reason)
    }

    /// Why the worker was asked to stop, or nil while it may go on.
    var reason: Reason? {
        requested.withLock { $0 }
    }

    /// Records `reason` unless a reason was recorded already.
    func request(_ reason: Reason) {
        requested.withLock { current in
            if current == nil { current = reason }
        }
    }
}
