import CloudStorage
import Foundation
import SystemCalls

extension CopyCommand {
    /// `cp - gs://B/P`: uploads standard input as it comes, in blocks of 1 MiB read on a thread
    /// of its own, no faster than the upload takes them.
    ///
    /// The size is unknown (the object ends where the input does) unless standard input is a
    /// regular file (`< file`), whose remaining size is then declared.
    func uploadStandardInput(to address: ObjectAddress, output: OutputWriter) async -> ExitCode {
        let size = Self.regularFileRemainder(input)
        return await withConnection(bucket: address.bucket) { connection in
            let reference = address.reference(in: connection.storage)
            var metadata = write.metadata ?? StorageMetadata()
            if metadata.contentType == nil { metadata.contentType = "application/octet-stream" }
            let blocks = FileDescriptorBlocks(fd: input)
            let preconditions = write.preconditions
            return await runTask(
                { [metadata] in
                    reference.putStream(blocks, size: size, metadata: metadata, preconditions: preconditions)
                },
                output: output, skipping: reference,
                cancelled: "cancelled; nothing was stored (an upload session, if one was open, was deleted)"
            ) { stored in
                "Stored \(reference) (\(stored.size) bytes, \(stored.contentType ?? "no content type"))"
                    + " \(connection.location)"
            }
        }
    }

    /// The bytes left in `fd` when it is a regular file, or nil (a pipe, a terminal).
    static func regularFileRemainder(_ fd: Int32) -> Int64? {
        guard let info = try? SystemCall.status(fd), info.kind == .regular,
            let offset = try? SystemCall.seek(fd, by: 0), info.size >= offset
        else { return nil }
        return info.size - offset
    }
}
