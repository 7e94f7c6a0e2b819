import Foundation

/// A download in progress: an actor that owns the download's state, and that
/// you can watch, pause, resume and cancel — the same design as
/// ``StorageUploadTask``.
///
/// ``StorageReference/getData(maxSize:)`` creates a `StorageDownloadTask<Data>`
/// and ``StorageReference/write(toFile:)`` a `StorageDownloadTask<URL>`; either
/// starts at once and runs until it ends, whether or not anything holds on to it.
///
/// ```swift
/// let task = spaceRef.write(toFile: URL(fileURLWithPath: "/tmp/space.jpg"))
/// for await snapshot in task.snapshots where snapshot.status == .progress {
///     print(snapshot.progress.fractionCompleted)
/// }
/// let fileURL = try await task.value
/// ```
///
/// ## Lifecycle
/// - It publishes ``TaskStatus/resume``, then ``TaskStatus/progress`` as bytes arrive.
/// - ``pause()`` aborts the request in flight and keeps what arrived;
///   ``resume()`` continues with a `Range` request from there.
/// - Failures that may pass (time-outs, throttling, server errors, broken
///   connections) are retried with back-off from the last byte received,
///   until ``StorageConfiguration/maxUploadRetryTime`` runs out.
/// - When the server reports the object's CRC32C, the bytes are checked
///   against it; a mismatch ends the task with
///   ``StorageErrorCode/nonMatchingChecksum``.
/// - It ends exactly once, in ``TaskStatus/success`` or ``TaskStatus/failure``;
///   every snapshot stream finishes right after. ``cancel()`` ends it with
///   ``StorageErrorCode/cancelled``. A task that does not succeed leaves no
///   file at the target path and removes its temporary file.
public actor StorageDownloadTask<Output: Sendable & Equatable>: StorageTask {
    /// The object being downloaded.
    public nonisolated let reference: StorageReference

    typealias StateMachine = TaskStateMachine<Output>

    private nonisolated let broadcast: SnapshotBroadcast<TaskSnapshot.Content>
    private nonisolated let checkpoint = DownloadCheckpoint()
    private let engine: DownloadEngine
    /// Turns a complete, verified download into the task's value.
    private let complete: @Sendable () async throws(StorageError) -> Output
    private var machine = StateMachine()
    private var worker: Task<Void, Never>?
    private var outcome: Result<Output, StorageError>?
    private var waiters: [CheckedContinuation<Result<Output, StorageError>, Never>] = []

    /// Creates and starts a download.
    ///
    /// - Parameters:
    ///   - prepare: Runs before the first request (creating a temporary file).
    ///   - complete: Produces the value once every byte arrived and was verified.
    static func start(
        reference: StorageReference,
        destination: any DownloadDestination,
        maxSize: Int64?,
        prepare: @escaping @Sendable () async throws(StorageError) -> Void,
        complete: @escaping @Sendable () async throws(StorageError) -> Output
    ) -> StorageDownloadTask<Output> {
        let engine = DownloadEngine(
            storage: reference.storage, path: reference.path, destination: destination, maxSize: maxSize)
        let task = StorageDownloadTask(reference: reference, engine: engine, complete: complete)
        Task { await task.begin(prepare) }
        return task
    }

    private init(
        reference: StorageReference,
        engine: DownloadEngine,
        complete: @escaping @Sendable () async throws(StorageError) -> Output
    ) {
        self.reference = reference
        self.engine = engine
        self.complete = complete
        let start = TaskSnapshot.Content(
            status: .resume, progress: TaskProgress(completedUnitCount: 0, totalUnitCount: 0), metadata: nil,
            error: nil)
        broadcast = SnapshotBroadcast(initial: start, progressEpoch: StateMachine.firstEpoch)
    }

    // MARK: Observing

    /// A new stream of this task's snapshots, with the rules of
    /// ``StorageUploadTask/snapshots``: the latest first, status changes never
    /// dropped, progress possibly merged, finished right after the terminal snapshot.
    ///
    /// ```swift
    /// for await snapshot in task.snapshots {
    ///     print(snapshot.status, snapshot.progress)
    /// }
    /// ```
    public nonisolated var snapshots: AsyncStream<TaskSnapshot> {
        broadcast.subscribe { [reference] content in TaskSnapshot(content, reference: reference, task: self) }
    }

    /// Live snapshot streams, for leak checks in tests.
    nonisolated var subscriberCount: Int { broadcast.subscriberCount }

    /// The latest snapshot.
    public nonisolated var snapshot: TaskSnapshot {
        TaskSnapshot(broadcast.latest, reference: reference, task: self)
    }

    /// The downloaded value once the download succeeds: the bytes for
    /// ``StorageReference/getData(maxSize:)``, the file's URL for
    /// ``StorageReference/write(toFile:)``.
    ///
    /// Waits until the task ends. Cancelling the Swift task that waits does
    /// not cancel the download; call ``cancel()`` (or use
    /// ``StorageReference/data(maxSize:)``, which does both).
    ///
    /// ```swift
    /// let data = try await ref.getData(maxSize: 1 << 20).value
    /// ```
    ///
    /// - Throws: The ``StorageError`` the download ended with.
    public var value: Output {
        get async throws(StorageError) {
            try await result().get()
        }
    }

    func result() async -> Result<Output, StorageError> {
        if let outcome { return outcome }
        return await withCheckedContinuation { waiters.append($0) }
    }

    // MARK: Controlling

    /// Stops downloading until ``resume()``, keeping what arrived.
    ///
    /// Publishes ``TaskStatus/pause``. Does nothing unless the task is running.
    public func pause() {
        perform(machine.pause())
    }

    /// Continues a paused download from the last byte received.
    ///
    /// Publishes ``TaskStatus/resume``. Does nothing unless the task is paused.
    public func resume() {
        perform(machine.resume())
    }

    /// Stops the download for good and removes what it wrote.
    ///
    /// The task ends in ``TaskStatus/failure`` with
    /// ``StorageErrorCode/cancelled`` once the request in flight has stopped
    /// (or in ``TaskStatus/success`` if it had already completed). Does
    /// nothing after the task ended.
    public func cancel() {
        perform(machine.cancel())
    }

    // MARK: Driving

    private func begin(_ prepare: @escaping @Sendable () async throws(StorageError) -> Void) {
        guard worker == nil, machine.state == .running(epoch: StateMachine.firstEpoch) else { return }
        launchWorker(epoch: StateMachine.firstEpoch, prepare: prepare)
    }

    private func perform(_ action: StateMachine.Action) {
        switch action {
        case .none:
            break
        case .startWorker(let epoch):
            broadcast.publishStatus(makeContent(.resume), progressEpoch: epoch)
            launchWorker(epoch: epoch, prepare: nil)
        case .pauseWorker:
            worker?.cancel()
            broadcast.publishStatus(makeContent(.pause), progressEpoch: nil)
        case .tearDown:
            let stopping = worker
            stopping?.cancel()
            let destination = engine.destination
            Task {
                await stopping?.value
                await destination.discard()
                self.cancellationCompleted()
            }
        case .finish(let finalOutcome):
            finish(finalOutcome)
        }
    }

    private func launchWorker(epoch: UInt64, prepare: (@Sendable () async throws(StorageError) -> Void)?) {
        let previous = worker
        let (engine, checkpoint, complete) = (engine, checkpoint, complete)
        worker = Task {
            // A paused worker may still be unwinding: never let two write at once.
            await previous?.value
            let outcome: StateMachine.Outcome
            do throws(StorageError) {
                try await prepare?()
                _ = try await engine.run(checkpoint: checkpoint) { [weak self] received, total in
                    guard let self else { return }
                    self.broadcast.publishProgress(
                        self.makeContent(.progress, completed: received, total: total), epoch: epoch)
                }
                if Task.isCancelled { throw .cancelled() }
                outcome = .success(try await complete())
            } catch {
                // A failure leaves nothing behind before anyone learns of it; a pause
                // (cancelled) keeps what arrived, and a cancel discards it in its tear-down.
                if error.code != .cancelled { await engine.destination.discard() }
                outcome = .failure(error)
            }
            self.workerEnded(epoch: epoch, outcome: outcome)
        }
    }

    private func workerEnded(epoch: UInt64, outcome: StateMachine.Outcome) {
        perform(machine.workerEnded(epoch: epoch, outcome: outcome))
    }

    private func cancellationCompleted() {
        perform(machine.cancellationCompleted())
    }

    private func finish(_ finalOutcome: StateMachine.Outcome) {
        let result: Result<Output, StorageError>
        let terminal: TaskSnapshot.Content
        switch finalOutcome {
        case .success(let value):
            result = .success(value)
            terminal = makeContent(.success)
        case .failure(let error):
            result = .failure(error)
            terminal = makeContent(.failure, error: error)
            // No partial file outlives a failed download (usually discarded already).
            let destination = engine.destination
            Task { await destination.discard() }
        }
        outcome = result
        broadcast.finish(with: terminal)
        let waiting = waiters
        waiters = []
        for waiter in waiting {
            waiter.resume(returning: result)
        }
    }

    private nonisolated func makeContent(
        _ status: TaskStatus,
        completed: Int64? = nil,
        total: Int64? = nil,
        error: StorageError? = nil
    ) -> TaskSnapshot.Content {
        let latest = broadcast.latest.progress
        let done = completed ?? checkpoint.received
        let size = total ?? (latest.totalUnitCount > 0 ? latest.totalUnitCount : (status == .success ? done : 0))
        return TaskSnapshot.Content(
            status: status,
            progress: TaskProgress(completedUnitCount: done, totalUnitCount: size),
            metadata: nil,
            error: error
        )
    }
}
