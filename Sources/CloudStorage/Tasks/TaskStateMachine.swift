/// The lifecycle of a storage task (an upload or a download) as a pure
/// value: events in, actions out. ``TaskRunner`` performs the actions; this
/// type decides them, so every interleaving of pause, resume, cancel and a
/// worker ending can be tested without a network.
///
/// A *worker* is one run of the task's job. Each gets a new epoch; a
/// worker's end is acted on only if it still matters (its epoch is current,
/// or it brings success, which always wins: the work is done). The state
/// holds what the task owns while it lives — the job and the current
/// worker — and only the outcome once it has ended, so nothing outlives its
/// use. `Job` and `Worker` are opaque here (tests use stand-ins).
struct TaskStateMachine<Job, Worker, Output: Equatable> {
    enum State {
        /// The worker of `epoch` runs (`worker` is nil only between the
        /// ``Action/start(epoch:job:after:stop:)`` action and ``started(_:epoch:)``).
        case running(epoch: UInt64, job: Job, worker: Worker?)
        /// No worker is wanted; `worker`, told to pause, may still be unwinding.
        case paused(epoch: UInt64, job: Job, worker: Worker?)
        /// The worker of `epoch` was told to cancel: it discards what the task
        /// built up, and its end ends the task.
        case cancelling(epoch: UInt64, worker: Worker?)
        /// The task ended; nothing changes any more.
        case finished(Outcome)
    }

    enum Action {
        /// Nothing to do.
        case none
        /// Start the worker of `epoch` once `previous` has stopped (two workers
        /// never touch the task's resources at once), report it with
        /// ``started(_:epoch:)``. A `stop` reason is already set for it;
        /// without one, publish ``TaskStatus/resume``.
        case start(epoch: UInt64, job: Job, after: Worker?, stop: TaskStop.Reason?)
        /// Tell `worker` to stop for `reason`; for a pause, publish ``TaskStatus/pause``.
        case stop(Worker?, reason: TaskStop.Reason)
        /// Publish the terminal snapshot and resolve the task's value.
        case finish(Outcome)
    }

    enum Outcome: Equatable {
        case success(Output)
        case failure(StorageError)

        static func == (lhs: Outcome, rhs: Outcome) -> Bool {
            switch (lhs, rhs) {
            case (.success(let a), .success(let b)): a == b
            case (.failure(let a), .failure(let b)): a.code == b.code && a.message == b.message
            default: false
            }
        }
    }

    private(set) var state: State

    /// The first worker's epoch.
    static var firstEpoch: UInt64 { 1 }

    /// A task about to start its first worker, as the returned action says.
    static func start(_ job: Job) -> (Self, Action) {
        let machine = Self(state: .running(epoch: firstEpoch, job: job, worker: nil))
        return (machine, .start(epoch: firstEpoch, job: job, after: nil, stop: nil))
    }

    /// Records the worker a ``Action/start(epoch:job:after:stop:)`` action started.
    mutating func started(_ worker: Worker, epoch: UInt64) {
        switch state {
        case .running(epoch, let job, nil):
            state = .running(epoch: epoch, job: job, worker: worker)
        case .paused(epoch, let job, nil):
            state = .paused(epoch: epoch, job: job, worker: worker)
        case .cancelling(epoch, nil):
            state = .cancelling(epoch: epoch, worker: worker)
        default:
            break  // ended meanwhile, or superseded; its end will be ignored
        }
    }

    mutating func pause() -> Action {
        guard case .running(let epoch, let job, let worker) = state else { return .none }
        state = .paused(epoch: epoch, job: job, worker: worker)
        return .stop(worker, reason: .pause)
    }

    mutating func resume() -> Action {
        guard case .paused(let epoch, let job, let previous) = state else { return .none }
        state = .running(epoch: epoch + 1, job: job, worker: nil)
        return .start(epoch: epoch + 1, job: job, after: previous, stop: nil)
    }

    mutating func cancel() -> Action {
        switch state {
        case .running(let epoch, _, let worker):
            state = .cancelling(epoch: epoch, worker: worker)
            return .stop(worker, reason: .cancel)
        case .paused(let epoch, let job, let previous):
            // Nothing runs to discard what the task built up: a worker that only discards does.
            state = .cancelling(epoch: epoch + 1, worker: nil)
            return .start(epoch: epoch + 1, job: job, after: previous, stop: .cancel)
        case .cancelling, .finished:
            return .none
        }
    }

    /// A worker ended with success or an error.
    mutating func workerEnded(epoch: UInt64, outcome: Outcome) -> Action {
        switch (state, outcome) {
        case (.finished, _):
            return .none
        case (_, .success):
            // The server has the object (or the download is complete), whatever was asked meanwhile.
            return finish(outcome)
        case (.running(let current, _, _), .failure) where current == epoch:
            return finish(outcome)
        case (.cancelling(let current, _), .failure) where current == epoch:
            // The cancelling worker has discarded what it could.
            return finish(.failure(.cancelled()))
        case (.running, .failure), (.paused, .failure), (.cancelling, .failure):
            // A worker that was told to stop, or replaced: its error is the stopping.
            return .none
        }
    }

    /// Whether the worker of `epoch` should still run once the previous one stopped.
    func shouldRun(epoch: UInt64) -> Bool {
        switch state {
        case .running(let current, _, _), .cancelling(let current, _): current == epoch
        case .paused, .finished: false
        }
    }

    private mutating func finish(_ outcome: Outcome) -> Action {
        state = .finished(outcome)
        return .finish(outcome)
    }
}

extension TaskStateMachine: Sendable where Job: Sendable, Worker: Sendable, Output: Sendable {}
extension TaskStateMachine.State: Sendable where Job: Sendable, Worker: Sendable, Output: Sendable {}
extension TaskStateMachine.Action: Sendable where Job: Sendable, Worker: Sendable, Output: Sendable {}
extension TaskStateMachine.Outcome: Sendable where Output: Sendable {}
extension TaskStateMachine.State: Equatable where Job: Equatable, Worker: Equatable {}
extension TaskStateMachine.Action: Equatable where Job: Equatable, Worker: Equatable {}
