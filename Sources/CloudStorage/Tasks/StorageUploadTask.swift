import Foundation

/// An upload in progress: an actor that owns the upload's state, and that
/// you can watch, pause, resume and cancel.
///
/// ``StorageReference/putData(_:metadata:)`` and
/// ``StorageReference/putFile(from:metadata:)`` create and start it; it runs
/// until it ends whether or not anything holds on to it.
///
/// ```swift
/// let task = spaceRef.putFile(from: localFile)
/// Task {
///     for await snapshot in task.snapshots where snapshot.status == .progress {
///         print(snapshot.progress.fractionCompleted)
///     }
/// }
/// await task.pause()
/// await task.resume()
/// let metadata = try await task.value
/// ```
///
/// ## Lifecycle
/// - It starts at once and publishes ``TaskStatus/resume``, then
///   ``TaskStatus/progress`` as bytes go out.
/// - ``pause()`` stops sending, aborting the request in flight, and keeps the
///   server's upload session; ``resume()`` asks the server how much it kept
///   and continues from there. Each publishes its status. (An upload of at
///   most ``StorageConfiguration/multipartUploadThreshold`` bytes goes in one
///   request and has no session: resuming it sends that request again.)
/// - Failures that may pass (time-outs, throttling, server errors, broken
///   connections) are retried with back-off, continuing from the server's
///   committed offset, until ``StorageConfiguration/maxUploadRetryTime``
///   runs out.
/// - It ends exactly once, in ``TaskStatus/success`` or
///   ``TaskStatus/failure``; every snapshot stream finishes right after.
///   ``cancel()`` ends it in failure with ``StorageErrorCode/cancelled`` and
///   discards the server session — unless the object was already stored, in
///   which case it ends in success.
public actor StorageUploadTask: StorageTask {
    /// The object being uploaded to.
    public nonisolated let reference: StorageReference

    private nonisolated let broadcast: SnapshotBroadcast<TaskSnapshot.Content>
    private nonisolated let checkpoint = UploadCheckpoint()
    private nonisolated let knownSize: Int64?
    /// Released when the task ends, with the bytes of a `Data` source.
    private var engine: UploadEngine?
    private var machine = StateMachine()
    /// The last worker started; a new one waits for it to stop first.
    private var worker: Task<Void, Never>?
    private var outcome: Result<StorageMetadata, StorageError>?
    private var waiters: [CheckedContinuation<Result<StorageMetadata, StorageError>, Never>] = []

    /// Creates and starts an upload.
    static func start(
        reference: StorageReference,
        source: UploadSource,
        metadata: StorageMetadata
    ) -> StorageUploadTask {
        let task = StorageUploadTask(reference: reference, source: source, metadata: metadata)
        Task { await task.begin() }
        return task
    }

    private init(reference: StorageReference, source: UploadSource, metadata: StorageMetadata) {
        self.reference = reference
        self.engine = UploadEngine(storage: reference.storage, path: reference.path, source: source, metadata: metadata)
        if case .data(let data) = source {
            knownSize = Int64(data.count)
        } else {
            knownSize = nil
        }
        let start = TaskSnapshot.Content(
            status: .resume,
            progress: TaskProgress(completedUnitCount: 0, totalUnitCount: knownSize ?? 0),
            metadata: nil,
            error: nil
        )
        broadcast = SnapshotBroadcast(initial: start, progressEpoch: StateMachine.firstEpoch)
    }

    // MARK: Observing

    /// A new stream of this task's snapshots.
    ///
    /// The stream yields the latest snapshot first, then every later one.
    /// Status changes (``TaskStatus/resume``, ``TaskStatus/pause``,
    /// ``TaskStatus/success``, ``TaskStatus/failure``) are never dropped;
    /// progress snapshots may be merged when the consumer is slower than the
    /// upload. The stream finishes right after the terminal snapshot. Any
    /// number of streams may be consumed at once, and getting one needs no
    /// `await`, so nothing that happens afterwards can be missed.
    ///
    /// ```swift
    /// for await snapshot in task.snapshots {
    ///     print(snapshot.status, snapshot.progress)
    /// }
    /// // here the task has ended
    /// ```
    public nonisolated var snapshots: AsyncStream<TaskSnapshot> {
        // Each stream holds the task (through `self` here); the broadcast itself never does.
        broadcast.subscribe { [reference] content in TaskSnapshot(content, reference: reference, task: self) }
    }

    /// Live snapshot streams, for leak checks in tests.
    nonisolated var subscriberCount: Int { broadcast.subscriberCount }

    /// The latest snapshot.
    public nonisolated var snapshot: TaskSnapshot {
        TaskSnapshot(broadcast.latest, reference: reference, task: self)
    }

    /// The stored object's metadata, once the upload succeeds.
    ///
    /// Waits until the task ends. Like `Task.value`, cancelling the Swift
    /// task that waits does not cancel the upload; call ``cancel()`` (or use
    /// ``StorageReference/putDataAsync(_:metadata:)``, which does both).
    ///
    /// - Throws: The ``StorageError`` the upload ended with.
    public var value: StorageMetadata {
        get async throws(StorageError) {
            try await result().get()
        }
    }

    func result() async -> Result<StorageMetadata, StorageError> {
        if let outcome { return outcome }
        return await withCheckedContinuation { waiters.append($0) }
    }

    // MARK: Controlling

    /// Stops sending until ``resume()``, keeping the server's upload session.
    ///
    /// Aborts the request in flight and publishes ``TaskStatus/pause``. Does
    /// nothing unless the task is running (so pausing a finished or paused
    /// task changes nothing).
    public func pause() {
        perform(machine.pause())
    }

    /// Continues a paused upload from what the server kept.
    ///
    /// Publishes ``TaskStatus/resume``. Does nothing unless the task is paused.
    public func resume() {
        perform(machine.resume())
    }

    /// Stops the upload for good and discards what the server holds of it.
    ///
    /// The task ends in ``TaskStatus/failure`` with
    /// ``StorageErrorCode/cancelled`` once the request in flight has stopped
    /// and the server session is deleted — or in ``TaskStatus/success`` if the
    /// server had already stored the whole object. Two requests are not
    /// aborted but answered first (each within
    /// ``StorageConfiguration/requestTimeout``): one that is opening a
    /// session, so that the session can be deleted rather than left behind;
    /// and a one-request upload whose bytes have all gone out, which the
    /// server may store whatever happens to the connection, so that the task
    /// ends in success if it did. (Only bytes the transport had not yet
    /// reported sent when the cancel came can still reach a server that way:
    /// then the object may be stored, whole, after the task ended
    /// cancelled.) Does nothing after the task ended. ``pause()`` waits the
    /// same way.
    public func cancel() {
        perform(machine.cancel())
    }

    // MARK: Driving

    private func begin() {
        guard worker == nil, machine.state == .running(epoch: StateMachine.firstEpoch) else { return }
        launchWorker(epoch: StateMachine.firstEpoch)
    }

    private func perform(_ action: StateMachine.Action) {
        switch action {
        case .none:
            break
        case .startWorker(let epoch):
            broadcast.publishStatus(makeContent(.resume), progressEpoch: epoch)
            launchWorker(epoch: epoch)
        case .pauseWorker:
            worker?.cancel()
            broadcast.publishStatus(makeContent(.pause), progressEpoch: nil)
        case .tearDown:
            let stopping = worker
            stopping?.cancel()
            Task {
                await stopping?.value
                await self.discardSession()
            }
        case .finish(let finalOutcome):
            finish(finalOutcome)
        }
    }

    private func launchWorker(epoch: UInt64) {
        guard let engine else { return }
        let previous = worker
        let checkpoint = checkpoint
        worker = Task {
            // A paused worker may still be unwinding: never let two touch the session.
            await previous?.value
            let outcome: StateMachine.Outcome
            do throws(StorageError) {
                let metadata = try await engine.run(checkpoint: checkpoint) { [weak self] completed in
                    guard let self else { return }
                    self.broadcast.publishProgress(self.makeContent(.progress, completed: completed), epoch: epoch)
                }
                outcome = .success(metadata)
            } catch {
                outcome = .failure(error)
            }
            self.workerEnded(epoch: epoch, outcome: outcome)
        }
    }

    private func workerEnded(epoch: UInt64, outcome: StateMachine.Outcome) {
        perform(machine.workerEnded(epoch: epoch, outcome: outcome))
    }

    private func discardSession() async {
        guard machine.state == .cancelling else { return }
        if let session = checkpoint.session, let engine {
            var runner = RequestRunner(storage: reference.storage)
            await engine.discardSession(session, &runner)
            checkpoint.session = nil
        }
        perform(machine.cancellationCompleted())
    }

    private func finish(_ finalOutcome: StateMachine.Outcome) {
        let result: Result<StorageMetadata, StorageError>
        let terminal: TaskSnapshot.Content
        switch finalOutcome {
        case .success(let metadata):
            result = .success(metadata)
            terminal = makeContent(.success, completed: metadata.size, metadata: metadata)
        case .failure(let error):
            result = .failure(error)
            terminal = makeContent(.failure, error: error)
        }
        outcome = result
        checkpoint.source = nil  // closes the file once no request holds it
        engine = nil  // and lets go of a `Data` source's bytes
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
        metadata: StorageMetadata? = nil,
        error: StorageError? = nil
    ) -> TaskSnapshot.Content {
        let total = checkpoint.source?.size ?? knownSize ?? metadata?.size ?? 0
        let done = completed ?? broadcast.latest.progress.completedUnitCount
        return TaskSnapshot.Content(
            status: status,
            progress: TaskProgress(completedUnitCount: done, totalUnitCount: total),
            metadata: metadata,
            error: error
        )
    }
}
