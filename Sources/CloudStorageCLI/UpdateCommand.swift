import CloudStorage

/// `cloud-storage update gs://BUCKET/PATH...`: changes objects' metadata.
struct UpdateCommand {
    static let usage = """
        usage: cloud-storage update [options] gs://BUCKET/PATH...

        Changes each object's metadata in place (a PATCH: only what the options name
        changes; the bytes and the generation stay, the metageneration goes up), and
        prints "Updated gs://BUCKET/PATH" for each.

        \(StorageOptions.destinationUsage)

        Options:
          --content-type T, --cache-control V, --content-disposition V,
          --content-encoding V, --content-language V
                              set the header
          --custom-metadata K=V
                              set a custom key (repeatable; K= sets an empty value)
          --remove-custom-metadata K
                              remove a custom key (repeatable)
          --clear-custom-metadata
                              remove every custom key (but those --custom-metadata sets); the
                              keys are read first and the update is pinned to the
                              metageneration read, so a key added meanwhile fails it (8)
          --if-generation-match N, --if-metageneration-match N
                              update only if the object's generation or metageneration is N
        \(StorageOptions.tokenUsage)
        \(StorageOptions.connectionUsage)

        Exit status: 0 updated, 2 usage (nothing to change, a malformed option, or a name
        that breaks the rules, refused before anything is contacted), 4 credentials
        refused, 5 an object or bucket does not exist, 6 retries ran out, 8 a condition
        did not hold, 1 other; with several objects, the highest of their statuses.
        """

    let addresses: [ObjectAddress]
    /// The change, without the removals `--clear-custom-metadata` finds.
    let update: StorageMetadataUpdate
    /// Whether every custom key not set by the update goes.
    let clearsCustomMetadata: Bool
    let preconditions: StoragePreconditions
    let storage: StorageOptions

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            words,
            valued: StorageOptions.valued.union(ObjectWriteOptions.metadataValued)
                .union(ObjectWriteOptions.preconditionValued).union(["--remove-custom-metadata"]),
            flags: StorageOptions.flags.union(["--clear-custom-metadata"]))
        guard !arguments.positional.isEmpty else { throw UsageError("update needs a gs://BUCKET/PATH") }
        addresses = try arguments.positional.map { text throws(UsageError) in
            let address = try ObjectAddress(text, role: "the object")
            try address.validate(needsObject: true)
            return address
        }
        var update = StorageMetadataUpdate()
        let headers: [(String, WritableKeyPath<StorageMetadataUpdate, StorageMetadataUpdate.Change<String>?>)] = [
            ("--content-type", \.contentType), ("--cache-control", \.cacheControl),
            ("--content-disposition", \.contentDisposition), ("--content-encoding", \.contentEncoding),
            ("--content-language", \.contentLanguage),
        ]
        for (option, field) in headers {
            if let value = arguments.value(option) { update[keyPath: field] = .set(value) }
        }
        for (key, value) in try ObjectWriteOptions.customMetadata(arguments.values("--custom-metadata")) {
            update.customMetadata[key] = .set(value)
        }
        clearsCustomMetadata = arguments.has("--clear-custom-metadata")
        let removals = arguments.values("--remove-custom-metadata")
        if clearsCustomMetadata && !removals.isEmpty {
            throw UsageError("--clear-custom-metadata removes every key already; drop --remove-custom-metadata")
        }
        for key in removals {
            guard !key.isEmpty else { throw UsageError("--remove-custom-metadata needs a key") }
            guard update.customMetadata[key] == nil else {
                throw UsageError("the custom key \(key) is both set and removed")
            }
            update.customMetadata[key] = .remove
        }
        guard update != StorageMetadataUpdate() || clearsCustomMetadata else {
            throw UsageError("update needs something to change (such as --content-type or --custom-metadata K=V)")
        }
        self.update = update
        var preconditions = StoragePreconditions()
        preconditions.ifGenerationMatch = try arguments.value("--if-generation-match").map {
            text throws(UsageError) in try ObjectWriteOptions.number(text, option: "--if-generation-match")
        }
        preconditions.ifMetagenerationMatch = try arguments.value("--if-metageneration-match").map {
            text throws(UsageError) in try ObjectWriteOptions.number(text, option: "--if-metageneration-match")
        }
        self.preconditions = preconditions
        storage = try StorageOptions(arguments, environment: environment)
    }

    func run(output: OutputWriter) async -> ExitCode {
        await storage.withConnection(bucket: addresses[0].bucket) { connection in
            var worst = ExitCode.success
            for address in addresses {
                let reference = address.reference(in: connection.storage(for: address.bucket))
                do throws(StorageError) {
                    try await apply(to: reference)
                    try? await output.write("Updated \(reference)\n")
                } catch {
                    report(error.code == .objectNotFound ? "No such object: \(reference)" : "\(reference): \(error)")
                    worst = worst.worse(ExitCode(error))
                }
            }
            return worst
        }
    }

    /// Updates one object; with `--clear-custom-metadata`, reads its keys first and pins the
    /// update to the metageneration read (unless one was given), so no key added meanwhile stays.
    private func apply(to reference: StorageReference) async throws(StorageError) {
        var update = update
        var preconditions = preconditions
        if clearsCustomMetadata {
            let current = try await reference.getMetadata()
            for key in current.customMetadata.keys where update.customMetadata[key] == nil {
                update.customMetadata[key] = .remove
            }
            if preconditions.ifMetagenerationMatch == nil {
                preconditions.ifMetagenerationMatch = current.metageneration
            }
        }
        _ = try await reference.updateMetadata(update, preconditions: preconditions)
    }
}
