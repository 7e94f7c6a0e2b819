public import Foundation
import HTTP1
import Synchronization

extension StorageReference {
    /// Starts uploading bytes in memory, compressed on the way, to this reference's object.
    ///
    /// The same as `with(.init(compression: compression)).putData(…)`
    /// (``StorageRequestOptions/compression``), which also compresses `putDataAsync` and
    /// `putFileAsync` uploads.
    ///
    /// The object stores the compressed bytes with ``StorageMetadata/contentEncoding`` set to
    /// `gzip` and a CRC32C of the compressed bytes; its ``StorageMetadata/size`` is theirs. The
    /// bytes are compressed as the upload sends them (off Swift's cooperative threads) and go
    /// through a resumable session like ``putStream(_:size:metadata:preconditions:)``: a lost
    /// connection resends, from the upload's buffer, what the server did not commit.
    ///
    /// ```swift
    /// let json = Data(#"{"items": []}"#.utf8)
    /// var metadata = StorageMetadata()
    /// metadata.contentType = "application/json"
    /// let stored = try await storage.reference(withPath: "api/items.json")
    ///     .putData(json, metadata: metadata, compression: .gzip).value
    /// print(stored.contentEncoding ?? "")  // gzip
    /// ```
    ///
    /// - Parameters:
    ///   - data: The object's original bytes.
    ///   - metadata: Content type, caching headers and custom metadata to store. Its
    ///     ``StorageMetadata/contentEncoding`` is set to `compression`'s, replacing any other.
    ///   - preconditions: Conditions on the object the upload may replace; as for
    ///     ``putData(_:metadata:preconditions:)``.
    ///   - compression: How to compress the bytes: ``StorageCompression/gzip``.
    /// - Returns: The running upload.
    @discardableResult
    public func putData(
        _ data: Data, metadata: StorageMetadata? = nil, preconditions: StoragePreconditions = .none,
        compression: StorageCompression
    ) -> StorageUploadTask {
        with(.init(compression: compression)).putData(data, metadata: metadata, preconditions: preconditions)
    }

    /// Starts uploading a file, compressed on the way, to this reference's object.
    ///
    /// As ``putData(_:metadata:preconditions:compression:)``; the file is read in 1 MiB blocks as
    /// the upload goes, never whole, and the content type is inferred from the file's extension
    /// when `metadata` has none (`site/app.js` is `text/javascript`, stored gzip-encoded).
    ///
    /// ```swift
    /// let task = storage.reference(withPath: "site/app.js")
    ///     .putFile(from: URL(fileURLWithPath: "build/app.js"), compression: .gzip)
    /// let stored = try await task.value
    /// ```
    ///
    /// - Parameters:
    ///   - fileURL: A `file://` URL of a regular file; a missing or unreadable one fails the upload
    ///     with ``StorageErrorCode/unreadableFile``.
    ///   - metadata: As for ``putData(_:metadata:preconditions:compression:)``.
    ///   - preconditions: Conditions on the object the upload may replace.
    ///   - compression: How to compress the bytes: ``StorageCompression/gzip``.
    /// - Returns: The running upload.
    @discardableResult
    public func putFile(
        from fileURL: URL, metadata: StorageMetadata? = nil, preconditions: StoragePreconditions = .none,
        compression: StorageCompression
    ) -> StorageUploadTask {
        with(.init(compression: compression)).putFile(from: fileURL, metadata: metadata, preconditions: preconditions)
    }
}
