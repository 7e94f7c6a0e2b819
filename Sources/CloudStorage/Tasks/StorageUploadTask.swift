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

    private nonisolated let runner: TaskRunner<UploadJob>

    /// Creates and starts an upload.
    static func start(
        reference: StorageReference,
        source: UploadSource,
        metadata: StorageMetadata
    ) -> StorageUploadTask {
        let engine = UploadEngine(storage: reference.storage, path: reference.path, source: source, metadata: metadata)
        return StorageUploadTask(reference: reference, runner: TaskRunner(UploadJob(engine: engine)))
    }

    private init(reference: StorageReference, runner: TaskRunner<UploadJob>) {
        self.reference = reference
        self.runner = runner
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
        runner.snapshots(of: self, at: reference)
    }

    /// Live snapshot streams, for leak checks in tests.
    nonisolated var subscriberCount: Int { runner.broadcast.subscriberCount }

    /// The latest snapshot.
    public nonisolated var snapshot: TaskSnapshot {
        runner.snapshot(of: self, at: reference)
    }

    /// The stored object's metadata, once the upload succeeds.
    ///
    /// Waits until the task ends. Like `Task.value`, cancelling the Swift
    /// task that waits does not cancel the upload; call ``cancel()`` (or use
    /// ``StorageReference/putDataAsync(_:metadata:onProgress:)``, which does both).
    ///
    /// - Throws: The ``StorageError`` the upload ended with.
    public var value: StorageMetadata {
        get async throws(StorageError) {
            try await runner.result().get()
        }
    }

    func result() async -> Result<StorageMetadata, StorageError> {
        await runner.result()
    }

    // MARK: Controlling

    /// Stops sending until ``resume()``, keeping the server's upload session.
    ///
    /// Aborts the request in flight and publishes ``TaskStatus/pause``. Does
    /// nothing unless the task is running (so pausing a finished or paused
    /// task changes nothing).
    public func pause() async {
        await runner.pause()
    }

    /// Continues a paused upload from what the server kept.
    ///
    /// Publishes ``TaskStatus/resume``. Does nothing unless the task is paused.
    public func resume() async {
        await runner.resume()
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
    public func cancel() async {
        await runner.cancel()
    }
}
