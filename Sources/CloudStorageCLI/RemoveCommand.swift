import CloudStorage
import Foundation

/// `cloud-storage rm [-r] gs://BUCKET/PATH...`: deletes objects.
struct RemoveCommand {
    static let usage = """
        usage: cloud-storage rm [options] gs://BUCKET/PATH[#GENERATION]...

        Deletes each object, printing "Removed gs://BUCKET/PATH" for each. Names are
        exact: gs://BUCKET/a//b is the object a//b, gs://BUCKET/dir/ the object dir/.
        PATH#GENERATION (digits after the last #, as gcloud reads them) deletes only
        that generation: removing a noncurrent one leaves the live object (not with -r).

          -r                  delete every object whose name starts with PATH/ (and the
                              object PATH itself, if there is one); a PATH that ends in /
                              deletes only the names that start with PATH
          --jobs N            delete up to N objects at a time (default 16)
          --quiet             print only the number removed, not each object

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(StorageOptions.connectionUsage)

        Failures are reported as they happen and summed up at the end; the others
        are still deleted. Exit status: 0 all removed, 2 usage (a bucket or object
        name that breaks the rules is refused before anything is contacted),
        4 credentials refused, 5 an object or bucket does not exist (or -r matched
        nothing), 6 retries ran out, 1 other; with several failures, the highest.
        """

    let addresses: [ObjectAddress]
    let recursive: Bool
    let jobs: Int
    let quiet: Bool
    let storage: StorageOptions
    /// The most entries per listing request; small in tests, to make many pages.
    var pageSize = StorageReference.maximumListResults

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            ShortFlags.expand(words, letters: "rRf"), valued: StorageOptions.valued.union(["--jobs"]),
            flags: StorageOptions.flags.union(["-r", "-R", "--quiet"]))
        guard !arguments.positional.isEmpty else { throw UsageError("rm needs a gs://BUCKET/PATH") }
        recursive = arguments.has("-r") || arguments.has("-R")
        addresses = try arguments.positional.map { [recursive] text throws(UsageError) in
            let address = try ObjectAddress(text, role: "the object")
            // `rm -r gs://BUCKET` empties the bucket; without -r a name is needed.
            try address.validate(needsObject: !recursive, allowsGeneration: !recursive)
            return address
        }
        jobs = try arguments.jobs(default: 16)
        quiet = arguments.has("--quiet")
        storage = try StorageOptions(arguments, environment: environment)
    }

    /// What the deletions came to.
    private struct Tally {
        var removed = 0
        var failures: [(String, StorageError)] = []
        var worst = ExitCode.success
        var outputOpen = true
    }

    func run(output: OutputWriter) async -> ExitCode {
        await storage.withConnection(bucket: addresses[0].bucket) { connection in
            var tally = Tally()
            for address in addresses {
                let storage = connection.storage(for: address.bucket)
                if recursive {
                    await removeAll(address, in: storage, output: output, tally: &tally)
                } else {
                    await remove([address.reference(in: storage)], output: output, tally: &tally)
                }
            }
            if quiet, tally.outputOpen {
                _ = try? await output.write("Removed \(tally.removed) objects\n")
            }
            if !tally.failures.isEmpty {
                report("\(tally.failures.count) failed, \(tally.removed) removed:")
                for (name, error) in tally.failures {
                    report("  \(name): \(error.code == .objectNotFound ? "no such object" : error.message)")
                }
            }
            return tally.worst
        }
    }

    /// Deletes every object the walk of `address` lists (and the object it names), page by page:
    /// exactly the listed names, so `rm -r gs://b/pfx//` leaves `pfx/abs.txt`.
    private func removeAll(
        _ address: ObjectAddress, in storage: Storage, output: OutputWriter, tally: inout Tally
    ) async {
        let before = (tally.removed, tally.failures.count)
        if !address.path.isEmpty && !address.endsInSlash {
            await remove([address.reference(in: storage)], output: output, tally: &tally, missingIsFine: true)
        }
        var batch: [StorageReference] = []
        // Deleting during the walk is safe: page tokens name the last object listed, not a position.
        let walker = ObjectWalker(root: address.folder(in: storage), recursive: true, pageSize: pageSize)
        do {
            try await walker.walk { entry in
                if case .object(let object, _) = entry { batch.append(object) }
            } pageDone: {
                let page = batch
                batch.removeAll()
                await remove(page, output: output, tally: &tally)
                return true
            }
        } catch {
            tally.failures.append((address.url, error))
            tally.worst = tally.worst.worse(ExitCode(error))
            return
        }
        if (tally.removed, tally.failures.count) == before {
            report("No objects match \(address.url)")
            tally.worst = tally.worst.worse(.notFound)
        }
    }

    /// Deletes `references`, `jobs` at a time, as one transfer of the SDK's transfer manager.
    ///
    /// - Parameter missingIsFine: Whether an object that does not exist is no failure (`-r`'s PATH itself).
    private func remove(
        _ references: [StorageReference], output: OutputWriter, tally: inout Tally, missingIsFine: Bool = false
    ) async {
        guard let first = references.first else { return }
        let task = StorageTransferManager(storage: first.storage, maxConcurrentFiles: jobs)
            .transfer(references.map { .delete($0) })
        // Ctrl-C cancels the deletions under way; those that ended are still reported.
        let outcomes = await withTaskCancellationHandler {
            do throws(StorageError) {
                return try await task.value.outcomes
            } catch {
                return task.outcomes
            }
        } onCancel: {
            Task { await task.cancel() }
        }
        for outcome in outcomes {
            let reference = outcome.item.object
            switch outcome.result {
            case .failed(let error):
                if missingIsFine && error.code == .objectNotFound { continue }
                tally.failures.append(("\(reference)", error))
                tally.worst = tally.worst.worse(ExitCode(error))
            case .skipped:
                continue
            case .succeeded:
                tally.removed += 1
                if !quiet && tally.outputOpen {
                    do {
                        try await output.write("Removed \(reference)\n")
                    } catch {
                        tally.outputOpen = false
                    }
                }
            }
        }
        if outcomes.count < references.count {
            // Cancelled: the deletions that never ended count as interrupted.
            tally.worst = tally.worst.worse(.interrupted)
        }
    }
}
