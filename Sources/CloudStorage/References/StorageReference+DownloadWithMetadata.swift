/// A download whose object's metadata arrived with the response that carries its bytes:
/// the head first, then the bytes as they come.
///
/// Made by ``StorageReference/download(preconditions:)``. A server that forwards an object (an
/// HTTP handler, a proxy) writes its own response head from ``metadata`` (type, length,
/// encoding, generation) before the first byte arrives, then copies ``bytes``.
public struct StorageDownload: Sendable {
    /// The object's metadata, read from the headers of the answer that carries the bytes: name,
    /// bucket, ``StorageMetadata/generation``, ``StorageMetadata/metageneration``,
    /// ``StorageMetadata/size`` and ``StorageMetadata/contentEncoding`` (of the stored object),
    /// ``StorageMetadata/contentType``, ``StorageMetadata/cacheControl``,
    /// ``StorageMetadata/contentDisposition``, ``StorageMetadata/contentLanguage``, the CRC32C
    /// and MD5, and custom metadata where the server sends it (`x-goog-meta-*`). Fields the
    /// server leaves out are nil; times other than ``StorageMetadata/updated`` (from
    /// `Last-Modified`) are never in the headers: read ``StorageReference/getMetadata()`` for them.
    public let metadata: StorageMetadata
    /// The object's bytes, as ``StorageReference/dataStream(preconditions:)`` gives them
    /// (decompressed for a gzip-stored object, checked, resumed after a broken connection). The
    /// first iteration continues the download that brought ``metadata``; each later one is a
    /// new download of the same generation.
    public let bytes: StorageDownloadStream
}

extension StorageReference {
    /// Starts downloading the object and returns its metadata as soon as the server's answer
    /// begins, with the bytes to follow as a stream: one request, not a metadata request and
    /// then a download.
    ///
    /// The download is pinned to the generation the answer came from: a resumption after a broken
    /// connection continues that generation or ends with ``StorageErrorCode/objectChanged``, never
    /// mixing two (Google Cloud Storage; Firebase Storage's v0 protocol has no generations, and
    /// a resumption there is checked by size and CRC32C only). At most about 1 MiB is read ahead
    /// of the consumer; a `StorageDownload` whose ``StorageDownload/bytes`` is never iterated is
    /// cancelled when it is dropped.
    ///
    /// ```swift
    /// // An HTTP handler forwarding an object: the head goes out before the first byte arrives.
    /// let download = try await storage.reference(withPath: "videos/launch.mp4").download()
    /// print("Content-Type:", download.metadata.contentType ?? "application/octet-stream")
    /// for try await chunk in download.bytes {
    ///     _ = chunk  // write it to the client
    /// }
    /// ```
    ///
    /// - Parameter preconditions: Conditions the object must meet, as for
    ///   ``dataStream(preconditions:)``.
    /// - Returns: The object's metadata and its bytes.
    /// - Throws: The ``StorageError`` of an answer that carries no bytes, such as
    ///   ``StorageErrorCode/objectNotFound`` or ``StorageErrorCode/preconditionFailed``;
    ///   ``StorageErrorCode/cancelled`` when the calling task is cancelled (the download stops).
    public func download(preconditions: StoragePreconditions = .none) async throws(StorageError) -> StorageDownload {
        let storage = storage
        let waits = storage.transport.carrier(for: storage.endpoint.baseURL).capabilities
            .contains(.letsResponseSinksWait)
        let buffer = StorageDownloadStream.start(
            reference: self, range: .success(nil), preconditions: preconditions,
            buffer: DownloadStreamBuffer(waits: waits, tracksMetadata: true))
        let started = StorageDownloadStream.StartedDownload(buffer)
        let metadata = try await buffer.metadata()
        // Later iterations read the same generation the first answer served.
        var pinned = preconditions
        if storage.objectProtocol.pinsGenerations, generation == nil, pinned.ifGenerationMatch == nil {
            pinned.ifGenerationMatch = metadata.generation
        }
        var bytes = StorageDownloadStream(reference: self, range: .success(nil), preconditions: pinned)
        bytes.started = started
        return StorageDownload(metadata: metadata, bytes: bytes)
    }
}
