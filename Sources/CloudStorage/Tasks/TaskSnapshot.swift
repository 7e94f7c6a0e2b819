/// The state of a storage task at one moment, as its observers see it.
///
/// ```swift
/// for await snapshot in task.snapshots {
///     switch snapshot.status {
///     case .progress:
///         print("\(Int(snapshot.progress.fractionCompleted * 100))%")
///     case .success:
///         print("stored", snapshot.metadata?.size ?? 0, "bytes")
///     case .failure:
///         print("failed:", snapshot.error!)
///     case .resume, .pause:
///         break
///     }
/// }
/// ```
public struct TaskSnapshot: Sendable {
    /// What happened: the task started or resumed, made progress, paused,
    /// or ended.
    public let status: TaskStatus
    /// How many bytes are done out of how many.
    public let progress: TaskProgress
    /// The object's metadata as the server stored it; set on ``TaskStatus/success``.
    public let metadata: StorageMetadata?
    /// Why the task failed; set on ``TaskStatus/failure``.
    public let error: StorageError?
    /// The object the task works on.
    public let reference: StorageReference
    /// The task itself.
    public let task: any StorageTask
}

extension TaskSnapshot {
    /// A snapshot without its task and reference: what a task's broadcast
    /// keeps, so that nothing it stores points back at the task (which owns
    /// the broadcast) and a finished task can be freed.
    struct Content: Sendable {
        var status: TaskStatus
        var progress: TaskProgress
        var metadata: StorageMetadata?
        var error: StorageError?
    }

    init(_ content: Content, reference: StorageReference, task: any StorageTask) {
        self.init(
            status: content.status,
            progress: content.progress,
            metadata: content.metadata,
            error: content.error,
            reference: reference,
            task: task
        )
    }
}
