import CloudStorage

/// `cloud-storage compose SOURCE... DESTINATION`: concatenates objects on the server.
struct ComposeCommand {
    static let usage = """
        usage: cloud-storage compose [options] gs://BUCKET/SOURCE... gs://BUCKET/DESTINATION

        Writes DESTINATION with the bytes of the SOURCE objects, one after the other, on
        the server (Cloud Storage's compose): 1 to \(StorageReference.maximumComposeSources) sources, all in DESTINATION's
        bucket; a source may repeat, and DESTINATION may be one of them (to append). A
        source written gs://BUCKET/NAME#GENERATION contributes that generation; any other,
        the live object. One request: the server combines the sources' CRC32Cs into the
        result's. The new object's metadata is only what the options give (the content
        type is not taken from the sources).

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(ObjectWriteOptions.metadataUsage)
        \(ObjectWriteOptions.preconditionUsage)
        \(StorageOptions.connectionUsage)

        Exit status: 0 composed (or skipped by -n), 2 usage (more than \(StorageReference.maximumComposeSources) sources,
        sources in another bucket, or a name that breaks the rules, refused before anything
        is contacted), 4 credentials refused, 5 a source or the bucket does not exist,
        6 retries ran out, 8 a condition did not hold, 130/143 interrupted, 1 other.
        """

    let sources: [ObjectAddress]
    let destination: ObjectAddress
    let write: ObjectWriteOptions
    let storage: StorageOptions

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            ShortFlags.expand(words, letters: "n"),
            valued: StorageOptions.valued.union(ObjectWriteOptions.metadataValued)
                .union(ObjectWriteOptions.preconditionValued),
            flags: StorageOptions.flags.union(ObjectWriteOptions.noClobberFlags))
        guard arguments.positional.count >= 2 else {
            throw UsageError("compose needs at least one gs://BUCKET/SOURCE and a gs://BUCKET/DESTINATION")
        }
        let addresses = try arguments.positional.map { text throws(UsageError) in
            let address = try ObjectAddress(text, role: "an object to compose")
            try address.validate(needsObject: true)
            return address
        }
        let destination = addresses[addresses.count - 1]
        let sources = Array(addresses.dropLast())
        let limit = StorageReference.maximumComposeSources
        guard sources.count <= limit else {
            throw UsageError("compose takes at most \(limit) sources; \(sources.count) were given")
        }
        if let stranger = sources.first(where: { $0.bucket != destination.bucket }) {
            throw UsageError(
                "compose takes sources in the destination's bucket (\(destination.bucket)): \(stranger.url) is not")
        }
        (self.sources, self.destination) = (sources, destination)
        write = try ObjectWriteOptions(arguments)
        storage = try StorageOptions(arguments, environment: environment)
    }

    func run(output: OutputWriter) async -> ExitCode {
        await storage.withConnection(bucket: destination.bucket) { connection in
            let target = destination.reference(in: connection.storage)
            let parts = sources.map { $0.reference(in: connection.storage) }
            let (metadata, preconditions) = (write.metadata ?? StorageMetadata(), write.preconditions)
            let (ending, signal) = await Interruptibly.run { () -> Result<StorageMetadata, StorageError> in
                do throws(StorageError) {
                    return .success(
                        try await target.compose(from: parts, metadata: metadata, preconditions: preconditions))
                } catch {
                    return .failure(error)
                }
            }
            return await CopyCommand.conclude(
                ending, signal: signal, output: output, skipping: write.noClobber ? target : nil,
                cancelled: "cancelled; the destination was left as it was",
                abandoned: "interrupted; the server did not answer in time",
                success: { composed in
                    "Composed \(target) from \(parts.count) object\(parts.count == 1 ? "" : "s") (\(composed.size) bytes)"
                }, then: nil)
        }
    }
}
