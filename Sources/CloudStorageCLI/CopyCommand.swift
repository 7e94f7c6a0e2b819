import CloudStorage
import CloudStorageWire
import Foundation
import StorageEmulator
import Synchronization
import SystemCalls

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
               cloud-storage cp [options] gs://BUCKET/PATH gs://BUCKET2/[PATH2]
                                                                 copy an object on the server
               cloud-storage cp -r [options] gs://BUCKET/[PREFIX] gs://BUCKET2/[PREFIX2]
                                                                 copy a prefix on the server

        Uploads FILE, a regular file or a link to one (FIFOs, devices, sockets
        and directories are refused with status 3), to the object PATH (or,
        when PATH is empty or ends in /, to PATH followed by the file's name).
        A download goes to FILE through a hidden temporary file
        (.NAME.XXXXXXXX.download, locked while written) renamed into place once
        its CRC32C matched; a file it replaces keeps its mode. A failure or
        Ctrl-C removes the temporary file; one left by a killed process is
        removed by the next download of FILE, and never uploaded. A download
        goes to DIR/NAME when the destination ends in / or is a directory.
        - reads standard input (size unknown unless it is a file; content type
        application/octet-stream unless --content-type) or writes standard
        output (progress only when standard error is a terminal).

        Between two gs:// URLs (the same bucket or two) the copy runs on the server
        (a rewrite, repeated until done for large objects): no byte passes through
        this machine. When PATH2 is empty or ends in /, the source's last name is
        appended. The copy keeps the source's metadata, unless a metadata option is
        given: then the options' metadata replaces the source's as a whole (Cloud
        Storage's rule for a copy with metadata): `--custom-metadata k=v` alone
        leaves the copy without the source's content type and other keys.

        With -r the copy is recursive. The destination is taken as a folder to
        copy into, under the source's last name, when it ends in /, is the bucket
        itself, or already exists (has objects under PREFIX/, or is a directory);
        otherwise it becomes the copy: `cp -r photos gs://b/backup` stores
        backup/a.jpg, and run again (backup/ now exists) backup/photos/a.jpg, as
        gsutil does. Regular files and links to them are copied; links to
        directories are not followed; FIFOs, sockets and devices are skipped and
        counted as failures. Objects whose names end in / (folder placeholders)
        are skipped; one whose name would leave DIR (a .. segment), has an empty
        segment (a//b, whose file would be a/b's) or a NUL byte is refused, and so
        is one whose path below DIR runs through a symbolic link (never followed:
        nothing is written outside DIR). Object names are exact: gs://BUCKET/a//b
        is the object a//b.
        Every name is checked before anything is contacted, then up to --jobs
        copies run at once, with one progress line, and a summary at the end:
        "Copied N files (M bytes)", then each failure with its reason.
        \(StorageOptions.destinationUsage)

        Options:
          -r, -R              copy a directory or a prefix, recursively
          --jobs N            with -r, copy up to N files at a time (default 8, at most 256)
        \(StorageOptions.tokenUsage)
        \(ObjectWriteOptions.metadataUsage)
        \(ObjectWriteOptions.preconditionUsage)
          With -r only the metadata options apply; a download takes only -n, which then
          keeps an existing local file (checked before the download starts).
          -z EXTS             gzip-compress uploaded files whose extension is in EXTS (a comma
                              list, such as js,css,html): stored with Content-Encoding gzip,
                              as gcloud storage cp -z does; downloads decompress them again
          -Z                  gzip-compress every uploaded file (gcloud's -Z)
          --chunk-size SIZE   at most SIZE bytes per request, a multiple of 256K (e.g. 8M)
        \(SlicedDownloadOptions.usage)
        \(ParallelUploadOptions.usage)
          --retry-time T      keep retrying failures that may pass (no connection, 5xx, 429)
                              for up to T, in either direction (also -r's listing):
                              seconds, or a number followed by s, m, h (default 10m
                              for transfers, 2m for listings; 0 gives up at the
                              first failure)
        \(StorageOptions.connectionUsage)
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
        Exit status: 0 copied (or skipped by -n), 2 usage (also a bucket or object name that breaks the
        rules, refused before anything is contacted), 3 local file problem, 4 credentials
        refused, 5 bucket or object not found, 6 retries ran out, 7 integrity failure,
        8 a condition (--if-generation-match, --if-metageneration-match) did not hold, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 1 other (no credentials
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
        /// An object to another, on the server; the destination's path has the source's name
        /// appended where due.
        case copyObject(ObjectAddress, to: ObjectAddress)
        /// `-r gs://… gs://…`, on the server, object by object.
        case copyPrefix(ObjectAddress, to: ObjectAddress)
    }

    let direction: Direction
    /// Where the objects are, and as whom.
    let storage: StorageOptions
    /// The written object's metadata and the conditions on the one it replaces.
    let write: ObjectWriteOptions
    /// Whether this is `mv`: the source goes once the copy is stored and verified.
    let moves: Bool
    let chunkSize: Int64?
    /// `--slices`, `--slice-threshold`: how file downloads are sliced.
    let slicing: SlicedDownloadOptions
    /// `--parallel-threshold`, `--part-size`, `--connections`: when a file goes up in parts.
    let parallel: ParallelUploadOptions
    let verifiesChecksums: Bool
    let quiet: Bool
    /// How long every request of the copy keeps retrying failures that may pass, when
    /// `--retry-time` sets it: the upload, the download, and the listings and metadata requests
    /// around them. nil leaves the SDK's defaults.
    let retryTime: Duration?
    /// How many files `-r` copies at once.
    let jobs: Int
    /// Which uploaded files are gzip-compressed on the way (`-z EXTS`, `-Z`); nil for none.
    let compressing: Compressing?

    /// Which uploaded files `-z` and `-Z` compress.
    enum Compressing: Equatable, Sendable {
        /// `-Z`: every file.
        case all
        /// `-z EXTS`: files whose extension (after the last dot, case-insensitive) is listed.
        case extensions(Set<String>)

        /// Whether `file` is compressed.
        func applies(to file: URL) -> Bool {
            switch self {
            case .all: return true
            case .extensions(let extensions):
                let name = file.lastPathComponent
                guard let dot = name.lastIndex(of: ".") else { return false }
                return extensions.contains(name[name.index(after: dot)...].lowercased())
            }
        }
    }
    /// The descriptor `cp -` reads; tests give a pipe's.
    var input: Int32 = StandardStream.input
    /// The most entries per listing request; small in tests, to make many pages.
    var pageSize = StorageReference.maximumListResults

    /// Parses `cp`'s words, or `mv`'s.
    ///
    /// - Parameter moving: Whether the command is `mv`, which moves one file or object (no -r,
    ///   no standard input or output) and always verifies what it copied before removing the source.
    init(_ words: [String], environment: [String: String], moving: Bool = false) throws(UsageError) {
        let verb = moving ? "mv" : "cp"
        let arguments = try CommandLineArguments(
            ShortFlags.expand(words, letters: "rRn"),
            valued: StorageOptions.valued.union(["--chunk-size", "--jobs", "--retry-time", "-z"])
                .union(ObjectWriteOptions.metadataValued).union(ObjectWriteOptions.preconditionValued)
                .union(SlicedDownloadOptions.valued).union(ParallelUploadOptions.valued),
            flags: StorageOptions.flags.union(["--no-checksum", "--quiet", "-r", "-R", "-Z"])
                .union(ObjectWriteOptions.noClobberFlags)
        )
        guard arguments.positional.count == 2 else {
            throw UsageError("\(verb) needs a SOURCE and a DESTINATION, one of them gs://BUCKET/PATH")
        }
        let recursive = arguments.has("-r") || arguments.has("-R")
        let (source, destination) = (arguments.positional[0], arguments.positional[1])
        if moving {
            guard !recursive else { throw UsageError("mv moves one file or object; -r is not supported") }
            guard source != "-", destination != "-" else {
                throw UsageError("mv moves a file or an object; it cannot read standard input or write standard output")
            }
            // The source goes only once its copy is known to be whole.
            guard !arguments.has("--no-checksum") else {
                throw UsageError("mv always verifies the copy before removing the source; --no-checksum is refused")
            }
        }
        direction = try Self.direction(source, destination, recursive: recursive)
        moves = moving

        storage = try StorageOptions(arguments, environment: environment)
        write = try ObjectWriteOptions(arguments)
        try Self.check(write, arguments: arguments, for: direction, verb: verb)
        chunkSize = try Self.chunkSize(arguments)
        slicing = try SlicedDownloadOptions(arguments)
        parallel = try ParallelUploadOptions(arguments)
        jobs = try arguments.jobs(default: 8)
        compressing = try Self.compressing(arguments, for: direction, verb: verb)
        verifiesChecksums = !arguments.has("--no-checksum")
        quiet = arguments.has("--quiet")
        retryTime = try Self.retryTime(arguments)
    }

    /// `--chunk-size`: an upload's chunk size, a positive multiple of 256 KiB; nil for the SDK's default.
    static func chunkSize(_ arguments: CommandLineArguments) throws(UsageError) -> Int64? {
        guard let text = arguments.value("--chunk-size") else { return nil }
        guard let size = Self.byteCount(text) else { throw UsageError("--chunk-size: not a size: \(text)") }
        // Checked here so a typo fails before any server is started or contacted.
        guard ProtocolLimits.isChunkSize(size) else {
            throw UsageError("--chunk-size: \(text) is not a positive multiple of \(ProtocolLimits.chunkGranularityText)")
        }
        return size
    }

    /// `--jobs`: how many transfers of `-r` run at once, from 1 to 256; 8 when not given.
    /// `-Z` (every file) or `-z EXT,…` (files with those extensions), which only uploads take;
    /// nil when neither is given.
    static func compressing(
        _ arguments: CommandLineArguments, for direction: Direction, verb: String
    ) throws(UsageError) -> Compressing? {
        let compressing: Compressing?
        if arguments.has("-Z") {
            guard arguments.value("-z") == nil else { throw UsageError("-z and -Z cannot be combined") }
            compressing = .all
        } else if let text = arguments.value("-z") {
            let extensions = Set(
                text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                    .map { $0.hasPrefix(".") ? String($0.dropFirst()) : $0 }.filter { !$0.isEmpty })
            guard !extensions.isEmpty else { throw UsageError("-z: no extension given (such as -z js,css)") }
            compressing = .extensions(extensions)
        } else {
            compressing = nil
        }
        if compressing != nil {
            switch direction {
            case .upload, .uploadDirectory: break
            default: throw UsageError("-z and -Z compress files \(verb) uploads; use them with FILE or -r DIR")
            }
        }
        return compressing
    }

    /// `--retry-time`: how long the copy's requests keep retrying, from 0 to a day; nil for the SDK's defaults.
    static func retryTime(_ arguments: CommandLineArguments) throws(UsageError) -> Duration? {
        guard let text = arguments.value("--retry-time") else { return nil }
        guard let seconds = SignCommand.seconds(text), (0...86_400).contains(seconds) else {
            throw UsageError("--retry-time: \(text) is not a time from 0 to 1d (such as 0, 90, 10m or 2h)")
        }
        return .seconds(seconds)
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
            return try copyDirection(source, destination, recursive: recursive)
        case (false, false):
            throw UsageError(
                "one of SOURCE and DESTINATION must be gs://BUCKET/PATH (both are local: \(source), \(destination))")
        case (false, true):
            return try uploadDirection(source, destination, recursive: recursive)
        case (true, false):
            return try downloadDirection(source, destination, recursive: recursive)
        }
    }

    /// The direction from one object or prefix to another: `.copyPrefix` with `-r`, else
    /// `.copyObject`, into the destination's folder when it names one.
    static func copyDirection(
        _ source: String, _ destination: String, recursive: Bool
    ) throws(UsageError) -> Direction {
        let from = try ObjectAddress(source, role: "the source")
        let to = try ObjectAddress(destination, role: "the destination")
        if recursive {
            try from.validate(needsObject: false)
            try to.validate(needsObject: false)
            return .copyPrefix(from, to: to)
        }
        guard !from.path.isEmpty, !from.endsInSlash else {
            throw UsageError("\(source) names no object (to copy everything under it, use -r)")
        }
        try from.validate(needsObject: true, allowsGeneration: true)
        // The copy writes a new generation: `#GEN` is refused here, before the name is rebuilt without it.
        try to.validate(needsObject: false)
        var path = to.path
        if path.isEmpty || to.endsInSlash {
            path += from.path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        }
        let named = ObjectAddress(bucket: to.bucket, path: path)
        try named.validate(needsObject: true)
        return .copyObject(from, to: named)
    }

    /// The direction from a local file, directory (`-r`) or standard input (`-`) to an object
    /// or prefix, which is named after the file when it names a folder.
    static func uploadDirection(
        _ source: String, _ destination: String, recursive: Bool
    ) throws(UsageError) -> Direction {
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
    }

    /// The direction from an object or prefix (`-r`) to a local file, directory or standard
    /// output (`-`).
    static func downloadDirection(
        _ source: String, _ destination: String, recursive: Bool
    ) throws(UsageError) -> Direction {
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

    /// Refuses the write options where they cannot apply: on what writes no object (a download
    /// takes only `-n`, for its local file), the conditions with `-r` (one generation names one
    /// object), and metadata on `mv` between objects (a move keeps the object's metadata).
    static func check(
        _ write: ObjectWriteOptions, arguments: CommandLineArguments, for direction: Direction, verb: String
    ) throws(UsageError) {
        switch direction {
        case .download, .downloadToStandardOutput, .downloadPrefix:
            if let option = ObjectWriteOptions.firstValued(in: arguments) {
                throw UsageError("\(option) applies to objects \(verb) writes; a download writes a local file")
            }
            let toFile: Bool
            if case .download = direction { toFile = true } else { toFile = false }
            if write.noClobber && !toFile {
                throw UsageError("-n applies to a single download to a file, not to standard output or -r")
            }
        case .uploadDirectory, .copyPrefix:
            if write.hasPreconditions {
                throw UsageError(
                    "-r copies many objects: -n, --if-generation-match and --if-metageneration-match name one")
            }
        case .copyObject where verb == "mv":
            if write.metadata != nil {
                throw UsageError("mv keeps the object's metadata; change it afterwards with `cloud-storage update`")
            }
        case .upload, .uploadStandardInput, .copyObject:
            break
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
            try configuration.uploads.setChunkSize(chunkSize)
            try parallel.apply(to: &configuration.uploads.parallel)
            try slicing.apply(to: &configuration.downloads)
            // One option, every direction: an upload, a download (to a file, standard output or a
            // directory) and the requests around them (a listing, a metadata read) give up alike.
            if let retryTime {
                try configuration.retry.setMaxUploadTime(retryTime)
                try configuration.retry.setMaxDownloadTime(retryTime)
                try configuration.retry.setMaxOperationTime(retryTime)
            }
        } catch {
            throw UsageError("\(error.message)", showsUsage: false)
        }
        configuration.verifiesChecksums = verifiesChecksums
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
        case .copyObject(let source, let destination):
            return await copyObject(source, to: destination, output: output)
        case .copyPrefix(let source, let destination):
            return await RecursiveCopy(command: self).copy(source, to: destination, output: output)
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
    ///
    /// A file `compressing` applies to is gzip-compressed as it goes (a stream, so no session
    /// record: a new command uploads it again).
    static func startUpload(
        of file: URL, to reference: StorageReference, metadata: StorageMetadata?,
        preconditions: StoragePreconditions = .none, compressing: Compressing? = nil,
        resuming uploads: ResumableUploads
    ) async -> StorageUploadTask {
        if compressing?.applies(to: file) == true {
            return reference.putFile(from: file, metadata: metadata, preconditions: preconditions, compression: .gzip)
        }
        return await uploads.start(file, to: reference) {
            reference.putFile(from: file, metadata: metadata, preconditions: preconditions)
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
            let (metadata, preconditions) = (write.metadata, write.preconditions)
            let uploads = ResumableUploads(
                records: UploadSessionRecords(environment: storage.environment), connection: connection)
            let status = await runTask(
                {
                    await Self.startUpload(
                        of: file, to: reference, metadata: metadata, preconditions: preconditions,
                        compressing: compressing, resuming: uploads)
                },
                output: output, skipping: reference,
                cancelled: "cancelled; nothing was stored (an upload session, if one was open, was deleted)",
                success: { stored in
                    "Stored \(reference) (\(stored.size) bytes, \(stored.contentType ?? "no content type"))"
                        + " \(connection.location)"
                },
                then: moves ? { _ in await Self.removeMovedFile(file) } : nil)
            await uploads.settle()
            return status
        }
    }

    /// Runs one SDK task to its end with its progress bar, under Ctrl-C's rules, and reports how it ended.
    ///
    /// - Parameters:
    ///   - start: Starts the task; called once the signals are taken over, so none can end
    ///     the process without the task being cancelled.
    ///   - skipping: The object written, when the task writes one: with `-n`, a failed
    ///     condition is then a skip of that object (status 0), not a failure.
    ///   - cancelled: What to say when a signal cancelled it.
    ///   - success: The line to print on success.
    ///   - then: What to do after a success (`mv` removes the source); its status is the command's.
    func runTask<Task: StorageTask>(
        _ start: @escaping @Sendable () async -> Task, output: OutputWriter, skipping: StorageReference? = nil,
        cancelled: String, success: (Task.Output) -> String, then: ((Task.Output) async -> ExitCode)? = nil
    ) async -> ExitCode {
        let showsProgress = showsProgress
        let skips = write.noClobber && skipping != nil
        let (ending, signal) = await Interruptibly.run { () -> Result<Task.Output, StorageError> in
            let task = await start()
            return await withTaskCancellationHandler {
                var bar = ProgressBar()
                for await snapshot in task.snapshots where showsProgress {
                    // A destination -n skips is no failure: its line says so instead of the bar.
                    if skips && snapshot.error?.code == .preconditionFailed { continue }
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
        return await Self.conclude(
            ending, signal: signal, output: output, skipping: write.noClobber ? skipping : nil, cancelled: cancelled,
            abandoned: "interrupted; the server did not confirm the cancellation in time, so an upload session may"
                + " remain open until it expires (nothing is stored unless the server had all the bytes)",
            success: success, then: then)
    }

    /// Reports how a transfer run by ``Interruptibly`` ended, and gives the command's status.
    ///
    /// - Parameters:
    ///   - skipping: The object written, given with `-n` only: a failed condition is then a skip.
    ///   - abandoned: What to say when the command stopped waiting after a signal.
    ///   - success: The line to print on success.
    ///   - then: What to do after a success; its status is the command's.
    static func conclude<Value: Sendable>(
        _ ending: Interruptibly.Ending<Result<Value, StorageError>>, signal: Int32?, output: OutputWriter,
        skipping: StorageReference?, cancelled: String, abandoned: String, success: (Value) -> String,
        then: ((Value) async -> ExitCode)?
    ) async -> ExitCode {
        let outcome: Result<Value, StorageError>
        switch ending {
        case .finished(let finished):
            outcome = finished
        case .abandoned(let signal):
            report(abandoned)
            return ExitCode(signal: signal)
        }
        do {
            let value = try outcome.get()
            _ = try? await output.write(success(value) + "\n")
            return await then?(value) ?? .success
        } catch {
            if error.code == .cancelled {
                report(cancelled)
                if let signal { return ExitCode(signal: signal) }
            } else if error.code == .preconditionFailed, let skipping {
                // gcloud's words, so that scripts written for it read the same line.
                _ = try? await output.write(Self.skipLine(skipping) + "\n")
                return .success
            } else {
                reportFailure(error)
            }
            return ExitCode(error)
        }
    }

    /// What `-n` prints for a destination that exists (as `gcloud storage cp -n` does).
    static func skipLine(_ destination: some CustomStringConvertible) -> String {
        "Skipping existing destination item (no-clobber): \(destination)"
    }

    /// Reports a transfer's failure on standard error, with advice where there is some.
    /// Reports how a download that wrote its bytes as they came (to standard output) ended
    /// badly: what was written is unverified when the checksum or the object failed at the end.
    static func reportStreamFailure(_ error: StorageError, of reference: StorageReference, written: Int64) {
        if [.nonMatchingChecksum, .objectChanged, .undecodableContent].contains(error.code) {
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
