extension StorageUploadTask {
    /// The upload task's lifecycle.
    typealias StateMachine = TaskStateMachine<StorageMetadata>
}

/// The lifecycle of a storage task (an upload or a download) as a pure
/// value: events in, actions out. The actor performs the actions; this
/// type decides them, so every interleaving of pause, resume, cancel and a
/// worker ending can be tested without a network.
///
/// A *worker* is one run of the task's engine. Each gets a new epoch;
/// a worker's end is acted on only if it still matters (its epoch is
/// current, or it brings success, which always wins: the work is done).
/// `Success` is what a successful worker produces.
struct TaskStateMachine<Success: Sendable & Equatable>: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// A worker with this epoch is running.
        case running(epoch: UInt64)
        /// No worker is wanted; `epoch` is the last one started.
        case paused(epoch: UInt64)
        /// Cancellation was asked for: waiting for the worker to stop and
        /// what it left behind to be discarded.
        case cancelling
        /// The task ended; nothing changes any more.
        case finished
    }

    enum Action: Sendable, Equatable {
        /// Nothing to do.
        case none
        /// Start a worker with this epoch, after the previous one has
        /// stopped, and publish `.resume`.
        case startWorker(epoch: UInt64)
        /// Cancel the running worker and publish `.pause`.
        case pauseWorker
        /// Cancel the worker if one runs, wait for it, discard what the
        /// task leaves behind (a server session, a partial file), then
        /// report ``cancellationCompleted()``.
        case tearDown
        /// Publish the terminal snapshot and resolve `value`.
        case finish(Outcome)
    }

    enum Outcome: Sendable, Equatable {
        case success(Success)
        case failure(StorageError)

        static func == (lhs: Outcome, rhs: Outcome) -> Bool {
            switch (lhs, rhs) {
            case (.success(let a), .success(let b)): a == b
            case (.failure(let a), .failure(let b)): a.code == b.code && a.message == b.message
            default: false
            }
        }
    }

    private(set) var state: State = .running(epoch: 1)

    /// The first worker, started when the task is created.
    static var firstEpoch: UInt64 { 1 }

    mutating func pause() -> Action {
        guard case .running(let epoch) = state else { return .none }
        state = .paused(epoch: epoch)
        return .pauseWorker
    }

    mutating func resume() -> Action {
        guard case .paused(let epoch) = state else { return .none }
        state = .running(epoch: epoch + 1)
        return .startWorker(epoch: epoch + 1)
    }

    mutating func cancel() -> Action {
        switch state {
        case .running, .paused:
            state = .cancelling
            return .tearDown
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
            // The server has the object, whatever was asked meanwhile.
            state = .finished
            return .finish(outcome)
        case (.running(let current), .failure) where current == epoch:
            state = .finished
            return .finish(outcome)
        case (.running, .failure), (.paused, .failure), (.cancelling, .failure):
            // A worker that was told to stop: its error is the stopping.
            return .none
        }
    }

    /// The tear-down after ``cancel()`` is done.
    mutating func cancellationCompleted() -> Action {
        guard state == .cancelling else { return .none }
        state = .finished
        return .finish(.failure(.cancelled()))
    }
}
