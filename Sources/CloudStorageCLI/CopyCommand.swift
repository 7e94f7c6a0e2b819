import CloudStorage
import Foundation
import StorageEmulator
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cloud-storage cp FILE gs://BUCKET/PATH`: uploads a file with a progress bar.
struct CopyCommand {
    static let usage = """
        usage: cloud-storage cp [options] FILE gs://BUCKET/[PATH]

        Uploads FILE, a regular file or a link to one (FIFOs, devices, sockets
        and directories are refused with status 3), to the object PATH (or,
        when PATH is empty or ends in /, to PATH followed by the file's name).
        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
          --content-type T    the object's content type (default: from the extension)
          --chunk-size SIZE   at most SIZE bytes per request, a multiple of 256K (e.g. 8M)
        \(StorageOptions.caFileUsage)
          --no-checksum       do not send or verify CRC32C
          --quiet             no progress bar

        Ctrl-C (or SIGTERM) cancels the upload and deletes the server's upload
        session; if the server has not confirmed within 2 seconds, or on a second
        Ctrl-C, the command exits without waiting any longer.
        Exit status: 0 stored, 2 usage, 3 local file problem, 4 credentials refused,
        5 bucket not found, 6 retries ran out, 7 integrity failure, 130 interrupted
        (Ctrl-C), 143 terminated (SIGTERM), 1 other (no credentials found or none could
        be fetched, a server whose certificate does not verify, or that does not speak
        TLS at an https:// address, among them).
        """

    let source: URL
    let bucket: String
    let path: String
    /// Where the object goes, and as whom.
    let storage: StorageOptions
    let contentType: String?
    let chunkSize: Int64?
    let verifiesChecksums: Bool
    let quiet: Bool

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            words,
            valued: StorageOptions.valued.union(["--content-type", "--chunk-size"]),
            flags: StorageOptions.flags.union(["--no-checksum", "--quiet"])
        )
        guard arguments.positional.count == 2 else { throw UsageError("cp needs a FILE and a gs://BUCKET/PATH") }
        let file = arguments.positional[0]
        guard file != "-" else { throw UsageError("reading from standard input is not supported yet; give a file") }
        source = URL(fileURLWithPath: file)
        let destination = try ObjectAddress(arguments.positional[1], role: "the destination")
        bucket = destination.bucket
        var objectPath = destination.path
        if objectPath.isEmpty || objectPath.hasSuffix("/") {
            objectPath += source.lastPathComponent
        }
        path = objectPath

        storage = try StorageOptions(arguments, environment: environment)
        contentType = arguments.value("--content-type")
        if let text = arguments.value("--chunk-size") {
            guard let size = Self.byteCount(text) else { throw UsageError("--chunk-size: not a size: \(text)") }
            // Checked here so a typo fails before any server is started or contacted.
            guard size > 0, size % StorageConfiguration.chunkGranularity == 0 else {
                throw UsageError("--chunk-size: \(text) is not a positive multiple of 256K (262144 bytes)")
            }
            chunkSize = size
        } else {
            chunkSize = nil
        }
        verifiesChecksums = !arguments.has("--no-checksum")
        quiet = arguments.has("--quiet")
    }

    /// Parses `262144`, `256K`, `8M`, `1G` (powers of 1024).
    static func byteCount(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        if let last = text.uppercased().last, let unit = units[last] {
            return Int64(text.dropLast()).flatMap {
                $0.multipliedReportingOverflow(by: unit).overflow ? nil : $0 * unit
            }
        }
        return Int64(text)
    }

    func run() async -> ExitCode {
        // Before anything is started or opened: a FIFO would block the open for ever.
        if let problem = await SourceFile.problem(at: source.path) {
            report(problem)
            return .localFile
        }
        var configuration = StorageConfiguration()
        do {
            try configuration.setChunkSize(chunkSize)
        } catch {
            report("\(error.message)")
            return .usage
        }
        configuration.verifiesChecksums = verifiesChecksums
        let connection: StorageOptions.Connection
        do {
            connection = try await storage.connect(bucket: bucket, configuration: configuration)
        } catch {
            return error.reported()
        }
        defer { connection.close() }
        let reference: StorageReference
        do {
            reference = try connection.storage.reference(forURL: "gs://\(bucket)/\(path)")
        } catch {
            report("\(error.message)")
            return .usage
        }
        var metadata = StorageMetadata()
        metadata.contentType = contentType

        // Signals are taken over before the upload starts, so none can end the
        // process without the upload being cancelled.
        let slot = UploadSlot()
        let interruption = Interruption { slot.cancel() }
        let interrupts = SignalHandler { interruption.interrupt($0) }
        let task = reference.putFile(from: source, metadata: contentType == nil ? nil : metadata)
        slot.set(task)
        // Cancelling the Swift task that runs the command (as a caller embedding
        // it does, and as the tests do) is a Ctrl-C too: `task.value` alone
        // would let the upload carry on.
        let ending = await withTaskCancellationHandler {
            await Self.wait(for: task, showingProgress: !quiet, unless: interruption)
        } onCancel: {
            interruption.interrupt(SIGINT)
        }
        withExtendedLifetime(interrupts) {}

        let outcome: Result<StorageMetadata, StorageError>
        switch ending {
        case .finished(let finished):
            outcome = finished
        case .abandoned(let signal):
            report(
                "interrupted; the server did not confirm the cancellation in time, so an upload session may remain"
                    + " open until it expires (nothing is stored unless the server had all the bytes)")
            return ExitCode(signal: signal)
        }
        do {
            let stored = try outcome.get()
            print(
                "Stored \(reference) (\(stored.size) bytes, \(stored.contentType ?? "no content type"))"
                    + " \(connection.location)")
            return .success
        } catch {
            if error.code == .cancelled {
                report("cancelled; nothing was stored (an upload session, if one was open, was deleted)")
                if let signal = interruption.signal { return ExitCode(signal: signal) }
            } else if error.code == .tlsFailure {
                // The message names the server and the cause; the underlying error would only repeat it.
                let untrusted = error.message.contains("issuer is not trusted")
                report(
                    error.message
                        + (untrusted
                            ? " If a private certificate authority issued it, pass that CA's certificate with --ca-file FILE."
                            : ""))
            } else {
                report(String(describing: error))
            }
            return ExitCode(error)
        }
    }

    /// How waiting for an upload ended.
    enum Ending: Sendable {
        /// The upload ended, this way.
        case finished(Result<StorageMetadata, StorageError>)
        /// A signal's grace period ran out first (or a second signal came).
        case abandoned(signal: Int32)
    }

    /// Waits for `task` to end, showing its progress, or for `interruption`
    /// to give up on it, whichever comes first.
    static func wait(
        for task: StorageUploadTask, showingProgress: Bool, unless interruption: Interruption
    ) async -> Ending {
        await withCheckedContinuation { (continuation: CheckedContinuation<Ending, Never>) in
            let once = OnceFlag()
            interruption.onAbandon { signal in
                if once.take() { continuation.resume(returning: .abandoned(signal: signal)) }
            }
            Task {
                var bar = ProgressBar()
                for await snapshot in task.snapshots where showingProgress {
                    bar.show(snapshot)
                }
                let outcome: Result<StorageMetadata, StorageError>
                do throws(StorageError) {
                    outcome = .success(try await task.value)
                } catch {
                    outcome = .failure(error)
                }
                if once.take() { continuation.resume(returning: .finished(outcome)) }
            }
        }
    }
}

/// The upload a signal cancels, which may arrive before the upload exists.
private final class UploadSlot: Sendable {
    private let state = Mutex<(task: StorageUploadTask?, cancelled: Bool)>((nil, false))

    /// Cancels the upload now, or as soon as it is set.
    func cancel() {
        let task = state.withLock { state -> StorageUploadTask? in
            state.cancelled = true
            return state.task
        }
        if let task { Task { await task.cancel() } }
    }

    func set(_ task: StorageUploadTask) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelled { Task { await task.cancel() } }
    }
}

/// Writes a message for people to standard error.
func report(_ message: String) {
    FileHandle.standardError.write(Data("cloud-storage: \(message)\n".utf8))
}
