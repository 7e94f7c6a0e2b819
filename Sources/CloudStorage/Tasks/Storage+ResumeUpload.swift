public import Foundation

extension Storage {
    /// Continues, in this process, a file upload whose session another process (or an earlier
    /// run of this one) opened and described as a ``StorageUploadSession``.
    ///
    /// Returns at once; the task runs like one from
    /// ``StorageReference/putFile(from:metadata:preconditions:)``, with the same snapshots,
    /// pause, resume, cancel and value. It opens the file, checks that it is the file the session
    /// was opened for, asks the server how many bytes it committed and sends only the rest, then
    /// verifies the stored object's size and CRC32C against the whole local file, like any upload.
    /// If the earlier process had already finished the upload, the task succeeds with the stored
    /// object's metadata once it matches the file. The metadata and preconditions are those the
    /// upload started with (the server keeps them with the session).
    ///
    /// Before any byte is sent, the task fails with ``StorageErrorCode/fileChanged`` when the file
    /// differs from the one recorded (size, modification time, device and inode, and the CRC32C
    /// when one was recorded), and leaves the session alone. When the server no longer knows the
    /// session (it expired, about a week after it opened on Google Cloud Storage, or was
    /// cancelled), the task fails with ``StorageErrorCode/uploadSessionExpired``: upload the file
    /// again from the start. Cancelling the task, or any other failure, discards the session, as
    /// for any upload.
    ///
    /// ```swift
    /// let saved = try StorageUploadSession(contentsOf: recordURL)
    /// let task = try storage.resumeUpload(saved, from: file)
    /// let metadata = try await task.value
    /// try? FileManager.default.removeItem(at: recordURL)
    /// ```
    ///
    /// - Parameters:
    ///   - session: The description a task's ``StorageUploadTask/resumableSession`` gave.
    ///   - fileURL: A `file://` URL of the same file (its path may have changed; its identity may not).
    /// - Returns: The running upload.
    /// - Throws: ``StorageErrorCode/bucketMismatch`` when the session belongs to another endpoint
    ///   (base URL or wire protocol) or bucket than this ``Storage``;
    ///   ``StorageErrorCode/invalidArgument`` for a description of a format version this SDK
    ///   does not know.
    public func resumeUpload(
        _ session: StorageUploadSession, from fileURL: URL
    ) throws(StorageError)
        -> StorageUploadTask
    {
        guard session.formatVersion == StorageUploadSession.currentFormatVersion else {
            throw .invalidArgument("The upload session's format version \(session.formatVersion) is unknown.")
        }
        guard session.endpoint == endpoint else {
            throw StorageError(
                .bucketMismatch,
                "The upload session belongs to the endpoint \(session.endpoint), not this Storage's \(endpoint) (or speaks another protocol)."
            )
        }
        guard session.bucket == bucket else {
            throw StorageError(
                .bucketMismatch,
                "The upload session belongs to the bucket \(session.bucket), not this Storage's \(bucket).")
        }
        return StorageUploadTask.start(
            reference: reference(objectName: session.objectPath), source: .file(fileURL),
            metadata: StorageMetadata(), resuming: session)
    }
}
