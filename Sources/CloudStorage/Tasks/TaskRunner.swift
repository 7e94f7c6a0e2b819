/// The core of every storage task: runs a ``TaskJob`` through the
/// ``TaskStateMachine``, chains its workers, keeps the outcome and those
/// waiting for it, and publishes snapshots.
///
/// ``StorageUploadTask`` and ``StorageDownloadTask`` are thin shells over
/// one runner each. Everything the task owns lives in the state machine's
/// state; this actor only performs the actions the machine returns.
///
/// Pause and cancel reach the job as a ``TaskStop`` reason, and the worker's
/// Swift task is cancelled to abort the request in flight; what stopping
/// means for the job's resources (keep a session, delete it, remove a
/// partial file) is the job's business.
actor TaskRunner<Job: TaskJob>: TaskControl {
    typealias Machine = TaskStateMachine<Job, Worker, Completion>

    /// A successful worker's output with what its terminal snapshot shows.
    struct Completion: Sendable, Equatable {
        let output: Job.Output
        let progress: TaskProgress
        let metadata: StorageMetadata?
    }

    /// One run of the job.
    struct Worker: Sendable {
        let task: Task<Void, Never>
        let stop: TaskStop
    }

    /// The task's snapshots, without the task itself (see ``TaskSnapshot/Content``).
    nonisolated let broadcast: SnapshotBroadcast<TaskSnapshot.Content>
    private var machine: Machine
    private var waiters: [CheckedContinuation<Result<Job.Output, StorageError>, Never>] = []

    /// Creates a runner and starts the job's first worker.
    init(_ job: Job) {
        let start = TaskSnapshot.Content(
            status: .resume, progress: job.initialProgress, metadata: nil, error: nil)
        broadcast = SnapshotBroadcast(initial: start, progressEpoch: Machine.firstEpoch)
        let (machine, action) = Machine.start(job)
        self.machine = machine
        // An actor's initializer cannot perform isolated work: the first
        // worker is started in a task (its `.resume` status is the initial snapshot).
        Task { await self.perform(action) }
    }

    /// The driver of a task whose runner this is.
    nonisolated func driver(for reference: StorageReference) -> StorageTaskDriver<Job.Output> {
        StorageTaskDriver(reference: reference, broadcast: broadcast, control: self)
    }

    // MARK: Observing

    /// The task's outcome, once it has one.
    func result() async -> Result<Job.Output, StorageError> {
        if case .finished(let outcome) = machine.state { return Self.result(of: outcome) }
        return await withCheckedContinuation { waiters.append($0) }
    }

    // MARK: Controlling

    func pause() { perform(machine.pause()) }

    func resume() { perform(machine.resume()) }

    func cancel() { perform(machine.cancel()) }

    // MARK: Driving

    private func perform(_ action: Machine.Action) {
        switch action {
        case .none:
            break
        case .start(let epoch, let job, let previous, let reason):
            if reason == nil, epoch != Machine.firstEpoch {
                broadcast.publishStatus(content(.resume), progressEpoch: epoch)
            }
            machine.started(launch(job, epoch: epoch, after: previous, stop: TaskStop(reason)), epoch: epoch)
        case .stop(let worker, let reason):
            worker?.stop.request(reason)
            worker?.task.cancel()
            if reason == .pause { broadcast.publishStatus(content(.pause), progressEpoch: nil) }
        case .finish(let outcome):
            finish(outcome)
        }
    }

    private func launch(_ job: Job, epoch: UInt64, after previous: Worker?, stop: TaskStop) -> Worker {
        let task = Task {
            // A stopped worker may still be unwinding: never let two touch the task's resources.
            await previous?.task.value
            guard self.shouldRun(epoch: epoch) else { return }
            let outcome: Machine.Outcome
            do throws(StorageError) {
                let output = try await job.run(stop: stop) { [weak self] progress in
                    self?.broadcast.publishProgress(
                        TaskSnapshot.Content(status: .progress, progress: progress, metadata: nil, error: nil),
                        epoch: epoch)
                }
                let (progress, metadata) = job.completion(output)
                outcome = .success(Completion(output: output, progress: progress, metadata: metadata))
            } catch {
                outcome = .failure(error)
            }
            self.workerEnded(epoch: epoch, outcome: outcome)
        }
        return Worker(task: task, stop: stop)
    }

    private func shouldRun(epoch: UInt64) -> Bool {
        machine.shouldRun(epoch: epoch)
    }

    private func workerEnded(epoch: UInt64, outcome: Machine.Outcome) {
        perform(machine.workerEnded(epoch: epoch, outcome: outcome))
    }

    private func finish(_ outcome: Machine.Outcome) {
        let terminal: TaskSnapshot.Content
        switch outcome {
        case .success(let completion):
            terminal = TaskSnapshot.Content(
                status: .success, progress: completion.progress, metadata: completion.metadata, error: nil)
        case .failure(let error):
            terminal = content(.failure, error: error)
        }
        broadcast.finish(with: terminal)
        let result = Self.result(of: outcome)
        let waiting = waiters
        waiters = []
        for waiter in waiting {
            waiter.resume(returning: result)
        }
    }

    private static func result(of outcome: Machine.Outcome) -> Result<Job.Output, StorageError> {
        switch outcome {
        case .success(let completion): .success(completion.output)
        case .failure(let error): .failure(error)
        }
    }

    /// A status snapshot carrying the latest progress.
    private nonisolated func content(_ status: TaskStatus, error: StorageError? = nil) -> TaskSnapshot.Content {
        TaskSnapshot.Content(status: status, progress: broadcast.latest.progress, metadata: nil, error: error)
    }
}
