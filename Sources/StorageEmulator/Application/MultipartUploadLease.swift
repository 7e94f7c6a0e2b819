/// An XML API multipart upload's place in the ``SessionTable``: how `--max-sessions` and the
/// session lifetime bound multipart uploads together with resumable sessions.
///
/// Ending it (expiry, eviction, the emulator stopping) removes the upload from the
/// ``MultipartUploadTable``; its parts' staged bytes go with it. An upload is idle, hence
/// evictable, while no part is being written into its shared writer and no Complete runs.
final class MultipartUploadLease: BoundedUpload {
    let id: String
    private let table: MultipartUploadTable

    init(id: String, table: MultipartUploadTable) {
        self.id = id
        self.table = table
    }

    func cancel() {
        table.remove(id)
    }

    func cancelIfIdle() -> Bool {
        table.upload(id) == nil || table.remove(id, if: { !$0.completing }) != nil
    }

    func detach() {
        table.remove(id)
    }
}
