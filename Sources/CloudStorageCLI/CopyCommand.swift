import CloudStorage
import Foundation
import StorageEmulator
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cloud-storage cp SOURCE DESTINATION`: copies a file, standard input or a
/// directory to objects, or objects back to a file, standard output or a
/// directory, showing progress on standard error.
struct CopyCommand {
    static let usage = """
        usage: cloud-storage cp [options] FILE gs://BUCKET/[PATH]     upload a file
               cloud-storage cp [options] - gs://BUCKET/PATH          upload standard input
               cloud-storage cp [options] gs://BUCKET/PATH FILE|DIR   download an object
               cloud-storage cp [options] gs://BUCKET/PATH -          download to standard output
               cloud-storage cp -r [options] DIR gs://BUCKET/[PREFIX] upload a directory
               cloud-storage cp -r [options] gs://BUCKET/[PREFIX] DIR download a prefix

        Uploads FILE, a regular file or a link to one (FIFOs, devices, sockets
        and directories are refused with status 3), to the object PATH (or,
        when PATH is empty or ends in /, to PATH followed by the file's name).
        A download goes to FILE through a temporary file renamed into place once
        its CRC32C matched (nothing is left behind on failure); to DIR/NAME when
        the destination ends in / or is a directory. - reads standard input
        (size unknown unless it is a file; content type application/octet-stream
        unless --content-type) or writes standard output (progress only when
        standard error is a terminal).

        With -r the copy is recursive. The destination is taken as a folder to
        copy into, under the source's last name, when it ends in /, is the bucket
        itself, or already exists (has objects under PREFIX/, or is a directory);
        otherwise it becomes the copy: `cp -r photos gs://b/backup` stores
        backup/a.jpg, and run again (backup/ now exists) backup/photos/a.jpg, as
        gsutil does. Regular files and links to them are copied; links to
        directories are not followed; FIFOs, sockets and devices are skipped and
        counted as failures. Objects whose names end in / (folder placeholders)
        are skipped; one whose name would leave DIR (a .. segment), has an empty
        segment (a//b, whose file would be a/b's) or a NUL byte is refused.
        Object names are exact: gs://BUCKET/a//b is the object a//b.
        Every name is checked before anything is contacted, then up to --jobs
        copies run at once, with one progress line, and a summary at the end:
        "Copied N files (M bytes)", then each failure with its reason.
        \(StorageOptions.destinationUsage)

        Options:
          -r, -R              copy a directory or a prefix, recursively
          --jobs N            with -r, copy up to N files at a time (default 8, at most 256)
        \(StorageOptions.tokenUsage)
          --content-type T    the object's content type (default: from the extension)
          --chunk-size SIZE   at most SIZE bytes per request, a multiple of 256K (e.g. 8M)
          --retry-time T      keep retrying failures that may pass (no connection, 5xx, 429)
                              for up to T, in either direction (also -r's listing):
                              seconds, or a number followed by s, m, h (default 10m
                              for transfers, 2m for listings; 0 gives up at the
                              first failure)
        \(StorageOptions.caFileUsage)
          --no-checksum       do not send or verify CRC32C
          --quiet             no progress

        Ctrl-C (or SIGTERM) cancels the copies (an upload deletes its server session,
        a download its temporary file); if the server has not confirmed within 2
        seconds, or on a second Ctrl-C, the command exits without waiting any longer.

        A file upload above 8 MiB records its resumable session in
        $XDG_STATE_HOME/cloud-storage/uploads (default ~/.local/state/...): if the
        command dies (a crash, kill -9) or its retries run out, running the same
        command again continues from the bytes the server committed, as gsutil does;
        a file that changed since, or a session the server forgot, is uploaded again
        from the start. The record goes once the upload is stored, cancelled or failed
        for good. A session URL lets whoever holds it write the object without other
        credentials, so the directory is the owner's only (0700, records 0600).
        The built-in emulator keeps open sessions in its directory and listens again
        on the port it used last (recorded in DIR/port) so that they can be resumed.
        Exit status: 0 copied, 2 usage (also a bucket or object name that breaks the
        rules, refused before anything is contacted), 3 local file problem, 4 credentials
        refused, 5 bucket or object not found, 6 retries ran out, 7 integrity failure,
        130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 1 other (no credentials
        found or none could be fetched, a server whose certificate does not verify, or
        that does not speak TLS at an https:// address, among them). With -r, the
        highest status among the failures.
        """

    /// Which way the bytes go.
    enum Direction: Equatable {
        /// A local file to an object whose path already has the file's name appended where due.
        case upload(file: URL, to: ObjectAddress)
        /// Standard input to an object.
        case uploadStandardInput(to: ObjectAddress)
        /// An object to a local path as given (a file, or a directory to put it in).
        case download(ObjectAddress, to: String)
        /// An object to standard output.
        case downloadToStandardOutput(ObjectAddress)
        /// `-r DIR gs://…`.
        case uploadDirectory(URL, to: ObjectAddress)
        /// `-r gs://… DIR`; the directory as given (a trailing `/` matters).
        case downloadPrefix(ObjectAddress, to: String)
    }

    let direction: Direction
    /// Where the objects are, and as whom.
    let storage: StorageOptions
    let contentType: String?
    let chunkSize: Int64?
    let verifiesChecksums: Bool
    let quiet: Bool
    /// How long every request of the copy keeps retrying failures that may pass, when
    /// `--retry-time` sets it: the upload, the download, and the listings and metadata requests
    /// around them. nil leaves the SDK's defaults.
    let retryTime: Duration?
    /// How many files `-r` copies at once.
    let jobs: Int
    /// The descriptor `cp -` reads; tests give a pipe's.
    var input: Int32 = STDIN_FILENO
    /// The most entries per listing request; small in tests, to make many pages.
    var pageSize = StorageReference.maximumListResults

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            ShortFlags.expand(words, letters: "rR"),
            valued: StorageOptions.valued.union(["--content-type", "--chunk-size", "--jobs", "--retry-time"]),
            flags: StorageOptions.flags.union(["--no-checksum", "--quiet", "-r", "-R"])
        )
        guard arguments.positional.count == 2 else {
            throw UsageError("cp needs a SOURCE and a DESTINATION, one of them gs://BUCKET/PATH")
        }
        let recursive = arguments.has("-r") || arguments.has("-R")
        direction = try Self.direction(arguments.positional[0], arguments.positional[1], recursive: recursive)

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
        if let text = arguments.value("--jobs") {
            guard let jobs = Int(text), (1...256).contains(jobs) else {
                throw UsageError("--jobs: \(text) is not a number from 1 to 256")
            }
            self.jobs = jobs
        } else {
            jobs = 8
        }
        verifiesChecksums = !arguments.has("--no-checksum")
        quiet = arguments.has("--quiet")
        if let text = arguments.value("--retry-time") {
            guard let seconds = SignCommand.seconds(text), (0...86_400).contains(seconds) else {
                throw UsageError("--retry-time: \(text) is not a time from 0 to 1d (such as 0, 90, 10m or 2h)")
            }
            retryTime = .seconds(seconds)
        } else {
            retryTime = nil
        }
    }

    /// Tells the direction from the two arguments, refusing combinations that make no sense,
    /// and checks the names that are known now by the SDK's rules.
    static func direction(_ source: String, _ destination: String, recursive: Bool) throws(UsageError) -> Direction {
        let remote = { (text: String) in text.hasPrefix("gs://") }
        for text in [source, destination] where !remote(text) && text.contains("://") {
            throw UsageError("only gs:// URLs and local paths can be copied: \(text)")
        }
        switch (remote(source), remote(destination)) {
        case (true, true):
            throw UsageError("cp copies between local files and objects; copying between objects is not supported")
        case (false, false):
            throw UsageError(
                "one of SOURCE and DESTINATION must be gs://BUCKET/PATH (both are local: \(source), \(destination))")
        case (false, true):
            let address = try ObjectAddress(destination, role: "the destination")
            // An upload writes a new generation: `#GEN` is refused here, before the name is rebuilt without it.
            try address.validate(needsObject: false)
            if source == "-" {
                guard !recursive else { throw UsageError("-r copies a directory; it cannot read standard input (-)") }
                guard !address.path.isEmpty, !address.endsInSlash else {
                    throw UsageError("standard input has no file name: give the object's full path, gs://BUCKET/PATH")
                }
                try address.validate(needsObject: true)
                return .uploadStandardInput(to: address)
            }
            let file = URL(fileURLWithPath: source)
            if recursive {
                try address.validate(needsObject: false)
                return .uploadDirectory(file, to: address)
            }
            var path = address.path
            if path.isEmpty || address.endsInSlash { path += file.lastPathComponent }
            let named = ObjectAddress(bucket: address.bucket, path: path)
            try named.validate(needsObject: true)
            return .upload(file: file, to: named)
        case (true, false):
            let address = try ObjectAddress(source, role: "the source")
            if recursive {
                guard destination != "-" else {
                    throw UsageError("-r copies into a directory; it cannot write standard output (-)")
                }
                try address.validate(needsObject: false)
                return .downloadPrefix(address, to: destination)
            }
            guard !address.path.isEmpty, !address.endsInSlash else {
                throw UsageError("\(source) names no object (to copy everything under it, use -r)")
            }
            try address.validate(needsObject: true, allowsGeneration: true)
            return destination == "-" ? .downloadToStandardOutput(address) : .download(address, to: destination)
        }
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

    /// The SDK settings of the command line.
    func configuration() throws(UsageError) -> StorageConfiguration {
        var configuration = StorageConfiguration()
        do {
            try configuration.setChunkSize(chunkSize)
        } catch {
            throw UsageError("\(error.message)", showsUsage: false)
        }
        configuration.verifiesChecksums = verifiesChecksums
        // One option, every direction: an upload, a download (to a file, standard output or a
        // directory) and the requests around them (a listing, a metadata read) give up alike.
        if let retryTime {
            configuration.maxUploadRetryTime = retryTime
            configuration.maxDownloadRetryTime = retryTime
            configuration.maxOperationRetryTime = retryTime
        }
        return configuration
    }

    /// Whether a single transfer shows ProgressBar's bar (or plain lines) on standard error.
    var showsProgress: Bool { !quiet }

    func run(output: OutputWriter) async -> ExitCode {
        switch direction {
        case .upload(let file, let address):
            return await upload(file: file, to: address, output: output)
        case .uploadStandardInput(let address):
            return await uploadStandardInput(to: address, output: output)
        case .download(let address, let destination):
            return await download(address, to: destination, output: output)
        case .downloadToStandardOutput(let address):
            return await downloadToStandardOutput(address, output: output)
        case .uploadDirectory(let directory, let address):
            return await RecursiveCopy(command: self).upload(directory, to: address, output: output)
        case .downloadPrefix(let address, let directory):
            return await RecursiveCopy(command: self).download(address, into: directory, output: output)
        }
    }

    /// Connects for `bucket` with the command's settings, runs `body` with the connection and
    /// closes it; a failure to connect is reported and its status returned instead.
    func withConnection(
        bucket: String, _ body: (StorageOptions.Connection) async -> ExitCode
    ) async -> ExitCode {
        let configuration: StorageConfiguration
        do {
            configuration = try self.configuration()
        } catch {
            report(error.description)
            return .usage
        }
        return await storage.withConnection(bucket: bucket, configuration: configuration, body)
    }

    /// Starts the upload of one local file: the one place where `cp FILE` and `cp -r` begin a
    /// file's upload, so what every upload of a file needs (such as a record of its session
    /// for resuming) goes here.
    static func startUpload(
        of file: URL, to reference: StorageReference, contentType: String?, resuming uploads: ResumableUploads
    ) async -> StorageUploadTask {
        await uploads.start(file, to: reference) {
            var metadata = StorageMetadata()
            metadata.contentType = contentType
            return reference.putFile(from: file, metadata: contentType == nil ? nil : metadata)
        }
    }

    private func upload(file: URL, to address: ObjectAddress, output: OutputWriter) async -> ExitCode {
        // Before anything is started or opened: a FIFO would block the open for ever.
        if let problem = await SourceFile.problem(at: file.path) {
            report(problem)
            return .localFile
        }
        return await withConnection(bucket: address.bucket) { connection in
            let reference = address.reference(in: connection.storage)
            let contentType = contentType
            let uploads = ResumableUploads(
                records: UploadSessionRecords(environment: storage.environment), connection: connection)
            let status = await runTask(
                { await Self.startUpload(of: file, to: reference, contentType: contentType, resuming: uploads) },
                output: output,
                cancelled: "cancelled; nothing was stored (an upload session, if one was open, was deleted)"
            ) { stored in
                "Stored \(reference) (\(stored.size) bytes, \(stored.contentType ?? "no content type"))"
                    + " \(connection.location)"
            }
            await uploads.settle()
            return status
        }
    }

    /// Runs one SDK task to its end with its progress bar, under Ctrl-C's rules, and reports how it ended.
    ///
    /// - Parameters:
    ///   - start: Starts the task; called once the signals are taken over, so none can end
    ///     the process without the task being cancelled.
    ///   - cancelled: What to say when a signal cancelled it.
    ///   - success: The line to print on success.
    func runTask<Task: StorageTask>(
        _ start: @escaping @Sendable () async -> Task, output: OutputWriter, cancelled: String,
        success: (Task.Output) -> String
    ) async -> ExitCode {
        let showsProgress = showsProgress
        let (ending, signal) = await Interruptibly.run { () -> Result<Task.Output, StorageError> in
            let task = await start()
            return await withTaskCancellationHandler {
                var bar = ProgressBar()
                for await snapshot in task.snapshots where showsProgress {
                    bar.show(snapshot)
                }
                do throws(StorageError) {
                    return .success(try await task.value)
                } catch {
                    return .failure(error)
                }
            } onCancel: {
                _Concurrency.Task { await task.cancel() }
            }
        }
        let outcome: Result<Task.Output, StorageError>
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
            let value = try outcome.get()
            _ = try? await output.write(success(value) + "\n")
            return .success
        } catch {
            if error.code == .cancelled {
                report(cancelled)
                if let signal { return ExitCode(signal: signal) }
            } else {
                Self.reportFailure(error)
            }
            return ExitCode(error)
        }
    }

    /// Reports a transfer's failure on standard error, with advice where there is some.
    /// Reports how a download that wrote its bytes as they came (to standard output) ended
    /// badly: what was written is unverified when the checksum or the object failed at the end.
    static func reportStreamFailure(_ error: StorageError, of reference: StorageReference, written: Int64) {
        if error.code == .nonMatchingChecksum || error.code == .objectChanged {
            CloudStorageCLI.report(
                "\(reference): the \(written) bytes written do not match the stored object (\(error.message));"
                    + " do not trust them")
        } else if error.code == .objectNotFound {
            CloudStorageCLI.report("No such object: \(reference)")
        } else if error.code == .tlsFailure {
            reportFailure(error)
        } else {
            CloudStorageCLI.report("\(reference): \(error)")
        }
    }

    static func reportFailure(_ error: StorageError) {
        if error.code == .tlsFailure {
            // The message names the server and the cause; the underlying error would only repeat it.
            let untrusted = error.message.contains("issuer is not trusted")
            CloudStorageCLI.report(
                error.message
                    + (untrusted
                        ? " If a private certificate authority issued it, pass that CA's certificate with --ca-file FILE."
                        : ""))
        } else {
            CloudStorageCLI.report(String(describing: error))
        }
    }
}

extension ObjectAddress: Equatable {
    /// An address made of its parts, already split.
    init(bucket: String, path: String) {
        self.bucket = bucket
        self.path = path
    }

    static func == (lhs: ObjectAddress, rhs: ObjectAddress) -> Bool {
        lhs.bucket == rhs.bucket && lhs.path == rhs.path
    }
}

/// Writes a message for people to standard error.
func report(_ message: String) {
    FileHandle.standardError.write(Data("cloud-storage: \(message)\n".utf8))
}
