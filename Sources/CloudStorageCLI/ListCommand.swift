import CloudStorage
import Foundation

/// `cloud-storage ls [-l] [-r] [-a] gs://BUCKET[/PREFIX]...`: lists objects, as `gsutil ls` does.
struct ListCommand {
    static let usage = """
        usage: cloud-storage ls [options] gs://BUCKET[/PREFIX]...

        Lists one level below each URL: objects as gs://BUCKET/NAME and "folders"
        (common prefixes) as gs://BUCKET/PREFIX/. An object named exactly PREFIX
        is listed too; a PREFIX that ends in / lists only what is below it. Names
        are exact: gs://BUCKET/a//b is the object a//b, and gs://BUCKET/a// lists
        the names that start with a//. Output goes out page by page as the server
        answers.

          -l                  also each object's size in bytes and the time it was last
                              updated (RFC 3339, UTC), and a final TOTAL line
          -r                  every object below, however deep (no folders), one
                              listing request a page whatever the depth
          -a                  every generation of each object, noncurrent ones too,
                              as gs://BUCKET/NAME#GENERATION (with -l, also each one's
                              metageneration); Google Cloud Storage only

        A URL gs://BUCKET/NAME#GENERATION lists that one generation of the object,
        as gcloud does; a generation that does not exist matches nothing.

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(StorageOptions.connectionUsage)

        Exit status: 0 listed, 2 usage (a bucket or object name that breaks the rules
        is refused before anything is contacted), 4 credentials refused, 5 the bucket
        does not exist or a URL matched no objects, 6 retries ran out, 1 other.
        """

    let addresses: [ObjectAddress]
    let long: Bool
    let recursive: Bool
    /// Every generation (`-a`).
    let allVersions: Bool
    let storage: StorageOptions
    /// The most entries per listing request; small in tests, to make many pages.
    var pageSize = StorageReference.maximumListResults

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            ShortFlags.expand(words, letters: "lra"), valued: StorageOptions.valued,
            flags: StorageOptions.flags.union(["-l", "-r", "-R", "-a"]))
        addresses = try ObjectAddress.listings(arguments.positional, command: "ls", allowsGeneration: true)
        long = arguments.has("-l")
        recursive = arguments.has("-r") || arguments.has("-R")
        allVersions = arguments.has("-a")
        storage = try StorageOptions(arguments, environment: environment)
    }

    func run(output: OutputWriter) async -> ExitCode {
        await storage.withConnection(bucket: addresses[0].bucket) { connection in
            var worst = ExitCode.success
            var totals = (objects: 0, bytes: Int64(0))
            for address in addresses {
                let status = await list(
                    address, in: connection.storage(for: address.bucket), to: output, totals: &totals)
                // nil: the reader went away (`ls | head`); nothing more to say.
                guard let status else { return worst }
                worst = worst.worse(status)
            }
            if long {
                _ = try? await output.write("TOTAL: \(totals.objects) objects, \(totals.bytes) bytes\n")
            }
            return worst
        }
    }

    /// Lists one URL.
    ///
    /// - Returns: The status, or nil when the output went away.
    private func list(
        _ address: ObjectAddress, in storage: Storage, to output: OutputWriter,
        totals: inout (objects: Int, bytes: Int64)
    ) async -> ExitCode? {
        if address.generation != nil {
            return await listGeneration(address, in: storage, to: output, totals: &totals)
        }
        // The exact object's lines wait in the buffer and go out with the first page.
        var buffer = ""
        let found: Bool
        do {
            let named = try await listObjectNamed(address, in: storage, into: &buffer, totals: &totals)
            guard let below = try await listBelow(address, in: storage, to: output, buffer: &buffer, totals: &totals)
            else { return nil }
            found = named || below
        } catch {
            return Self.failed(error, address)
        }
        guard found || address.path.isEmpty else {
            report("No objects match \(address.url)")
            return .notFound
        }
        return .success
    }

    /// Adds the object named exactly as the URL (with `-a`, each of its generations), unless the
    /// URL names a folder: `gs://BUCKET/a` lists the object `a` as well as what is below `a/`.
    ///
    /// - Returns: Whether there was such an object.
    private func listObjectNamed(
        _ address: ObjectAddress, in storage: Storage, into buffer: inout String,
        totals: inout (objects: Int, bytes: Int64)
    ) async throws(StorageError) -> Bool {
        guard !address.path.isEmpty && !address.endsInSlash else { return false }
        let reference = address.reference(in: storage)
        var found = false
        do {
            if allVersions {
                // Its versions are the listed names equal to it, each page's first ones.
                let query = StorageObjectQuery(prefix: address.path, delimiter: "/", includesVersions: true)
                for try await case .object(let object, let metadata?) in storage.objects(query)
                where object.atGeneration(nil) == reference {
                    found = true
                    buffer += line(for: object, metadata, totals: &totals)
                }
            } else {
                let metadata = try await reference.getMetadata()
                found = true
                buffer += line(for: reference, metadata, totals: &totals)
            }
        } catch  where error.code == .objectNotFound {
            // Then it is a prefix, or matches nothing.
        }
        return found
    }

    /// Lists what is below the URL's folder, writing each page out as the server answers it.
    ///
    /// - Returns: Whether anything was listed, or nil when the output went away.
    private func listBelow(
        _ address: ObjectAddress, in storage: Storage, to output: OutputWriter, buffer: inout String,
        totals: inout (objects: Int, bytes: Int64)
    ) async throws(StorageError) -> Bool? {
        var found = false
        var listed: [ObjectWalker.Entry] = []
        var closed = false
        var walker = ObjectWalker(root: address.folder(in: storage), recursive: recursive, pageSize: pageSize)
        walker.versions = allVersions
        try await walker.walk { entry in
            found = true
            listed.append(entry)
        } pageDone: {
            // -l needs each object's size and time: a GCS listing carries them; only objects
            // listed without them (Firebase v0) cost a metadata request each.
            let details = long ? await Self.metadata(of: listed) : []
            appendPage(listed, details, to: &buffer, totals: &totals)
            listed.removeAll(keepingCapacity: true)
            guard await output.writePage(&buffer) else {
                closed = true
                return false
            }
            return true
        }
        return closed ? nil : found
    }

    /// Adds a page's lines: a folder's URL, or an object's line as `line(for:_:totals:)` has it
    /// under `-l` (`details` holding the objects' metadata), else its URL alone.
    private func appendPage(
        _ entries: [ObjectWalker.Entry], _ details: [StorageMetadata?], to buffer: inout String,
        totals: inout (objects: Int, bytes: Int64)
    ) {
        for (index, entry) in entries.enumerated() {
            switch entry {
            case .prefix(let prefix):
                buffer += (long ? String(repeating: " ", count: 34) : "") + "\(prefix)/\n"
            case .object(let object, _):
                if long {
                    // Read after the listing and deleted since: not there any more.
                    guard let metadata = details[index] else { continue }
                    buffer += line(for: object, metadata, totals: &totals)
                } else {
                    totals.objects += 1
                    buffer += "\(object)\n"  // Under -a, pinned: gs://BUCKET/NAME#GENERATION.
                }
            }
        }
    }

    /// Lists the one generation a `#GENERATION` URL names.
    ///
    /// - Returns: The status, or nil when the output went away.
    private func listGeneration(
        _ address: ObjectAddress, in storage: Storage, to output: OutputWriter,
        totals: inout (objects: Int, bytes: Int64)
    ) async -> ExitCode? {
        let reference = address.reference(in: storage)
        do {
            let metadata = try await reference.getMetadata()
            let text = line(for: reference, metadata, totals: &totals)
            guard (try? await output.write(text)) != nil else { return nil }
            return .success
        } catch  where error.code == .objectNotFound {
            report("No objects match \(address.url)")
            return .notFound
        } catch {
            return Self.failed(error, address)
        }
    }

    private func line(
        for reference: StorageReference, _ metadata: StorageMetadata, totals: inout (objects: Int, bytes: Int64)
    ) -> String {
        totals.objects += 1
        totals.bytes += metadata.size
        guard long else { return "\(reference)\n" }
        let size = String(metadata.size)
        let padded = String(repeating: " ", count: max(0, 10 - size.count)) + size
        let updated = metadata.updated.map(Self.timestamp) ?? "-"
        let version = allVersions ? "  metageneration=\(metadata.metageneration ?? 0)" : ""
        return "\(padded)  \(updated)  \(reference)\(version)\n"
    }

    /// RFC 3339 in UTC, to the second: `2024-05-01T12:00:00Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// The metadata of each object among `entries` (nil for prefixes and objects gone since):
    /// as listed when the listing carried it, else fetched, 16 at a time.
    static func metadata(of entries: [ObjectWalker.Entry]) async -> [StorageMetadata?] {
        var results = [StorageMetadata?](repeating: nil, count: entries.count)
        var unlisted: [Int] = []
        for (index, entry) in entries.enumerated() {
            guard case .object(_, let listed) = entry else { continue }
            if let listed { results[index] = listed } else { unlisted.append(index) }
        }
        guard !unlisted.isEmpty else { return results }
        await withTaskGroup(of: (Int, StorageMetadata?).self) { group in
            var next = 0
            func addNext() {
                guard next < unlisted.count else { return }
                let index = unlisted[next]
                next += 1
                if case .object(let object, _) = entries[index] {
                    group.addTask { (index, try? await object.getMetadata()) }
                }
            }
            for _ in 0..<16 { addNext() }
            for await (index, metadata) in group {
                results[index] = metadata
                addNext()
            }
        }
        return results
    }

    static func failed(_ error: StorageError, _ address: ObjectAddress) -> ExitCode {
        report("\(address.url): \(error)")
        return ExitCode(error)
    }
}
