import CloudStorage
import Foundation
import Synchronization
import SystemCalls

extension CopyCommand {
    /// `cloud-storage mv`'s usage: `cp`'s directions for one file or object, then the source goes.
    static let moveUsage = """
        usage: cloud-storage mv [options] FILE gs://BUCKET/[PATH]      upload, then delete FILE
               cloud-storage mv [options] gs://BUCKET/PATH FILE|DIR    download, then delete the object
               cloud-storage mv [options] gs://BUCKET/PATH gs://BUCKET2/[PATH2]
                                                                  move an object on the server

        Moves one file or object. An upload is verified (CRC32C) before FILE is deleted; a
        download is verified and renamed into place before the object is deleted, and
        both the download and the delete are pinned to the generation read first
        (ifGenerationMatch), so an object written meanwhile is never deleted. Between
        objects of one bucket the move is Cloud Storage's atomic moveTo; between two
        buckets, or on a server without moveTo, it is a server-side copy then a delete of
        the source (pinned to its generation too), which is NOT atomic: for a moment both
        exist, and a failure between the steps leaves both. When the removal of the
        source fails, the copy stays and so does the source; the command says so and
        exits with the removal's status. No -r, standard input or output, or --no-checksum.
        A move keeps the object's metadata (the metadata options apply to uploads only).

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(ObjectWriteOptions.metadataUsage)
        \(ObjectWriteOptions.preconditionUsage)
          --chunk-size SIZE, --retry-time T, --quiet   as for cp
        \(StorageOptions.connectionUsage)

        Exit status: as cp's (0 moved or skipped by -n, 2 usage, 3 local file problem,
        4 credentials refused, 5 not found, 6 retries ran out, 7 integrity failure,
        8 a condition did not hold, 130/143 interrupted, 1 other).
        """

    /// `cp gs://… gs://…` (a rewrite, repeated until done) and `mv gs://… gs://…` (moveTo, or a
    /// copy then a delete): no byte passes through this process.
    func copyObject(_ source: ObjectAddress, to destination: ObjectAddress, output: OutputWriter) async -> ExitCode {
        await withConnection(bucket: source.bucket) { connection in
            let from = source.reference(in: connection.storage)
            let to = destination.reference(in: connection.storage(for: destination.bucket))
            let (metadata, preconditions, moves) = (write.metadata, write.preconditions, moves)
            let line = ProgressLine(shown: showsProgress && !moves)
            let (ending, signal) = await Interruptibly.run { () -> Result<StorageMetadata, StorageError> in
                do throws(StorageError) {
                    if moves { return .success(try await from.move(to: to, preconditions: preconditions)) }
                    let copied = try await from.copy(to: to, metadata: metadata, preconditions: preconditions) {
                        line.show($0, finished: false)
                    }
                    line.show(
                        TaskProgress(completedUnitCount: copied.size, totalUnitCount: copied.size), finished: true)
                    return .success(copied)
                } catch {
                    return .failure(error)
                }
            }
            return await Self.conclude(
                ending, signal: signal, output: output, skipping: write.noClobber ? to : nil,
                cancelled: "cancelled; the destination was left as it was",
                abandoned: "interrupted; the server did not answer in time (the destination is written only"
                    + " when the copy completes)",
                success: { copied in "\(moves ? "Moved" : "Copied") \(from) to \(to) (\(copied.size) bytes)" },
                then: nil)
        }
    }

    /// `mv FILE gs://…`'s last step, once the upload was stored and verified: deletes `file`.
    ///
    /// - Returns: `.success`, or `.localFile` after saying that the file stays.
    static func removeMovedFile(_ file: URL) async -> ExitCode {
        let failure = await LocalDestination.offThePool { () -> String? in
            do throws(SystemCallError) {
                try SystemCall.unlink(file.path)
                return nil
            } catch {
                return error.reason
            }
        }
        guard let failure else { return .success }
        report("the object was stored, but \(file.path) could not be deleted (\(failure)); it was left in place")
        return .localFile
    }

    /// `mv gs://… FILE`'s last step, once the download was verified and renamed into place:
    /// deletes the object, only at the generation downloaded.
    static func removeMovedObject(_ reference: StorageReference, pinned: StoragePreconditions) async -> ExitCode {
        do throws(StorageError) {
            try await reference.delete(preconditions: pinned)
            return .success
        } catch {
            let reason =
                error.code == .preconditionFailed
                ? "it was replaced after the download (the newer object is kept)" : error.message
            report("the file was written, but \(reference) was not deleted: \(reason); it was left in place")
            return ExitCode(error)
        }
    }
}

/// A server-side copy's progress bar, fed from the SDK's progress callback (any thread).
final class ProgressLine: Sendable {
    private let bar = Mutex(ProgressBar())
    private let shown: Bool

    init(shown: Bool) { self.shown = shown }

    func show(_ progress: TaskProgress, finished: Bool) {
        guard shown else { return }
        bar.withLock { $0.show(copied: progress, finished: finished) }
    }
}
