import Synchronization

/// A download as a task's job: the engine, what its runs have received so
/// far, and the steps that open and close the destination.
///
/// It owns what a stop means for the destination: a pause keeps the bytes
/// written so that the next run continues from them with a `Range` request;
/// a cancel or a failure discards them (and any temporary file) before the
/// run returns.
struct DownloadJob<Output: Sendable & Equatable>: TaskJob {
    let engine: DownloadEngine
    let checkpoint: DownloadCheckpoint
    /// Runs before the first request (creating a temporary file).
    let prepare: @Sendable () async throws(StorageError) -> Void
    /// Produces the value once every byte arrived and was verified.
    let complete: @Sendable () async throws(StorageError) -> Output
    /// Whether `prepare` has run (runs are sequential, but each is a new task).
    private let prepared = PreparedFlag()

    init(
        engine: DownloadEngine,
        prepare: @escaping @Sendable () async throws(StorageError) -> Void,
        complete: @escaping @Sendable () async throws(StorageError) -> Output
    ) {
        self.engine = engine
        checkpoint = engine.makeCheckpoint()
        self.prepare = prepare
        self.complete = complete
    }

    var initialProgress: TaskProgress {
        TaskProgress(completedUnitCount: 0, totalUnitCount: 0)
    }

    func run(
        stop: TaskStop,
        progress: @escaping @Sendable (TaskProgress) -> Void
    ) async throws(StorageError) -> Output {
        do throws(StorageError) {
            if stop.reason == .cancel { throw .cancelled() }
            if !prepared.isSet {
                try await prepare()
                prepared.set()
            }
            _ = try await engine.run(checkpoint: checkpoint) { received, total in
                progress(TaskProgress(completedUnitCount: received, totalUnitCount: total ?? 0))
            }
            // Every byte arrived and was verified: a pause or cancel that came meanwhile is too
            // late (as for an upload the server stored). Resuming would ask for a range past the end.
            return try await complete()
        } catch {
            // Nothing outlives a download that will not go on; a pause keeps what arrived.
            if stop.reason != .pause { await engine.destination.discard() }
            throw error
        }
    }

    func completion(_ output: Output) -> (progress: TaskProgress, metadata: StorageMetadata?) {
        let received = checkpoint.progress.received
        let total = checkpoint.machine.withLock { $0.objectSize }
        return (TaskProgress(completedUnitCount: received, totalUnitCount: total ?? received), nil)
    }
}

private final class PreparedFlag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    func set() { value.withLock { $0 = true } }
}
