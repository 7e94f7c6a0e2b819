import Foundation

/// An upload in progress: an actor that owns the upload's state, and that
/// you can watch, pause, resume and cancel.
///
/// ``StorageReference/putData(_:metadata:preconditions:)`` and
/// ``StorageReference/putFile(from:metadata:preconditions:)`` create and start it; it runs
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
/// - Two requests are not aborted by a pause or a cancel but answered first
///   (each within ``StorageConfiguration/requestTimeout``): one that is
///   opening a session, so that the session can be continued or deleted
///   rather than left behind; and a one-request upload whose bytes have all
///   gone out, which the server may store whatever happens to the
///   connection, so that the task ends in success if it did. (Only bytes the
///   transport had not yet reported sent when the cancel came can still
///   reach a server that way: then the object may be stored, whole, after
///   the task ended cancelled.)
public actor StorageUploadTask: StorageTask {
    /// The upload's object, snapshots and controls.
    public nonisolated let driver: StorageTaskDriver<StorageMetadata>

    /// Live snapshot streams, for leak checks in tests.
    nonisolated var subscriberCount: Int { driver.broadcast.subscriberCount }

    private init(driver: StorageTaskDriver<StorageMetadata>) {
        self.driver = driver
    }

    /// Creates and starts an upload.
    static func start(
        reference: StorageReference,
        source: UploadSource,
        metadata: StorageMetadata,
        preconditions: StoragePreconditions = .none
    ) -> StorageUploadTask {
        let engine = UploadEngine(
            storage: reference.storage, path: reference.path, source: source, metadata: metadata,
            preconditions: preconditions)
        return StorageUploadTask(driver: TaskRunner(UploadJob(engine: engine)).driver(for: reference))
    }
}
