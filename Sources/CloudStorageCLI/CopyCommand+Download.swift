import CloudStorage
import Foundation

extension CopyCommand {
    /// `cp gs://B/P FILE` and `cp gs://B/P DIR/`: through the SDK's file download, which writes a
    /// temporary file renamed into place only once every byte arrived and the CRC32C matched.
    func download(_ address: ObjectAddress, to destination: String, output: OutputWriter) async -> ExitCode {
        let name = address.path.split(separator: "/").last.map(String.init) ?? address.path
        // Checked before anything is started, so a typo in the path fails without a progress bar.
        let target: URL
        switch await LocalDestination.file(destination, defaultName: name) {
        case .success(let resolved): target = resolved
        case .failure(let problem):
            report(problem.message)
            return .localFile
        }
        // Checked before the download (the file may still appear while it runs; it is then replaced).
        if write.noClobber, await LocalDestination.offThePool({ LocalDestination.kind(of: target.path) != nil }) {
            _ = try? await output.write(Self.skipLine(target.path) + "\n")
            return .success
        }
        return await withConnection(bucket: address.bucket) { connection in
            let reference = address.reference(in: connection.storage)
            // mv pins the generation it downloads, and deletes only that one: a newer write is kept.
            var pinned = StoragePreconditions()
            if moves {
                do throws(StorageError) {
                    pinned.ifGenerationMatch = try await reference.getMetadata().generation
                } catch {
                    Self.reportFailure(error)
                    return ExitCode(error)
                }
                guard pinned.ifGenerationMatch != nil else {
                    report("\(reference): the server reported no generation, which mv pins; nothing was moved")
                    return .failure
                }
            }
            return await runTask(
                { [pinned] in reference.write(toFile: target, preconditions: pinned) }, output: output,
                cancelled: "cancelled; nothing was written (the partial download was deleted)",
                success: { _ in "Copied \(reference) to \(target.path)" },
                then: moves ? { _ in await Self.removeMovedObject(reference, pinned: pinned) } : nil)
        }
    }

    /// How a download to standard output ended.
    private enum StreamOutcome: Sendable {
        case done(Int64)
        /// The reader went away: what it wanted it has.
        case readerGone
        case failed(StorageError, written: Int64)
    }

    /// `cp gs://B/P -`: streams the object to standard output through the command's writer.
    func downloadToStandardOutput(_ address: ObjectAddress, output: OutputWriter) async -> ExitCode {
        return await withConnection(bucket: address.bucket) { connection in
            let reference = address.reference(in: connection.storage)
            // Standard output carries the bytes: progress goes to standard error, and only to a person.
            let showsProgress = !quiet
            let (ending, signal) = await Interruptibly.run { () -> StreamOutcome in
                var bar = ProgressBar()
                var written: Int64 = 0
                do throws(StorageError) {
                    for try await chunk in reference.dataStream() {
                        do {
                            try await output.write(chunk)
                        } catch {
                            return .readerGone
                        }
                        written += Int64(chunk.count)
                        if showsProgress { bar.show(streamed: written, finished: false) }
                    }
                } catch {
                    return .failed(error, written: written)
                }
                if showsProgress { bar.show(streamed: written, finished: true) }
                return .done(written)
            }
            switch ending {
            case .abandoned(let signal):
                report("interrupted")
                return ExitCode(signal: signal)
            case .finished(.done), .finished(.readerGone):
                return .success
            case .finished(.failed(let error, let written)):
                if error.code == .cancelled, let signal {
                    report("interrupted after \(written) bytes")
                    return ExitCode(signal: signal)
                }
                Self.reportStreamFailure(error, of: reference, written: written)
                return ExitCode(error)
            }
        }
    }
}
