public import Foundation
import HTTP1
import Synchronization

/// How an upload compresses its bytes on the way to the server.
///
/// An opaque value with static members, so that codings can be added later.
public struct StorageCompression: Sendable, Hashable, CustomStringConvertible {
    private let coding: String

    /// gzip (RFC 1952): the object is stored compressed, with `Content-Encoding: gzip`, as
    /// `gcloud storage cp -Z` stores it. Downloads give the original bytes back
    /// (``StorageConfiguration/decompressesDownloads``), and so does Cloud Storage to clients
    /// that do not ask for gzip (decompressive transcoding).
    public static let gzip = StorageCompression(coding: "gzip")

    /// The `Content-Encoding` the object is stored with, such as `gzip`.
    public var description: String { coding }
}

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

/// The gzip form of bytes in memory or of a file, produced block by block as it is read, on the
/// blocking pool (never the cooperative one): reading and deflating are both work that blocks.
///
/// Why a stream, and not a compressed copy first: the upload then holds one request's bytes,
/// whatever the file's size, and needs no temporary file to clean up on every exit path. The
/// price is the streamed upload's: the size is not known until the end (a resumable session,
/// never one request), and bytes the server lost after the buffer dropped them are
/// ``StorageErrorCode/dataLoss`` rather than a re-read. The encoding is deterministic (no name,
/// time zero), so uploading the same bytes again gives the same object.
struct CompressedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    typealias Failure = any Error

    enum Source: Sendable {
        case data(Data)
        case file(URL)
    }

    let source: Source
    /// The most original bytes compressed per element.
    static let blockSize = 1 << 20

    init(_ source: Source) {
        self.source = source
    }

    func makeAsyncIterator() -> Iterator {
        Iterator(state: State(source: source))
    }

    /// What one iteration holds: the encoder and where the source stands. Used by one iterator
    /// at a time, each step on a blocking thread, one after the other.
    ///
    /// SAFETY (`@unchecked Sendable`): `next()` awaits each step before the next one starts, so
    /// no two threads touch it at once.
    final class State: @unchecked Sendable {  // SAFETY: see the note above
        let source: Source
        var encoder: GzipEncoder?
        var file: ReadOnlyFile?
        var offset: Int64 = 0
        var finished = false

        init(source: Source) {
            self.source = source
        }

        /// The next compressed bytes (possibly empty while zlib holds them), or nil at the end.
        func step() throws(StorageError) -> Data? {
            guard !finished else { return nil }
            if encoder == nil {
                do throws(GzipError) {
                    encoder = try GzipEncoder()
                } catch {
                    throw StorageError(.internalError, "Cannot compress the upload: \(error).")
                }
            }
            var output = Data()
            let sink = { (piece: UnsafeRawBufferPointer) throws(StorageError) in output.append(contentsOf: piece) }
            let failure = { (error: GzipError) in StorageError(.internalError, "Cannot compress the upload: \(error).")
            }
            switch source {
            case .data(let data):
                let end = Swift.min(data.count, Int(offset) + Self.blockSize)
                let last = end == data.count
                // `withUnsafeBytes` rethrows untyped: the outcome comes back as a value.
                let outcome = data[(data.startIndex + Int(offset))..<(data.startIndex + end)].withUnsafeBytes {
                    block in
                    Result { () throws(StorageError) in
                        try encoder!.encode(block, finish: last, failure: failure, into: sink)
                    }
                }
                try outcome.get()
                offset = Int64(end)
                finished = last
            case .file(let url):
                if file == nil { file = try ReadOnlyFile(path: url.path) }
                let file = file!
                let count = Int(Swift.min(Int64(Self.blockSize), file.size - offset))
                let last = offset + Int64(count) == file.size
                let block = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(1, count), alignment: 1)
                defer { block.deallocate() }
                if count > 0 { try file.readExactly(into: block.baseAddress!, count: count, at: offset) }
                try encoder!.encode(
                    UnsafeRawBufferPointer(rebasing: block[..<count]), finish: last, failure: failure, into: sink)
                offset += Int64(count)
                finished = last
            }
            return output
        }

        private static let blockSize = CompressedChunks.blockSize
    }

    /// Takes the compressed elements, in order.
    struct Iterator: AsyncIteratorProtocol {
        let state: State

        mutating func next() async throws -> Data? {
            while true {
                let state = state
                guard let chunk = try await BlockingIO.run({ () throws(StorageError) in try state.step() }) else {
                    return nil
                }
                if !chunk.isEmpty { return chunk }
            }
        }
    }
}
