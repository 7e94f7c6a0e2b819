import CloudStorage
import Foundation

/// `cp -r DIR gs://B/PREFIX` and `cp -r gs://B/PREFIX DIR`.
///
/// Everything that can be known before contacting anything is checked first:
/// the directory (walked whole) or the destination directory, and every
/// object name by the SDK's rules. Then one `Storage` serves up to `--jobs`
/// transfers at once (SDK tasks in a task group), with one progress line, and
/// a summary names each failure; the exit status is the worst one.
struct RecursiveCopy {
    let command: CopyCommand

    /// A file that was not copied, and why.
    struct Failure: Sendable {
        let name: String
        let reason: String
        let status: ExitCode
    }

    // MARK: Upload

    /// Uploads the files below `directory` under `address`.
    func upload(_ directory: URL, to address: ObjectAddress, output: OutputWriter) async -> ExitCode {
        let tree: LocalDirectoryTree
        switch await LocalDirectoryTree.walkForCommand(directory) {
        case .success(let walked): tree = walked
        case .failure(let problem):
            report(problem.message)
            return problem.status
        }
        for skipped in tree.skipped { report("skipping \(skipped.url.path): \(skipped.reason)") }
        // `.` and `..` are resolved, so `cp -r . gs://b/` is named after the directory itself.
        let name = directory.standardizedFileURL.lastPathComponent
        // Names are exact: into gs://b/x// the files go to x//NAME/…, as gsutil puts them.
        let nested = address.folderName.map { $0 + "/" + name } ?? name
        // Whether PREFIX exists decides between these two; check both before contacting anything.
        let candidates = address.path.isEmpty || address.endsInSlash ? [nested] : [nested, address.path]
        let bad = Self.invalidNames(of: tree, under: candidates, in: address.bucket)
        if !bad.isEmpty {
            report("nothing was copied: \(bad.count) name\(bad.count == 1 ? "" : "s") break the object-name rules:")
            for line in bad.prefix(20) { report("  \(line)") }
            return .usage
        }

        return await command.withConnection(bucket: address.bucket) { connection in
            let storage = connection.storage
            let prefix: String
            do throws(StorageError) {
                prefix = try await Self.uploadPrefix(among: candidates, for: address, in: storage)
            } catch {
                CopyCommand.reportFailure(error)
                return ExitCode(error)
            }
            let (metadata, compressing) = (command.write.metadata, command.compressing)
            let uploads = ResumableUploads(
                records: UploadSessionRecords(environment: command.storage.environment), connection: connection)
            let items = tree.files.map { file in
                StorageTransferItem.upload(
                    file.url, to: storage.reference(objectName: prefix + "/" + file.relativePath), size: file.size,
                    metadata: metadata)
            }
            let failures = tree.failures.map {
                Failure(name: $0.url.path, reason: $0.commandReason, status: .localFile)
            }
            let status = await transfer(
                items, in: storage, failures: failures, totalBytes: tree.files.reduce(0) { $0 + $1.size },
                output: output, destination: "gs://\(address.bucket)/\(prefix)/"
            ) { file, object, metadata in
                await CopyCommand.startUpload(
                    of: file, to: object, metadata: metadata, compressing: compressing, resuming: uploads)
            }
            await uploads.settle()
            return status
        }
    }

    /// The files of `tree` whose object names under any of `prefixes` break the object-name
    /// rules, each as a line for the report.
    static func invalidNames(of tree: LocalDirectoryTree, under prefixes: [String], in bucket: String) -> [String] {
        var bad: [String] = []
        for prefix in prefixes {
            for file in tree.files {
                let object = prefix + "/" + file.relativePath
                do throws(StorageError) {
                    try StorageReference.validateObjectName(object)
                } catch {
                    bad.append("\(file.url.path) (as gs://\(bucket)/\(object)): \(error.message)")
                }
            }
        }
        return bad
    }

    /// The prefix the upload's objects go under: the only candidate, or of the two
    /// (`PREFIX/NAME`, `PREFIX`) the one gsutil's rule picks.
    ///
    /// The copy goes into `PREFIX/NAME/` when `PREFIX/` already holds something, else `PREFIX`
    /// is the copy; only that case lists the folder.
    static func uploadPrefix(
        among candidates: [String], for address: ObjectAddress, in storage: Storage
    ) async throws(StorageError) -> String {
        guard candidates.count == 2 else { return candidates[0] }
        let page = try await address.folder(in: storage).list(maxResults: 1)
        return page.items.isEmpty && page.prefixes.isEmpty ? candidates[1] : candidates[0]
    }

    // MARK: Download

    /// Downloads every object below `address` into the directory `path`.
    func download(_ address: ObjectAddress, into path: String, output: OutputWriter) async -> ExitCode {
        let directory: (url: URL, exists: Bool)
        switch await LocalDestination.directory(path) {
        case .success(let found): directory = found
        case .failure(let problem):
            report(problem.message)
            return .localFile
        }
        return await command.withConnection(bucket: address.bucket) { connection in
            let folder = address.folder(in: connection.storage)
            let objects: [ListedObject]
            do throws(StorageError) {
                objects = try await Self.objects(below: folder, pageSize: command.pageSize)
            } catch {
                if error.code == .cancelled { return .interrupted }
                CopyCommand.reportFailure(error)
                return ExitCode(error)
            }
            guard !objects.isEmpty else {
                report("No objects match \(address.url)")
                return .notFound
            }
            // Into DIR/NAME/ when DIR exists or ends in /, else DIR is the copy (as for uploads).
            var root = directory.url
            if directory.exists || path.hasSuffix("/") {
                root.appendPathComponent(address.path.split(separator: "/").last.map(String.init) ?? address.bucket)
            }
            let (planned, failures) = Self.plan(objects, below: address, into: root)
            // Each download makes its directories from the root, following no link it did not make.
            let items = planned.map {
                StorageTransferItem.download($0.reference, to: $0.file, size: $0.size, within: root)
            }
            // The listing's sizes (nil on Firebase v0, whose listings carry none) give the bytes to expect.
            let sizes = items.compactMap(\.size)
            return await transfer(
                items, in: connection.storage, failures: failures,
                totalBytes: sizes.count == items.count ? sizes.reduce(0, +) : nil, output: output,
                destination: root.path + "/")
        }
    }

    /// A listed object's copy: where it goes, and its size when the listing carried it.
    typealias PlannedDownload = (reference: StorageReference, file: URL, size: Int64?)

    /// Where each of `objects` (listed below `address`) goes inside `root`, and the objects
    /// refused because their names cannot be a file there or break the object-name rules.
    static func plan(
        _ objects: [ListedObject], below address: ObjectAddress, into root: URL
    ) -> (planned: [PlannedDownload], failures: [Failure]) {
        // What the listed names start with: the folder's prefix, which is not part of the file's path.
        let prefixLength = address.folderName.map { $0.utf8.count + 1 } ?? 0
        var failures: [Failure] = []
        var planned: [PlannedDownload] = []
        for (object, size) in objects {
            let relative = object.fullPath.utf8.dropFirst(prefixLength)
            // A folder placeholder (a name ending in /) has no bytes to copy: the directory is made anyway.
            if relative.isEmpty || relative.last == UInt8(ascii: "/") { continue }
            let segments = relative.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            if let problem = StorageTransferManager.localPathProblem(segments, inside: root) {
                failures.append(Failure(name: "\(object)", reason: "refused: \(problem)", status: .localFile))
                continue
            }
            do throws(StorageError) {
                try StorageReference.validateObjectName(object.fullPath)
            } catch {
                failures.append(Failure(name: "\(object)", reason: error.message, status: .usage))
                continue
            }
            let file = segments.reduce(root) { $0.appendingPathComponent(String(decoding: $1, as: UTF8.self)) }
            planned.append((object, file, size))
        }
        return (planned, failures)
    }

    /// An object a listing found, with its size when the listing carried it.
    typealias ListedObject = (reference: StorageReference, size: Int64?)

    /// Every object below `root` (not `root` itself), in name order (see ``ObjectWalker``).
    static func objects(below root: StorageReference, pageSize: Int) async throws(StorageError) -> [ListedObject] {
        var found: [ListedObject] = []
        try await ObjectWalker(root: root, recursive: true, pageSize: pageSize).walk(
            entry: { entry in
                if case .object(let reference, let listed) = entry { found.append((reference, listed?.size)) }
            },
            pageDone: { true })
        return found
    }

    // MARK: Running

    /// What the transfers came to.
    private struct Tally: Sendable {
        var copied = 0
        var bytes: Int64 = 0
        var failures: [Failure] = []
    }

    /// Runs `items` as one transfer of the SDK's transfer manager, `limit` at a time, showing its
    /// progress; what they came to (after a cancel, Ctrl-C, what ended before it).
    ///
    /// Cancelling cancels the copies under way, which deletes their upload sessions or partial files.
    private static func run(
        _ items: [StorageTransferItem], in storage: Storage, limit: Int, progress: OverallProgress,
        startUpload: StorageTransferManager.UploadStarter?
    ) async -> Tally {
        // --jobs alone bounds the copies, as it always did: no memory budget on top.
        var manager = StorageTransferManager(storage: storage, maxConcurrentFiles: limit, memoryBudget: .max)
        if let startUpload { manager.startUpload = startUpload }
        let task = manager.transfer(items)
        let report = await withTaskCancellationHandler {
            if progress.isShown {
                for await snapshot in task.transferSnapshots { progress.show(snapshot) }
            }
            return try? await task.value
        } onCancel: {
            Task { await task.cancel() }
        }
        var tally = Tally()
        for outcome in report?.outcomes ?? task.outcomes {
            switch outcome.result {
            case .succeeded:
                tally.copied += 1
                tally.bytes += outcome.item.size ?? 0
            case .failed(let error):
                if report == nil && error.code == .cancelled { continue }
                let reason = error.code == .objectNotFound ? "no such object" : error.message
                tally.failures.append(Failure(name: outcome.name, reason: reason, status: ExitCode(error)))
            case .skipped(let reason):
                tally.failures.append(Failure(name: outcome.name, reason: reason, status: .failure))
            }
        }
        return tally
    }

    /// Runs `items`, `--jobs` at a time, then prints the summary.
    ///
    /// - Parameter startUpload: How each upload starts (resuming a recorded session, compressing).
    func transfer(
        _ items: [StorageTransferItem], in storage: Storage, failures: [Failure], totalBytes: Int64?,
        output: OutputWriter, destination: String, startUpload: StorageTransferManager.UploadStarter? = nil
    ) async -> ExitCode {
        let progress = OverallProgress(
            files: items.count + failures.count, bytes: totalBytes, failedBefore: failures.count, quiet: command.quiet)
        let limit = command.jobs
        let (ending, signal) = await Interruptibly.run { () -> Tally in
            await Self.run(items, in: storage, limit: limit, progress: progress, startUpload: startUpload)
        }
        progress.end()
        switch ending {
        case .abandoned(let signal):
            report("interrupted; the copies under way were cancelled (the server did not confirm in time)")
            return ExitCode(signal: signal)
        case .finished(var tally):
            if let signal {
                report("interrupted after \(tally.copied) of \(items.count) files; the copies under way were cancelled")
                return ExitCode(signal: signal)
            }
            tally.failures = failures + tally.failures
            var summary =
                "Copied \(tally.copied) file\(tally.copied == 1 ? "" : "s") (\(tally.bytes) bytes) to \(destination)"
            if tally.failures.isEmpty {
                summary += "\n"
            } else {
                summary += "; \(tally.failures.count) failed:\n"
                for failure in tally.failures { summary += "  \(failure.name): \(failure.reason)\n" }
            }
            _ = try? await output.write(summary)
            return tally.failures.reduce(ExitCode.success) { $0.worse($1.status) }
        }
    }

}
