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
