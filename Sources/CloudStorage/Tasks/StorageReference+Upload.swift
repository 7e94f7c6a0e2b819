public import Foundation

extension StorageReference {
    /// Starts uploading bytes in memory to this reference's object.
    ///
    /// Returns at once; the upload runs in the background until it ends,
    /// whether or not the returned task is kept. The bytes are sent from the
    /// `Data`'s own storage, never copied. Without a content type in
    /// `metadata`, the object is stored as `application/octet-stream`.
    ///
    /// ```swift
    /// let riversRef = storage.reference().child("images/rivers.jpg")
    /// let task = riversRef.putData(imageData, metadata: nil)
    /// let metadata = try await task.value
    /// print(metadata.size)
    /// ```
    ///
    /// - Parameters:
    ///   - data: The object's bytes.
    ///   - metadata: Content type, caching headers and custom metadata to store.
    ///   - preconditions: Conditions on the object the upload may replace, such as
    ///     ``StoragePreconditions/doesNotExist`` to create it only if absent; when one does not
    ///     hold, the upload fails with ``StorageErrorCode/preconditionFailed`` and the stored
    ///     object stays as it was. Google Cloud Storage endpoints only (see ``StoragePreconditions``).
    /// - Returns: The running upload.
    @discardableResult
    public func putData(
        _ data: Data, metadata: StorageMetadata? = nil, preconditions: StoragePreconditions = .none
    ) -> StorageUploadTask {
        StorageUploadTask.start(
            reference: self, source: .data(data), metadata: metadata ?? StorageMetadata(),
            preconditions: preconditions)
    }

    /// Starts uploading a file to this reference's object.
    ///
    /// Returns at once; the upload runs in the background until it ends. The
    /// file is read as it is sent, never loaded whole, and must not change
    /// until the upload ends: if it changes, shrinks, grows or disappears,
    /// the upload fails with ``StorageErrorCode/fileChanged``. A missing or
    /// unreadable file, or a directory, fails it with
    /// ``StorageErrorCode/unreadableFile``. Without a content type in
    /// `metadata`, one is inferred from the file's extension
    /// (`application/octet-stream` when unknown).
    ///
    /// ```swift
    /// let task = storage.reference(withPath: "videos/launch.mp4")
    ///     .putFile(from: URL(fileURLWithPath: "/tmp/launch.mp4"))
    /// for await snapshot in task.snapshots {
    ///     print(snapshot.status, snapshot.progress.fractionCompleted)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - fileURL: A `file://` URL of a regular file.
    ///   - metadata: Content type, caching headers and custom metadata to store.
    ///   - preconditions: Conditions on the object the upload may replace; as for
    ///     ``putData(_:metadata:preconditions:)``.
    /// - Returns: The running upload.
    @discardableResult
    public func putFile(
        from fileURL: URL, metadata: StorageMetadata? = nil, preconditions: StoragePreconditions = .none
    ) -> StorageUploadTask {
        var metadata = metadata ?? StorageMetadata()
        if metadata.contentType == nil {
            metadata.contentType = ContentTypes.forPath(fileURL.path)
        }
        return StorageUploadTask.start(
            reference: self, source: .file(fileURL), metadata: metadata, preconditions: preconditions)
    }

    /// Starts uploading the bytes of an asynchronous sequence, such as a request body arriving
    /// over the network, to this reference's object.
    ///
    /// Returns at once; the upload runs in the background until it ends. The sequence is read
    /// once, by a task of the upload's own, and never faster than the bytes go out: at most one
    /// request's bytes (8 MiB, or ``StorageConfiguration/Uploads/chunkSize`` when smaller) plus one
    /// element are held at a time, whatever the object's size. They go through a resumable
    /// session; after a lost connection the upload resends from that buffer what the server
    /// did not commit. If the server lost bytes already dropped from the buffer (it forgot the
    /// session), the upload fails with ``StorageErrorCode/dataLoss`` rather than store a gap.
    /// The CRC32C is computed as the bytes pass and checked when the object is stored.
    ///
    /// ```swift
    /// // An incoming request's body, as it arrives: its Content-Length, or nil when chunked.
    /// func store(
    ///     _ body: some AsyncSequence<Data, any Error> & Sendable, length: Int64?, id: String
    /// ) async throws -> StorageMetadata {
    ///     let task = storage.reference(withPath: "uploads/\(id).bin").putStream(body, size: length)
    ///     return try await task.value
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - bytes: The object's bytes, in elements of any size (`Data`, `[UInt8]`, ...). An
    ///     error it throws fails the upload with ``StorageErrorCode/unreadableFile``.
    ///   - size: How many bytes the sequence yields, or nil when it is not known: the object then
    ///     ends where the sequence does, and snapshots report a total of 0 until then. When the
    ///     sequence yields more or fewer bytes than a given size, the upload fails with
    ///     ``StorageErrorCode/invalidArgument`` and no object is stored.
    ///   - metadata: Content type, caching headers and custom metadata to store.
    ///   - preconditions: Conditions on the object the upload may replace; as for
    ///     ``putData(_:metadata:preconditions:)``.
    /// - Returns: The running upload. Pausing it keeps the buffer and stops reading the
    ///   sequence; cancelling it, or any failure, ends the sequence's iteration.
    @discardableResult
    public func putStream<Bytes: AsyncSequence & Sendable>(
        _ bytes: Bytes, size: Int64? = nil, metadata: StorageMetadata? = nil,
        preconditions: StoragePreconditions = .none
    ) -> StorageUploadTask where Bytes.Element: Sequence<UInt8> {
        StorageUploadTask.start(
            reference: self, source: .stream(UploadStream(bytes, size: size)),
            metadata: metadata ?? StorageMetadata(), preconditions: preconditions)
    }

    /// Uploads bytes in memory and returns the stored object's metadata.
    ///
    /// Cancelling the calling Swift task cancels the upload.
    ///
    /// ```swift
    /// let metadata = try await storage.reference(withPath: "notes/today.txt")
    ///     .putDataAsync(Data("hello".utf8)) { progress in
    ///         print(progress.fractionCompleted)
    ///     }
    /// ```
    ///
    /// - Parameters:
    ///   - data: The object's bytes.
    ///   - metadata: Metadata to store with the object.
    ///   - preconditions: Conditions on the object the upload may replace (see ``StoragePreconditions``).
    ///   - onProgress: Called with the upload's progress, from the first
    ///     snapshot to the last, before this method returns. (The Firebase
    ///     SDK passes a Foundation `Progress`; ``TaskProgress`` is a `Sendable`
    ///     value with the same counts.)
    /// - Returns: The metadata the server stored.
    /// - Throws: ``StorageError``; ``StorageErrorCode/preconditionFailed`` when a
    ///   precondition does not hold; ``StorageErrorCode/cancelled`` when the
    ///   calling task is cancelled.
    public func putDataAsync(
        _ data: Data,
        metadata: StorageMetadata? = nil,
        preconditions: StoragePreconditions = .none,
        onProgress: (@Sendable (TaskProgress) -> Void)? = nil
    ) async throws(StorageError) -> StorageMetadata {
        let task = putData(data, metadata: metadata, preconditions: preconditions)
        return try await Self.outcome(of: task, onProgress: onProgress)
    }

    /// Uploads a file and returns the stored object's metadata.
    ///
    /// Cancelling the calling Swift task cancels the upload. The rules of
    /// ``putFile(from:metadata:preconditions:)`` apply.
    ///
    /// ```swift
    /// let metadata = try await ref.putFileAsync(from: URL(fileURLWithPath: "/tmp/report.pdf"))
    /// print(metadata.contentType ?? "")  // application/pdf
    /// ```
    ///
    /// - Parameters:
    ///   - fileURL: A `file://` URL of a regular file.
    ///   - metadata: Metadata to store with the object.
    ///   - preconditions: Conditions on the object the upload may replace (see ``StoragePreconditions``).
    ///   - onProgress: Called with the upload's progress, from the first
    ///     snapshot to the last, before this method returns.
    /// - Returns: The metadata the server stored.
    /// - Throws: ``StorageError``; ``StorageErrorCode/preconditionFailed`` when a
    ///   precondition does not hold; ``StorageErrorCode/cancelled`` when the
    ///   calling task is cancelled.
    public func putFileAsync(
        from fileURL: URL,
        metadata: StorageMetadata? = nil,
        preconditions: StoragePreconditions = .none,
        onProgress: (@Sendable (TaskProgress) -> Void)? = nil
    ) async throws(StorageError) -> StorageMetadata {
        let task = putFile(from: fileURL, metadata: metadata, preconditions: preconditions)
        return try await Self.outcome(of: task, onProgress: onProgress)
    }

    /// Uploads the bytes of an asynchronous sequence and returns the stored object's metadata.
    ///
    /// Cancelling the calling Swift task (in a server, typically because the client went
    /// away) cancels the upload: the sequence's iteration ends, the server's session is
    /// deleted and nothing is stored. The rules of
    /// ``putStream(_:size:metadata:preconditions:)`` apply.
    ///
    /// ```swift
    /// let metadata = try await ref.putStreamAsync(body, size: contentLength)
    /// ```
    ///
    /// - Parameters:
    ///   - bytes: The object's bytes, in elements of any size (`Data`, `[UInt8]`, ...).
    ///   - size: How many bytes the sequence yields, or nil when it is not known.
    ///   - metadata: Metadata to store with the object.
    ///   - preconditions: Conditions on the object the upload may replace (see ``StoragePreconditions``).
    ///   - onProgress: Called with the upload's progress, from the first
    ///     snapshot to the last, before this method returns.
    /// - Returns: The metadata the server stored.
    /// - Throws: ``StorageError``; ``StorageErrorCode/preconditionFailed`` when a
    ///   precondition does not hold; ``StorageErrorCode/cancelled`` when the
    ///   calling task is cancelled.
    public func putStreamAsync<Bytes: AsyncSequence & Sendable>(
        _ bytes: Bytes,
        size: Int64? = nil,
        metadata: StorageMetadata? = nil,
        preconditions: StoragePreconditions = .none,
        onProgress: (@Sendable (TaskProgress) -> Void)? = nil
    ) async throws(StorageError) -> StorageMetadata where Bytes.Element: Sequence<UInt8> {
        let task = putStream(bytes, size: size, metadata: metadata, preconditions: preconditions)
        return try await Self.outcome(of: task, onProgress: onProgress)
    }

    /// Waits for `task`'s outcome, cancelling the task if the calling Swift
    /// task is cancelled, and reports its progress to `onProgress` meanwhile.
    static func outcome<Output>(
        of task: some StorageTask<Output>,
        onProgress: (@Sendable (TaskProgress) -> Void)?
    ) async throws(StorageError) -> Output {
        // Subscribed before anything can happen, so no progress is missed; the stream
        // finishes right after the terminal snapshot, so the observer always ends.
        let observer = onProgress.map { callback in
            let snapshots = task.snapshots
            return Task {
                for await snapshot in snapshots {
                    callback(snapshot.progress)
                }
            }
        }
        let outcome = await withTaskCancellationHandler {
            await task.result()
        } onCancel: {
            Task { await task.cancel() }
        }
        await observer?.value
        return try outcome.get()
    }
}
