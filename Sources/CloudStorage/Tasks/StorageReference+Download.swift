public import Foundation

extension StorageReference {
    /// Starts downloading the object into memory, refusing objects larger than `maxSize`.
    ///
    /// Returns at once; the download runs until it ends. When the server
    /// announces a larger object, or sends more bytes than `maxSize`, the
    /// task fails with ``StorageErrorCode/downloadSizeExceeded`` before
    /// holding more than `maxSize` bytes.
    ///
    /// ```swift
    /// let task = storage.reference(withPath: "images/space.jpg").getData(maxSize: 10 * 1024 * 1024)
    /// let imageData = try await task.value
    /// ```
    ///
    /// - Parameters:
    ///   - maxSize: The most bytes the download may hold.
    ///   - preconditions: Conditions the object must meet, such as
    ///     `StoragePreconditions(ifGenerationMatch: g)` to read only generation `g`; when one does
    ///     not hold, the download fails with ``StorageErrorCode/preconditionFailed``. Google Cloud
    ///     Storage endpoints only (see ``StoragePreconditions``).
    /// - Returns: The running download; its value is the object's bytes.
    @discardableResult
    public func getData(maxSize: Int64, preconditions: StoragePreconditions = .none) -> StorageDownloadTask<Data> {
        let destination = MemoryDownloadDestination()
        return StorageDownloadTask.start(
            reference: self,
            destination: destination,
            maxSize: maxSize,
            preconditions: preconditions,
            prepare: { () throws(StorageError) in
                guard maxSize >= 0 else { throw .invalidArgument("maxSize must not be negative; it is \(maxSize).") }
            },
            complete: { destination.take() }
        )
    }

    /// Starts downloading part of the object into memory, refusing more than `maxSize` bytes.
    ///
    /// Sends `Range: bytes=a-b` and returns at once. The range follows GCS: one
    /// that runs past the object's end yields the bytes up to the end; one that
    /// starts past it fails with ``StorageErrorCode/invalidArgument`` (the
    /// server's 416). A server that ignores the `Range` and sends the whole
    /// object is read only as far as the range's end, its leading bytes
    /// skipped. The length is checked; the CRC32C is not, unless the range
    /// covers the whole object (the server's checksum is of the whole object).
    ///
    /// ```swift
    /// // The first kilobyte, say a file's header.
    /// let header = try await ref.getData(maxSize: 1024, range: 0..<1024).value
    /// ```
    ///
    /// - Parameters:
    ///   - maxSize: The most bytes the download may hold.
    ///   - range: Byte offsets in the object: `a..<b`, `a...b`, `a...` (to the
    ///     end) or `..<b`. An empty range or a negative bound fails with
    ///     ``StorageErrorCode/invalidArgument``.
    ///   - preconditions: Conditions the object must meet, such as
    ///     `StoragePreconditions(ifGenerationMatch:)` to read one generation only; when one does
    ///     not hold, the download fails with ``StorageErrorCode/preconditionFailed``. Google Cloud
    ///     Storage endpoints only (see ``StoragePreconditions``).
    /// - Returns: The running download; its value is the range's bytes.
    @discardableResult
    public func getData(
        maxSize: Int64, range: some RangeExpression<Int64>, preconditions: StoragePreconditions = .none
    ) -> StorageDownloadTask<Data> {
        let byteRange = Result { () throws(StorageError) in try ByteRange(range) }
        let destination = MemoryDownloadDestination()
        return StorageDownloadTask.start(
            reference: self,
            destination: destination,
            maxSize: maxSize,
            preconditions: preconditions,
            range: (try? byteRange.get()) ?? nil,
            prepare: { () throws(StorageError) in
                guard maxSize >= 0 else { throw .invalidArgument("maxSize must not be negative; it is \(maxSize).") }
                _ = try byteRange.get()
            },
            complete: { destination.take() }
        )
    }

    /// Streams the object's bytes chunk by chunk, reading from the network no
    /// faster than the loop takes them.
    ///
    /// Nothing is sent until the loop starts; each loop is its own download,
    /// in bounded memory whatever the object's size. A broken connection is
    /// resumed with `Range` from the next byte not yet handed on. The whole
    /// object's CRC32C is checked after the last chunk: a mismatch is thrown
    /// then, **after the consumer already received the bytes**, so treat what
    /// it did with them as unverified until the loop ends without an error.
    /// See ``StorageDownloadStream`` for the rules.
    ///
    /// ```swift
    /// var digest = 0
    /// for try await chunk in storage.reference(withPath: "videos/launch.mp4").dataStream() {
    ///     digest &+= chunk.count  // hash, parse or forward the bytes here
    /// }
    /// ```
    ///
    /// - Parameter preconditions: Conditions the object must meet, such as
    ///   `StoragePreconditions(ifGenerationMatch:)` to read one generation only; when one does not
    ///   hold, the first `next()` throws ``StorageErrorCode/preconditionFailed``. Google Cloud
    ///   Storage endpoints only (see ``StoragePreconditions``).
    /// - Returns: A sequence of the object's bytes in chunks of at most 256 KiB.
    public func dataStream(preconditions: StoragePreconditions = .none) -> StorageDownloadStream {
        StorageDownloadStream(reference: self, range: .success(nil), preconditions: preconditions)
    }

    /// Streams part of the object's bytes chunk by chunk, reading from the
    /// network no faster than the loop takes them.
    ///
    /// Sends `Range: bytes=a-b`; the range follows GCS, as for
    /// ``getData(maxSize:range:preconditions:)``. The length is checked, not the CRC32C,
    /// unless the range covers the whole object.
    ///
    /// ```swift
    /// // Everything after the first megabyte.
    /// for try await chunk in ref.dataStream(range: 1_048_576...) {
    ///     print(chunk.count)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - range: Byte offsets in the object: `a..<b`, `a...b`, `a...`
    ///     (to the end) or `..<b`. An empty range or a negative bound makes the
    ///     first `next()` throw ``StorageErrorCode/invalidArgument``.
    ///   - preconditions: Conditions the object must meet; as for ``dataStream(preconditions:)``.
    /// - Returns: A sequence of the range's bytes in chunks of at most 256 KiB.
    public func dataStream(
        range: some RangeExpression<Int64>, preconditions: StoragePreconditions = .none
    ) -> StorageDownloadStream {
        StorageDownloadStream(
            reference: self, range: Result { () throws(StorageError) in try ByteRange(range) },
            preconditions: preconditions)
    }

    /// Starts downloading the object into a file.
    ///
    /// Returns at once. The bytes stream into a temporary file in the same
    /// directory, in bounded memory; only once every byte arrived and matched
    /// the server's checksum is it renamed to `fileURL`, replacing any file
    /// there and keeping its permission bits (a new file gets `0666` less the
    /// umask). A download that fails or is cancelled leaves no file at
    /// `fileURL` (an existing one is untouched) and removes its temporary file.
    /// The temporary file (`.NAME.XXXXXXXX.download`) is locked while it is
    /// written: one left by a process that was killed is removed by the next
    /// download to `fileURL`, never one another download is writing.
    ///
    /// An object of at least ``StorageConfiguration/Downloads/slicingThreshold`` bytes
    /// (150 MiB by default) downloads in ``StorageConfiguration/Downloads/sliceCount`` ranged
    /// requests at once, each writing its part of the file; pause, resume and cancel act on all
    /// of them, and progress counts every slice's bytes. An object replaced on the server meanwhile
    /// ends the download with ``StorageErrorCode/objectChanged``. See
    /// ``StorageConfiguration/Downloads``.
    ///
    /// ```swift
    /// let task = storage.reference(withPath: "videos/launch.mp4")
    ///     .write(toFile: URL(fileURLWithPath: "/tmp/launch.mp4"))
    /// for await snapshot in task.snapshots {
    ///     print(snapshot.status, snapshot.progress.fractionCompleted)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - fileURL: A `file://` URL in an existing, writable directory.
    ///   - preconditions: Conditions the object must meet, such as
    ///     `StoragePreconditions(ifGenerationMatch: g)` to read only generation `g`; when one does
    ///     not hold, the download fails with ``StorageErrorCode/preconditionFailed``. Google Cloud
    ///     Storage endpoints only (see ``StoragePreconditions``).
    /// - Returns: The running download; its value is `fileURL`.
    @discardableResult
    public func write(toFile fileURL: URL, preconditions: StoragePreconditions = .none) -> StorageDownloadTask<URL> {
        write(toFile: fileURL, preconditions: preconditions, confinedTo: nil)
    }

    /// ``write(toFile:preconditions:)``, with the file's directory reached from `root` (when
    /// given) one name at a time, made when missing, following no symbolic link
    /// (``DownloadDirectory``): for a copy of many objects below one directory.
    func write(
        toFile fileURL: URL, preconditions: StoragePreconditions, confinedTo root: URL?
    ) -> StorageDownloadTask<URL> {
        let destination = FileDownloadDestination(target: fileURL, confinement: root)
        return StorageDownloadTask.start(
            reference: self,
            destination: destination,
            maxSize: nil,
            preconditions: preconditions,
            prepare: { () throws(StorageError) in
                guard fileURL.isFileURL else {
                    throw .invalidArgument("write(toFile:) needs a file URL; \(fileURL) is not one.")
                }
                try await destination.create()
            },
            complete: { () throws(StorageError) -> URL in
                try await destination.commit()
                return fileURL
            }
        )
    }

    /// Downloads the object into memory and returns its bytes.
    ///
    /// Cancelling the calling Swift task cancels the download. The rules of
    /// ``getData(maxSize:preconditions:)`` apply.
    ///
    /// ```swift
    /// let data = try await storage.reference(withPath: "notes/today.txt").data(maxSize: 1024 * 1024)
    /// print(String(decoding: data, as: UTF8.self))
    /// ```
    ///
    /// - Parameters:
    ///   - maxSize: The most bytes the download may hold.
    ///   - preconditions: Conditions the object must meet, such as
    ///     `StoragePreconditions(ifGenerationMatch: g)` to read only generation `g`; when one does
    ///     not hold, the download fails with ``StorageErrorCode/preconditionFailed``. Google Cloud
    ///     Storage endpoints only (see ``StoragePreconditions``).
    /// - Returns: The object's bytes.
    /// - Throws: ``StorageError``: ``StorageErrorCode/downloadSizeExceeded``
    ///   when the object is larger than `maxSize`;
    ///   ``StorageErrorCode/objectNotFound``; ``StorageErrorCode/preconditionFailed``;
    ///   ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    public func data(maxSize: Int64, preconditions: StoragePreconditions = .none) async throws(StorageError) -> Data {
        let task = getData(maxSize: maxSize, preconditions: preconditions)
        return try await Self.outcome(of: task, onProgress: nil)
    }

    /// Downloads part of the object into memory and returns its bytes.
    ///
    /// Cancelling the calling Swift task cancels the download. The rules of
    /// ``getData(maxSize:range:preconditions:)`` apply.
    ///
    /// ```swift
    /// let tail = try await ref.data(maxSize: 4096, range: 1_000_000...)
    /// ```
    ///
    /// - Parameters:
    ///   - maxSize: The most bytes the download may hold.
    ///   - range: Byte offsets in the object: `a..<b`, `a...b`, `a...` or `..<b`.
    ///   - preconditions: Conditions the object must meet (see ``StoragePreconditions``).
    /// - Returns: The range's bytes (fewer when the range runs past the object's end).
    /// - Throws: ``StorageError``: ``StorageErrorCode/invalidArgument`` for an
    ///   empty or negative range, or one that starts past the object's end;
    ///   ``StorageErrorCode/downloadSizeExceeded`` when the range holds more
    ///   than `maxSize` bytes; ``StorageErrorCode/objectNotFound``;
    ///   ``StorageErrorCode/preconditionFailed`` when a precondition does not hold;
    ///   ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    public func data(
        maxSize: Int64, range: some RangeExpression<Int64>, preconditions: StoragePreconditions = .none
    ) async throws(StorageError) -> Data {
        let task = getData(maxSize: maxSize, range: range, preconditions: preconditions)
        return try await Self.outcome(of: task, onProgress: nil)
    }

    /// Downloads the object into a file and returns the file's URL.
    ///
    /// Cancelling the calling Swift task cancels the download. The rules of
    /// ``write(toFile:preconditions:)`` apply.
    ///
    /// ```swift
    /// let file = try await ref.writeAsync(toFile: URL(fileURLWithPath: "/tmp/report.pdf"))
    /// print(file.path)
    /// ```
    ///
    /// - Parameters:
    ///   - fileURL: A `file://` URL in an existing, writable directory.
    ///   - preconditions: Conditions the object must meet, such as
    ///     `StoragePreconditions(ifGenerationMatch: g)` to read only generation `g`; when one does
    ///     not hold, the download fails with ``StorageErrorCode/preconditionFailed``. Google Cloud
    ///     Storage endpoints only (see ``StoragePreconditions``).
    ///   - onProgress: Called with the download's progress, from the first
    ///     snapshot to the last, before this method returns.
    /// - Returns: `fileURL`, which now holds the object's bytes.
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound``;
    ///   ``StorageErrorCode/nonMatchingChecksum`` when the bytes do not match
    ///   the server's checksum; ``StorageErrorCode/cancelled`` when the calling
    ///   task is cancelled.
    public func writeAsync(
        toFile fileURL: URL,
        preconditions: StoragePreconditions = .none,
        onProgress: (@Sendable (TaskProgress) -> Void)? = nil
    ) async throws(StorageError) -> URL {
        let task = write(toFile: fileURL, preconditions: preconditions)
        return try await Self.outcome(of: task, onProgress: onProgress)
    }
}
