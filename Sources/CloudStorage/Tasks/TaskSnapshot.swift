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

/// What a ``TaskSnapshot`` reports.
public enum TaskStatus: Sendable, Hashable, CustomStringConvertible {
    /// The task started, or resumed after a pause.
    case resume
    /// More bytes were transferred.
    case progress
    /// The task paused; nothing is transferred until it is resumed.
    case pause
    /// The task ended with the object stored.
    case success
    /// The task ended with an error, or was cancelled.
    case failure

    /// Whether the task has ended.
    public var isTerminal: Bool { self == .success || self == .failure }

    /// The status's name, such as `progress`.
    public var description: String {
        switch self {
        case .resume: "resume"
        case .progress: "progress"
        case .pause: "pause"
        case .success: "success"
        case .failure: "failure"
        }
    }
}

/// Bytes done out of bytes in all.
public struct TaskProgress: Sendable, Hashable, CustomStringConvertible {
    /// Bytes transferred so far.
    public let completedUnitCount: Int64
    /// Bytes in all, or 0 before the size is known.
    public let totalUnitCount: Int64

    /// Creates a progress value.
    ///
    /// - Parameters:
    ///   - completedUnitCount: Bytes transferred.
    ///   - totalUnitCount: Bytes in all.
    public init(completedUnitCount: Int64, totalUnitCount: Int64) {
        self.completedUnitCount = completedUnitCount
        self.totalUnitCount = totalUnitCount
    }

    /// The completed fraction, from 0 to 1; 0 whenever ``totalUnitCount`` is 0,
    /// that is before the size is known and for an empty object even once it
    /// is stored (check the snapshot's status to tell those apart).
    public var fractionCompleted: Double {
        guard totalUnitCount > 0 else { return 0 }
        return min(1, Double(completedUnitCount) / Double(totalUnitCount))
    }

    /// `completed/total bytes`.
    public var description: String { "\(completedUnitCount)/\(totalUnitCount) bytes" }
}
