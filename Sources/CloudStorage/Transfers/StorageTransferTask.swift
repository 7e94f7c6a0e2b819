/// A transfer of many files or objects in progress — a directory upload, a prefix download,
/// copy or deletion — as one task: watched, paused, resumed and cancelled like a
/// ``StorageUploadTask``, with progress summed over every file.
///
/// ``StorageTransferManager`` creates it; it starts at once. Its value is a
/// ``StorageTransferReport``, one outcome per file: a file that fails does not stop the
/// others (unless ``StorageTransferManager/failFast`` is set), so the task succeeds once every
/// file has ended, however; the report says which failed.
///
/// ```swift
/// let task = manager.uploadDirectory(URL(fileURLWithPath: "/srv/site"), to: "www/")
/// for await snapshot in task.transferSnapshots {
///     print(snapshot.files, snapshot.progress)   // "12/40 files", "1048576/8388608 bytes"
/// }
/// let report = try await task.value
/// print(report.failed.map(\.name))
/// ```
///
/// ## Lifecycle
/// - It first walks the directory or lists the prefix (a listing error fails the task), then
///   runs the files, at most ``StorageTransferManager/maxConcurrentFiles`` at once and within
///   ``StorageTransferManager/memoryBudget``.
/// - ``snapshots`` and ``transferSnapshots`` report the bytes of all files together, never
///   going back, ending at the total.
/// - ``pause()`` pauses the uploads and downloads in flight (they keep their sessions and
///   partial files) and starts nothing more; ``resume()`` resumes them first, then goes on.
///   A server-side copy or a deletion interrupted by a pause runs again.
/// - ``cancel()`` cancels every file in flight or paused (discarding their sessions and
///   partial files) and ends the task with ``StorageErrorCode/cancelled``; ``outcomes`` still
///   lists the files that ended.
public actor StorageTransferTask: StorageTask {
    /// The transfer's bucket, snapshots and controls.
    public nonisolated let driver: StorageTaskDriver<StorageTransferReport>
    private nonisolated let state: TransferState

    init(reference: StorageReference, limits: TransferJob.Limits, state: TransferState) {
        self.state = state
        driver = TaskRunner(TransferJob(limits: limits, state: state)).driver(for: reference)
    }

    /// How many files have ended so far, and how.
    public nonisolated var files: StorageTransferFileCounts { state.counts }

    /// The outcomes of the files that ended so far, in plan order: after ``cancel()``, what
    /// was done before the transfer stopped.
    public nonisolated var outcomes: [StorageTransferOutcome] { state.outcomes }

    /// A new stream of this transfer's snapshots with its file counts.
    ///
    /// The same stream as ``snapshots`` (same ordering and termination rules), each element
    /// carrying the ``files`` counts as they were when it was delivered.
    ///
    /// ```swift
    /// for await snapshot in task.transferSnapshots where snapshot.status == .progress {
    ///     print("\(snapshot.files.done)/\(snapshot.files.total)", snapshot.progress.fractionCompleted)
    /// }
    /// ```
    public nonisolated var transferSnapshots: AsyncStream<StorageTransferSnapshot> {
        let state = state
        return driver.broadcast.subscribe { content in
            StorageTransferSnapshot(
                status: content.status, progress: content.progress, files: state.counts, error: content.error)
        }
    }
}

/// The state of a transfer at one moment: its status, its bytes, and its files.
public struct StorageTransferSnapshot: Sendable, Equatable {
    /// What happened, as for any ``StorageTask``.
    public let status: TaskStatus
    /// Bytes done of the total, over every file.
    public let progress: TaskProgress
    /// Files done, failed and in all.
    public let files: StorageTransferFileCounts
    /// Why the transfer failed (a listing error, or ``StorageErrorCode/cancelled``); set on
    /// ``TaskStatus/failure``.
    public let error: StorageError?

    /// Whether the snapshots are the same, comparing errors by code and message.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.status == rhs.status && lhs.progress == rhs.progress && lhs.files == rhs.files
            && lhs.error?.code == rhs.error?.code && lhs.error?.message == rhs.error?.message
    }
}
