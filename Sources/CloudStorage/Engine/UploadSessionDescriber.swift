import Foundation
import Synchronization

/// What a ``StorageUploadTask`` needs to describe its upload's session for another process
/// (``StorageUploadTask/resumableSession``), without keeping the upload's bytes alive: the
/// checkpoint is held weakly, so a finished task lets go of its `Data` and file as before.
final class UploadSessionDescriber: Sendable {
    private struct WeakCheckpoint {
        weak var value: UploadCheckpoint?
    }

    let storage: Storage
    let path: StoragePath
    let resuming: StorageUploadSession?
    private let checkpoint: Mutex<WeakCheckpoint>
    /// Held strongly: a session the failure left open stays described after the task let go of
    /// its checkpoint.
    private let leftOpen: UploadCheckpoint.LeftOpen

    init(engine: UploadEngine, checkpoint: UploadCheckpoint) {
        storage = engine.storage
        path = engine.path
        resuming = engine.resuming
        self.checkpoint = Mutex(WeakCheckpoint(value: checkpoint))
        leftOpen = checkpoint.leftOpen
    }

    /// The description of the upload's session for another process, or nil while there is none
    /// (not opened yet, finalized, or a source that cannot be read again: `Data`, a stream).
    /// After the upload ended, the session its failure left open, if it did.
    var session: StorageUploadSession? {
        guard let checkpoint = checkpoint.withLock({ $0.value }) else { return leftOpen.session }
        return Self.describe(checkpoint, storage: storage, path: path, resuming: resuming) ?? leftOpen.session
    }

    /// Describes `checkpoint`'s session for another process; nil while there is none or it
    /// cannot be continued elsewhere (see ``session``).
    static func describe(
        _ checkpoint: UploadCheckpoint, storage: Storage, path: StoragePath, resuming: StorageUploadSession?
    ) -> StorageUploadSession? {
        if let parts = describeParts(checkpoint, storage: storage, path: path) { return parts }
        let state = checkpoint.session
        guard let session = state.url, !state.mayBeFinalized, let prepared = checkpoint.source,
            let file = prepared.file,
            // A session elsewhere could not be read back (credentials go to the session's host).
            StorageUploadSession.sameOrigin(session, storage.endpoint.baseURL)
        else { return nil }
        return StorageUploadSession(
            sessionURL: session, endpoint: storage.endpoint, bucket: storage.bucket, objectPath: path.string,
            source: sourceFile(file), chunkSize: storage.configuration.uploads.chunkSize ?? resuming?.chunkSize,
            crc32c: prepared.knownCRC32C ?? resuming?.crc32c)
    }

    /// Describes a multipart upload in progress (a file sent in parts): its XML API URL with
    /// the upload id, and the part size that numbers its parts.
    private static func describeParts(
        _ checkpoint: UploadCheckpoint, storage: Storage, path: StoragePath
    ) -> StorageUploadSession? {
        let parts = checkpoint.parts
        guard let id = parts.uploadID, let file = checkpoint.source?.file else { return nil }
        let wire = XMLMultipartProtocol(baseURL: storage.endpoint.baseURL, options: storage.options)
        return StorageUploadSession(
            sessionURL: wire.abort(uploadID: id, bucket: storage.bucket, name: parts.objectName).url,
            endpoint: storage.endpoint, bucket: storage.bucket, objectPath: path.string, source: sourceFile(file),
            chunkSize: nil, crc32c: nil, partSize: parts.partSize)
    }

    private static func sourceFile(_ file: ReadOnlyFile) -> StorageUploadSession.SourceFile {
        let identity = file.identity
        return StorageUploadSession.SourceFile(
            path: URL(fileURLWithPath: file.path).standardizedFileURL.path, size: identity.size,
            modificationSeconds: identity.modificationSeconds,
            modificationNanoseconds: identity.modificationNanoseconds, device: identity.device,
            inode: identity.inode)
    }
}
