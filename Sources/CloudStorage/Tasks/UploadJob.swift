/// An upload as a task's job: the engine, and what its runs have achieved so
/// far (the opened source, the server session, the committed offset).
struct UploadJob: TaskJob {
    let engine: UploadEngine
    let checkpoint = UploadCheckpoint()
    /// The size when it is known before the source is opened (a `Data` source, or a stream's declared size).
    let knownSize: Int64?

    init(engine: UploadEngine) {
        self.engine = engine
        if case .data(let data) = engine.source {
            knownSize = Int64(data.count)
        } else if case .stream(let stream) = engine.source {
            knownSize = stream.declaredSize
        } else {
            knownSize = nil
        }
    }

    var initialProgress: TaskProgress {
        TaskProgress(completedUnitCount: 0, totalUnitCount: knownSize ?? 0)
    }

    func run(
        stop: TaskStop,
        progress: @escaping @Sendable (TaskProgress) -> Void
    ) async throws(StorageError) -> StorageMetadata {
        let (checkpoint, knownSize) = (checkpoint, knownSize)
        return try await engine.run(checkpoint: checkpoint, stop: stop) { completed in
            let total = checkpoint.source.map { $0.totalIfKnown ?? 0 } ?? knownSize ?? 0
            progress(TaskProgress(completedUnitCount: completed, totalUnitCount: total))
        }
    }

    func completion(_ metadata: StorageMetadata) -> (progress: TaskProgress, metadata: StorageMetadata?) {
        (TaskProgress(completedUnitCount: metadata.size, totalUnitCount: metadata.size), metadata)
    }
}
