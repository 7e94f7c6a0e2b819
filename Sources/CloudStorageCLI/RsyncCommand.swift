import CloudStorage
import Foundation
import SystemCalls

/// `cloud-storage rsync SOURCE DESTINATION`: makes DESTINATION's files or objects match
/// SOURCE's, copying only what differs, on the SDK's transfer manager.
struct RsyncCommand {
    static let usage = """
        usage: cloud-storage rsync [options] SOURCE DESTINATION

        Makes the objects or files under DESTINATION match those under SOURCE, as `gcloud
        storage rsync` does: each file or object of SOURCE that DESTINATION lacks, or holds
        with a different size or content, is copied; the others are left alone. SOURCE and
        DESTINATION are each a directory or gs://BUCKET[/PREFIX] (directory to bucket, bucket
        to directory, or bucket to bucket, copied on the server). Names are exact and relative
        to SOURCE: gs://B/P covers the objects whose names start with P/ (all of them for
        gs://B). Objects whose names end in / and links to directories are not copied.

          -r, -R, --recursive also the files and objects in subdirectories (without it, only
                              the top level of each side)
          --checksums-only    compare the sizes and CRC32C checksums (the default; a
                              local file's CRC32C is computed)
          --mtime             compare the sizes and modification times (whole seconds; an
                              object's is its goog-reserved-file-mtime, which uploads set);
                              where either side has none, compare checksums
          --delete-unmatched-destination-objects, --delete-unmatched
                              also delete what DESTINATION has and SOURCE has not
          --dry-run           print what would be copied or deleted; change nothing
          --jobs N            copy up to N files at a time (default 16)
          --quiet             print only the summary

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(StorageOptions.connectionUsage)

        Prints "Copied SOURCE to DESTINATION" and "Deleted DESTINATION" for each change
        ("Would copy", "Would delete" with --dry-run), then a summary. Failures are reported
        and summed up; the others go on. Exit status: 0 in sync, 2 usage, 3 a local file
        problem, 4 credentials refused, 5 the bucket does not exist, 6 retries ran out,
        7 integrity, 1 other; with several failures, the highest.
        """

    /// One side of the synchronisation.
    enum Side {
        case directory(URL)
        case prefix(ObjectAddress)

        var bucket: String? {
            if case .prefix(let address) = self { return address.bucket }
            return nil
        }
    }

    let source: Side
    let destination: Side
    let recursive: Bool
    let byModificationTime: Bool
    let deletesUnmatched: Bool
    let dryRun: Bool
    let jobs: Int
    let quiet: Bool
    let storage: StorageOptions

    /// The custom metadata key of a file's modification time (seconds since 1970), as gcloud names it.
    static let mtimeKey = "goog-reserved-file-mtime"

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            ShortFlags.expand(words, letters: "rR"), valued: StorageOptions.valued.union(["--jobs"]),
            flags: StorageOptions.flags.union([
                "-r", "-R", "--recursive", "--checksums-only", "--mtime", "--delete-unmatched-destination-objects",
                "--delete-unmatched", "--dry-run", "--quiet",
            ]))
        guard arguments.positional.count == 2 else { throw UsageError("rsync needs a SOURCE and a DESTINATION") }
        func side(_ text: String, role: String) throws(UsageError) -> Side {
            guard text.hasPrefix("gs://") else {
                guard !text.isEmpty, text != "-" else {
                    throw UsageError("rsync: \(role) must be a directory or gs://BUCKET")
                }
                return .directory(URL(fileURLWithPath: text, isDirectory: true))
            }
            let address = try ObjectAddress(text, role: role)
            try address.validate(needsObject: false)
            guard address.generation == nil else { throw UsageError("rsync: \(role) cannot name a generation") }
            return .prefix(address)
        }
        source = try side(arguments.positional[0], role: "the source")
        destination = try side(arguments.positional[1], role: "the destination")
        if case .directory = source, case .directory = destination {
            throw UsageError("rsync copies to or from gs://BUCKET; use a local tool for two directories")
        }
        guard !(arguments.has("--mtime") && arguments.has("--checksums-only")) else {
            throw UsageError("--mtime and --checksums-only choose different comparisons; give one")
        }
        recursive = arguments.has("-r") || arguments.has("-R") || arguments.has("--recursive")
        byModificationTime = arguments.has("--mtime")
        deletesUnmatched =
            arguments.has("--delete-unmatched-destination-objects") || arguments.has("--delete-unmatched")
        dryRun = arguments.has("--dry-run")
        quiet = arguments.has("--quiet")
        jobs = try arguments.jobs(default: 16)
        storage = try StorageOptions(arguments, environment: environment)
    }

    /// A file or object of one side, by its name relative to the side.
    struct Entry: Sendable {
        /// The file (on a directory side).
        var file: URL?
        /// The object (on a bucket side).
        var object: StorageReference?
        var size: Int64
        /// Seconds since 1970, when known.
        var mtime: Int64?
        /// The object's CRC32C, from its listing (a file's is computed when needed).
        var crc32c: UInt32?

        var name: String { object.map { "\($0)" } ?? file?.path ?? "" }
    }

    /// Lists both sides, decides what to copy and delete, then does it (or, with `--dry-run`,
    /// says what it would do) and sums up.
    func run(output: OutputWriter) async -> ExitCode {
        let bucket = source.bucket ?? destination.bucket ?? ""
        return await storage.withConnection(bucket: bucket) { connection in
            let sourceEntries: [String: Entry]
            let destinationEntries: [String: Entry]
            do throws(CommandFailure) {
                sourceEntries = try await entries(of: source, connection: connection, mustExist: true)
                destinationEntries = try await entries(of: destination, connection: connection, mustExist: false)
            } catch {
                report(error.message ?? "rsync failed")
                return error.status
            }
            let plan = await plan(from: sourceEntries, to: destinationEntries, connection: connection)
            if dryRun { return await preview(plan, output: output) }
            return await carryOut(plan, connection: connection, output: output)
        }
    }

    /// A file or object that could not be copied or deleted: its name, why, and the exit status it counts as.
    typealias Failure = (name: String, reason: String, status: ExitCode)

    /// What one run copies and deletes, decided before anything changes.
    struct Plan: Sendable {
        /// The copies: every source entry the destination lacks or holds differently.
        var items: [StorageTransferItem] = []
        /// How many source entries the destination already holds the same.
        var unchanged = 0
        /// Source entries that cannot go to their place on the destination.
        var refused: [Failure] = []
        /// The modification time each downloaded file takes, by its URL.
        var downloadTimes: [URL: Int64] = [:]
        /// What the destination has and the source has not, to delete (with `--delete-unmatched`).
        var extras: [Entry] = []
    }

    /// Compares the two sides' entries and decides what to copy and delete.
    private func plan(
        from sourceEntries: [String: Entry], to destinationEntries: [String: Entry],
        connection: StorageOptions.Connection
    ) async -> Plan {
        var plan = Plan()
        for name in sourceEntries.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let from = sourceEntries[name]!
            if let to = destinationEntries[name], await same(from, to) {
                plan.unchanged += 1
                continue
            }
            switch target(for: name, in: destination, connection: connection) {
            case .failure(let refusal): plan.refused.append((from.name, refusal.reason, .localFile))
            case .success(let target):
                plan.items.append(item(from, to: target, size: from.size))
                if let file = target.file, let mtime = from.mtime { plan.downloadTimes[file] = mtime }
            }
        }
        if deletesUnmatched {
            plan.extras = destinationEntries.keys.filter { sourceEntries[$0] == nil }
                .sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).compactMap { destinationEntries[$0] }
        }
        return plan
    }

    /// `--dry-run`: says what `plan` would copy and delete, and reports what it refuses.
    private func preview(_ plan: Plan, output: OutputWriter) async -> ExitCode {
        for item in plan.items { await say("Would copy \(Self.describe(item))", output) }
        for extra in plan.extras { await say("Would delete \(extra.name)", output) }
        _ = try? await output.write(
            "Would copy \(plan.items.count), delete \(plan.extras.count); \(plan.unchanged) unchanged\n")
        var worst = ExitCode.success
        for (name, problem, status) in plan.refused {
            report("\(name): \(problem)")
            worst = worst.worse(status)
        }
        return worst
    }

    /// Copies and deletes what `plan` says, saying each change, then sums up.
    ///
    /// The transfers run ``Interruptibly``, as `cp -r`'s do: SIGINT or SIGTERM (or cancelling
    /// the calling task) cancels those under way, starts no more, and the command exits with
    /// the status the signal calls for.
    private func carryOut(_ plan: Plan, connection: StorageOptions.Connection, output: OutputWriter) async -> ExitCode {
        let manager = StorageTransferManager(storage: connection.storage, maxConcurrentFiles: jobs)
        let (ending, signal) = await Interruptibly.run { () -> Changes in await Self.change(plan, manager: manager) }
        let changes: Changes
        switch ending {
        case .finished(let finished): changes = finished
        case .abandoned(let signal):
            report("interrupted; the copies under way were cancelled (the server did not confirm in time)")
            return ExitCode(signal: signal)
        }
        var failures = plan.refused
        let copied = await tally(changes.copies, failures: &failures) { item in
            await setModificationTime(of: item, from: plan.downloadTimes)
            await say("Copied \(Self.describe(item))", output)
        }
        var removed = await tally(changes.deleted, failures: &failures) { item in
            await say("Deleted \(item.object)", output)
        }
        for file in changes.extraFiles {
            if changes.unremoved.contains(file.path) {
                failures.append((file.path, "cannot be deleted", .localFile))
            } else {
                removed += 1
                await say("Deleted \(file.path)", output)
            }
        }
        if signal != nil || changes.copies == nil || changes.deleted == nil {
            report("interrupted")
            return signal.map(ExitCode.init(signal:)) ?? .interrupted
        }
        _ = try? await output.write("Copied \(copied), deleted \(removed); \(plan.unchanged) unchanged\n")
        var worst = ExitCode.success
        if !failures.isEmpty {
            report("\(failures.count) failed:")
            for (name, reason, status) in failures {
                report("  \(name): \(reason)")
                worst = worst.worse(status)
            }
        }
        return worst
    }

    /// What ``change(_:manager:)`` did: each transfer's report (nil when it was cancelled), and
    /// the extra files, with the paths of those that could not be removed.
    struct Changes: Sendable {
        var copies: StorageTransferReport?
        var deleted: StorageTransferReport?
        var extraFiles: [URL]
        var unremoved: Set<String>
    }

    /// Runs the copies of `plan`, then deletes its extras: objects through `manager`, files
    /// here, off the pool (none once the run is cancelled).
    private static func change(_ plan: Plan, manager: StorageTransferManager) async -> Changes {
        let copies = await run(manager.transfer(plan.items))
        let extraObjects = plan.extras.compactMap(\.object)
        let deleted =
            extraObjects.isEmpty
            ? StorageTransferReport(outcomes: [])
            : await run(manager.transfer(extraObjects.map { .delete($0) }))
        let extraFiles = Task.isCancelled ? [] : plan.extras.compactMap(\.file)
        let unremoved = await LocalDestination.offThePool {
            Set(extraFiles.compactMap { (try? FileManager.default.removeItem(at: $0)) == nil ? $0.path : nil })
        }
        return Changes(copies: copies, deleted: deleted, extraFiles: extraFiles, unremoved: unremoved)
    }

    /// Counts the items of `transfer` that succeeded, passing each to `succeeded` in order,
    /// and adds the others to `failures` (none when the transfer was interrupted).
    private func tally(
        _ transfer: StorageTransferReport?, failures: inout [Failure],
        succeeded: (StorageTransferItem) async -> Void
    ) async -> Int {
        var count = 0
        for outcome in transfer?.outcomes ?? [] {
            switch outcome.result {
            case .succeeded:
                count += 1
                await succeeded(outcome.item)
            case .skipped(let reason): failures.append((outcome.name, reason, .failure))
            case .failed(let error): failures.append((outcome.name, error.message, ExitCode(error)))
            }
        }
        return count
    }

    private func say(_ line: String, _ output: OutputWriter) async {
        guard !quiet else { return }
        _ = try? await output.write(line + "\n")
    }

    /// Runs a transfer to its end; nil when it was cancelled (Ctrl-C cancels it).
    private static func run(_ task: StorageTransferTask) async -> StorageTransferReport? {
        await withTaskCancellationHandler {
            try? await task.value
        } onCancel: {
            Task { await task.cancel() }
        }
    }

    private static func describe(_ item: StorageTransferItem) -> String {
        switch item.operation {
        case .upload(let file, let object, _): "\(file.path) to \(object)"
        case .download(let object, let file): "\(object) to \(file.path)"
        case .copy(let object, let copy, _): "\(object) to \(copy)"
        case .delete(let object): "\(object)"
        }
    }

    /// The item that copies `entry` to `target`.
    private func item(_ entry: Entry, to target: Entry, size: Int64) -> StorageTransferItem {
        switch (entry.file, entry.object, target.file, target.object) {
        case (let file?, _, _, let object?):
            var metadata = StorageMetadata()
            if let mtime = entry.mtime { metadata.customMetadata = [Self.mtimeKey: String(mtime)] }
            return .upload(file, to: object, size: size, metadata: metadata)
        case (_, let object?, let file?, _):
            guard case .directory(let root) = destination else { return .download(object, to: file, size: size) }
            return .download(object, to: file, size: size, within: root)
        case (_, let object?, _, let copy?):
            return .copy(object, to: copy, size: size)
        default:
            preconditionFailure("rsync never pairs two directories")
        }
    }

    /// Where the entry named `name` goes on `side`.
    private func target(
        for name: String, in side: Side, connection: StorageOptions.Connection
    ) -> Result<Entry, Refusal> {
        switch side {
        case .directory(let root):
            let segments = name.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            if let problem = StorageTransferManager.localPathProblem(segments, inside: root) {
                return .failure(Refusal(reason: "refused: \(problem)"))
            }
            let file = segments.reduce(root) { $0.appendingPathComponent(String(decoding: $1, as: UTF8.self)) }
            return .success(Entry(file: file, size: 0))
        case .prefix(let address):
            let object = connection.storage(for: address.bucket).reference(objectName: Self.prefix(of: address) + name)
            do throws(StorageError) {
                try StorageReference.validateObjectName(object.fullPath)
            } catch {
                return .failure(Refusal(reason: error.message))
            }
            return .success(Entry(object: object, size: 0))
        }
    }

    /// Why an entry cannot be copied to its place.
    struct Refusal: Error {
        let reason: String
    }

    /// The names a bucket side covers start with this.
    static func prefix(of address: ObjectAddress) -> String {
        address.path.isEmpty || address.endsInSlash ? address.path : address.path + "/"
    }

    /// Whether `source` and `destination` hold the same bytes, by the chosen comparison.
    private func same(_ source: Entry, _ destination: Entry) async -> Bool {
        guard source.size == destination.size else { return false }
        if byModificationTime, let a = source.mtime, let b = destination.mtime { return a == b }
        guard let a = await Self.checksum(of: source), let b = await Self.checksum(of: destination) else {
            return false
        }
        return a == b
    }

    /// The entry's CRC32C: the listing's for an object, computed for a file (nil when it cannot be read).
    private static func checksum(of entry: Entry) async -> UInt32? {
        if let crc = entry.crc32c { return crc }
        guard let file = entry.file else { return nil }
        return await LocalDestination.offThePool { fileChecksum(file.path) }
    }

    /// Blocking: a file's CRC32C (the hardware path of `CCRC32C`), or nil when it cannot be read.
    private static func fileChecksum(_ path: String) -> UInt32? {
        guard let fd = try? SystemCall.open(path, [.readOnly, .nonBlocking, .closeOnExec]) else { return nil }
        defer { try? SystemCall.close(fd) }
        var crc = CRC32C()
        let buffer = SystemCall.allocateFileBuffer(byteCount: 1 << 20)
        defer { buffer.deallocate() }
        while true {
            guard let count = try? SystemCall.read(fd, into: buffer) else { return nil }
            if count == 0 { return crc.value }
            crc.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// After a download, the file takes the object's recorded modification time (as gcloud
    /// does), so that a later `--mtime` comparison finds them equal.
    private func setModificationTime(of item: StorageTransferItem, from times: [URL: Int64]) async {
        guard case .download(_, let file) = item.operation, let mtime = times[file] else { return }
        _ = await LocalDestination.offThePool {
            try? FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSince1970: TimeInterval(mtime))], ofItemAtPath: file.path)
        }
    }

    /// The entries of one side, by relative name.
    private func entries(
        of side: Side, connection: StorageOptions.Connection, mustExist: Bool
    ) async throws(CommandFailure) -> [String: Entry] {
        switch side {
        case .directory(let root):
            switch await LocalDirectoryTree.walkForCommand(root) {
            case .failure(let problem):
                if !mustExist, problem.status == .localFile,
                    !FileManager.default.fileExists(atPath: root.path)
                {
                    return [:]
                }
                throw CommandFailure(problem.message, problem.status)
            case .success(let tree):
                for skipped in tree.skipped { report("skipping \(skipped.url.path): \(skipped.reason)") }
                for failure in tree.failures { report("skipping \(failure.url.path): \(failure.commandReason)") }
                let mtimes = await LocalDestination.offThePool {
                    tree.files.map { try? SystemCall.status(path: $0.url.path).modificationSeconds }
                }
                var found: [String: Entry] = [:]
                for (file, mtime) in zip(tree.files, mtimes) where recursive || !file.relativePath.contains("/") {
                    found[file.relativePath] = Entry(file: file.url, size: file.size, mtime: mtime)
                }
                return found
            }
        case .prefix(let address):
            let storage = connection.storage(for: address.bucket)
            let prefix = Self.prefix(of: address)
            var found: [String: Entry] = [:]
            do throws(StorageError) {
                for try await entry in storage.objects(StorageObjectQuery(prefix: prefix)) {
                    guard case .object(let object, let metadata) = entry else { continue }
                    let name = String(decoding: object.fullPath.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
                    if name.isEmpty || name.hasSuffix("/") { continue }
                    if !recursive && name.contains("/") { continue }
                    found[name] = Entry(
                        object: object, size: metadata?.size ?? 0,
                        mtime: metadata?.customMetadata[Self.mtimeKey].flatMap { Int64($0) },
                        crc32c: metadata?.crc32cValue)
                }
            } catch {
                throw CommandFailure(error.message, ExitCode(error))
            }
            return found
        }
    }
}
