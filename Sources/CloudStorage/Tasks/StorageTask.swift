/// A task that moves an object's bytes and can be watched, paused, resumed
/// and cancelled: ``StorageUploadTask`` and ``StorageDownloadTask``.
///
/// Every member is implemented once, here, on the task's ``driver``; the
/// task types add only what their value is.
///
/// ```swift
/// func watch(_ task: some StorageTask) async {
///     for await snapshot in task.snapshots {
///         print(snapshot.status, snapshot.progress)
///     }
/// }
/// ```
public protocol StorageTask<Output>: Actor {
    /// What the task produces when it succeeds.
    associatedtype Output: Sendable

    /// The machinery behind the task, which the SDK's task types provide.
    nonisolated var driver: StorageTaskDriver<Output> { get }
}

extension StorageTask {
    /// The object the task works on.
    public nonisolated var reference: StorageReference { driver.reference }

    /// A new stream of this task's snapshots.
    ///
    /// The stream yields the latest snapshot first, then every later one.
    /// Status changes (``TaskStatus/resume``, ``TaskStatus/pause``,
    /// ``TaskStatus/success``, ``TaskStatus/failure``) are never dropped;
    /// progress snapshots may be merged when the consumer is slower than the
    /// task. The stream finishes right after the terminal snapshot. Any
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
        // Each stream holds the task; the broadcast itself never does, so a finished task can be freed.
        let reference = driver.reference
        return driver.broadcast.subscribe { content in TaskSnapshot(content, reference: reference, task: self) }
    }

    /// The latest snapshot.
    public nonisolated var snapshot: TaskSnapshot {
        TaskSnapshot(driver.broadcast.latest, reference: driver.reference, task: self)
    }

    /// The task's value once it succeeds: the stored object's metadata for
    /// an upload, the bytes or the file's URL for a download.
    ///
    /// Waits until the task ends. Like `Task.value`, cancelling the Swift
    /// task that waits does not cancel this task; call ``cancel()`` (or use
    /// the `async` methods such as ``StorageReference/putDataAsync(_:metadata:preconditions:onProgress:)``,
    /// which do both).
    ///
    /// ```swift
    /// let metadata = try await ref.putData(data).value
    /// ```
    ///
    /// - Throws: The ``StorageError`` the task ended with.
    public var value: Output {
        get async throws(StorageError) {
            try await result().get()
        }
    }

    /// The task's outcome, once it has one.
    func result() async -> Result<Output, StorageError> {
        await driver.control.result()
    }

    /// Stops transferring until ``resume()``, keeping what can be continued
    /// (an upload's server session, a download's bytes).
    ///
    /// Aborts the request in flight and publishes ``TaskStatus/pause``. Does
    /// nothing unless the task is running (so pausing a finished or paused
    /// task changes nothing).
    public func pause() async {
        await driver.control.pause()
    }

    /// Continues a paused task from what it kept: an upload from what the
    /// server committed, a download from the last byte received.
    ///
    /// Publishes ``TaskStatus/resume``. Does nothing unless the task is paused.
    public func resume() async {
        await driver.control.resume()
    }

    /// Stops the task for good and discards what it built up: an upload's
    /// server session, a download's partial file.
    ///
    /// The task ends in ``TaskStatus/failure`` with
    /// ``StorageErrorCode/cancelled`` once the request in flight has stopped
    /// and the discarding is done — or in ``TaskStatus/success`` if the work
    /// was already complete. Does nothing after the task ended. (See
    /// ``StorageUploadTask`` for the two upload requests a cancel waits for.)
    public func cancel() async {
        await driver.control.cancel()
    }
}

/// The machinery behind a ``StorageTask``: its object, its snapshots and its
/// controls. Only the SDK creates one; it has no public members.
public struct StorageTaskDriver<Output: Sendable>: Sendable {
    let reference: StorageReference
    /// The task's snapshots, without the task itself (see ``TaskSnapshot/Content``).
    let broadcast: SnapshotBroadcast<TaskSnapshot.Content>
    let control: any TaskControl<Output>
}

/// The controls of a ``TaskRunner``, whatever its job.
protocol TaskControl<Output>: Actor {
    associatedtype Output: Sendable

    func result() async -> Result<Output, StorageError>
    func pause()
    func resume()
    func cancel()
}
