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
///   most ``StorageConfiguration/Uploads/multipartThreshold`` bytes goes in one
///   request and has no session: resuming it sends that request again.)
/// - Failures that may pass (time-outs, throttling, server errors, broken
///   connections) are retried with back-off, continuing from the server's
///   committed offset, until ``StorageConfiguration/Retry/maxUploadTime``
///   runs out.
/// - It ends exactly once, in ``TaskStatus/success`` or
///   ``TaskStatus/failure``; every snapshot stream finishes right after.
///   ``cancel()`` ends it in failure with ``StorageErrorCode/cancelled`` and
///   discards the server session — unless the object was already stored, in
///   which case it ends in success.
/// - A failure discards the server session too, with one exception: a file
///   upload whose retries ran out (``StorageErrorCode/retryLimitExceeded``,
///   or ``StorageErrorCode/quotaExceeded`` when the server kept throttling)
///   leaves its session open, so that ``Storage/resumeUpload(_:from:)`` can
///   finish it once the network or the server is back; ``resumableSession``
///   still describes it after the failure, and the error's message says it
///   was kept. The server discards it when it expires (about a week on
///   Google Cloud Storage). Uploads of `Data` or of a stream, which no other
///   process can continue, and failures that retrying would not mend (the
///   file changed, a checksum or precondition failed, credentials were
///   refused, the protocol was broken) discard it.
/// - Two requests are not aborted by a pause or a cancel but answered first
///   (each within ``StorageConfiguration/Timeouts/request``): one that is
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

    /// Describes the upload's session (``resumableSession``); holds no bytes of the upload.
    private nonisolated let describer: UploadSessionDescriber

    /// Live snapshot streams, for leak checks in tests.
    nonisolated var subscriberCount: Int { driver.broadcast.subscriberCount }

    private init(driver: StorageTaskDriver<StorageMetadata>, describer: UploadSessionDescriber) {
        self.driver = driver
        self.describer = describer
    }

    /// A description of the upload's resumable session that another process can continue with
    /// ``Storage/resumeUpload(_:from:)``, or nil when there is none (yet).
    ///
    /// It exists for a file upload from the moment the server opens its session until the upload
    /// ends. It is set before the session's first byte is sent, so reading it when a
    /// ``TaskStatus/progress`` snapshot reports bytes (``TaskProgress/completedUnitCount`` above 0),
    /// or when the task is paused after sending some, returns it — unless meanwhile the upload
    /// ended (nothing is left to resume) or the server lost the session and a new one is being
    /// opened (read it again at a later snapshot). It stays nil for an upload in one request (at
    /// most ``StorageConfiguration/Uploads/multipartThreshold`` bytes), from `Data` (its bytes
    /// live only in this process) or from a stream (it cannot be read again): none of those can be
    /// continued elsewhere. Once the upload ends it is nil again (a finished session cannot be
    /// continued, a failed or cancelled one is discarded) — except after a failure that left the
    /// session open because the retries ran out (``StorageErrorCode/retryLimitExceeded``,
    /// ``StorageErrorCode/quotaExceeded``): then it keeps describing that session, so a caller
    /// that learns only at the end that it should save the description still can. It is nil
    /// for a session the server opened on another host than the endpoint's (a description sends
    /// credentials to the session's host, so none is made for a host the ``Storage`` was not
    /// configured with). The recorded CRC32C
    /// (``StorageUploadSession/crc32c``) appears once the SDK has computed it.
    ///
    /// The value holds a bearer capability: see ``StorageUploadSession``.
    public nonisolated var resumableSession: StorageUploadSession? {
        describer.session
    }

    /// Waits until the upload's session is open and returns its description, so that a caller
    /// can save it before bytes go out in earnest; nil when the task ends without one (see
    /// ``resumableSession`` for the uploads that have none).
    ///
    /// Returns at the first snapshot after the session opened: at the latest the first
    /// ``TaskStatus/progress`` snapshot with bytes, or a ``TaskStatus/pause``. While the task is
    /// paused before its session opened, it waits. After the task ended, it returns what
    /// ``resumableSession`` does: the session a failure left open, if one did.
    public nonisolated func waitForResumableSession() async -> StorageUploadSession? {
        if let session = resumableSession { return session }
        for await _ in snapshots {
            if let session = resumableSession { return session }
        }
        return resumableSession
    }

    /// Creates and starts an upload.
    static func start(
        reference: StorageReference,
        source: UploadSource,
        metadata: StorageMetadata,
        preconditions: StoragePreconditions = .none,
        resuming: StorageUploadSession? = nil
    ) -> StorageUploadTask {
        let (source, metadata, refusal) = compressing(source, metadata, reference.storage.options.compression)
        let engine = UploadEngine(
            storage: reference.storage, path: reference.path, generation: reference.generation, source: source,
            metadata: metadata, preconditions: preconditions, resuming: resuming, refusal: refusal)
        let job = UploadJob(engine: engine)
        return StorageUploadTask(
            driver: TaskRunner(job).driver(for: reference),
            describer: UploadSessionDescriber(engine: engine, checkpoint: job.checkpoint))
    }

    /// The source and metadata of an upload under ``StorageRequestOptions/compression``: bytes in
    /// memory or a file become their compressed stream, stored with the coding as its
    /// `Content-Encoding`; a stream is refused (its bytes go out as they come).
    private static func compressing(
        _ source: UploadSource, _ metadata: StorageMetadata, _ compression: StorageCompression?
    ) -> (UploadSource, StorageMetadata, StorageError?) {
        guard let compression else { return (source, metadata, nil) }
        var metadata = metadata
        metadata.contentEncoding = compression.description
        switch source {
        case .data(let data):
            return (.stream(UploadStream(CompressedChunks(.data(data)), size: nil)), metadata, nil)
        case .file(let url):
            return (.stream(UploadStream(CompressedChunks(.file(url)), size: nil)), metadata, nil)
        case .stream:
            return (
                source, metadata,
                .invalidArgument(
                    "The option compression applies to putData and putFile, not to a stream: "
                        + "compress the stream's bytes and set contentEncoding in its metadata.")
            )
        }
    }
}
