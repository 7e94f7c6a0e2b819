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

    private nonisolated let runner: TaskRunner<DownloadJob<Output>>

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
        let job = DownloadJob(engine: engine, prepare: prepare, complete: complete)
        return StorageDownloadTask(reference: reference, runner: TaskRunner(job))
    }

    private init(reference: StorageReference, runner: TaskRunner<DownloadJob<Output>>) {
        self.reference = reference
        self.runner = runner
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
        runner.snapshots(of: self, at: reference)
    }

    /// The latest snapshot.
    public nonisolated var snapshot: TaskSnapshot {
        runner.snapshot(of: self, at: reference)
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
        await runner.result()
    }

    // MARK: Controlling

    /// Stops downloading until ``resume()``, keeping what arrived.
    ///
    /// Publishes ``TaskStatus/pause``. Does nothing unless the task is running.
    public func pause() async {
        await runner.pause()
    }

    /// Continues a paused download from the last byte received.
    ///
    /// Publishes ``TaskStatus/resume``. Does nothing unless the task is paused.
    public func resume() async {
        await runner.resume()
    }

    /// Stops the download for good and removes what it wrote.
    ///
    /// The task ends in ``TaskStatus/failure`` with
    /// ``StorageErrorCode/cancelled`` once the request in flight has stopped
    /// (or in ``TaskStatus/success`` if it had already completed). Does
    /// nothing after the task ended.
    public func cancel() async {
        await runner.cancel()
    }
}
