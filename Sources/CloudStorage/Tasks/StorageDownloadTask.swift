import Foundation

/// A download in progress: an actor that owns the download's state, and that
/// you can watch, pause, resume and cancel — the same design as
/// ``StorageUploadTask``.
///
/// ``StorageReference/getData(maxSize:preconditions:)`` creates a `StorageDownloadTask<Data>`
/// and ``StorageReference/write(toFile:preconditions:)`` a `StorageDownloadTask<URL>`; either
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
///   ``resume()`` continues with a `Range` request from there. A sliced file
///   download (``StorageConfiguration/Downloads``) does so for every slice,
///   and its progress counts the bytes of all of them.
/// - Failures that may pass (time-outs, throttling, server errors, broken
///   connections) are retried with back-off from the last byte received,
///   until ``StorageConfiguration/Retry/maxUploadTime`` runs out.
/// - When the server reports the object's CRC32C, the bytes are checked
///   against it; a mismatch ends the task with
///   ``StorageErrorCode/nonMatchingChecksum``.
/// - It ends exactly once, in ``TaskStatus/success`` or ``TaskStatus/failure``;
///   every snapshot stream finishes right after. ``cancel()`` ends it with
///   ``StorageErrorCode/cancelled``. A task that does not succeed leaves no
///   file at the target path and removes its temporary file.
public actor StorageDownloadTask<Output: Sendable & Equatable>: StorageTask {
    /// The download's object, snapshots and controls.
    public nonisolated let driver: StorageTaskDriver<Output>

    private init(driver: StorageTaskDriver<Output>) {
        self.driver = driver
    }

    /// Creates and starts a download.
    ///
    /// - Parameters:
    ///   - prepare: Runs before the first request (creating a temporary file).
    ///   - complete: Produces the value once every byte arrived and was verified.
    static func start(
        reference: StorageReference,
        destination: any DownloadDestination,
        maxSize: Int64?,
        preconditions: StoragePreconditions = .none,
        range: ByteRange? = nil,
        prepare: @escaping @Sendable () async throws(StorageError) -> Void,
        complete: @escaping @Sendable () async throws(StorageError) -> Output
    ) -> StorageDownloadTask<Output> {
        let engine = DownloadEngine(
            storage: reference.storage, path: reference.path, generation: reference.generation,
            destination: destination, maxSize: maxSize, preconditions: preconditions, range: range)
        let job = DownloadJob(engine: engine, prepare: prepare, complete: complete)
        return StorageDownloadTask(driver: TaskRunner(job).driver(for: reference))
    }
}
