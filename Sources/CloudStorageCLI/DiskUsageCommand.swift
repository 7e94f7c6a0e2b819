import CloudStorage
import Foundation

/// `cloud-storage du [-s] [-c] [-a] [--readable-sizes] gs://BUCKET[/PREFIX]...`: the bytes
/// objects take, as `gcloud storage du` counts them, from the listing alone.
struct DiskUsageCommand {
    static let usage = """
        usage: cloud-storage du [options] gs://BUCKET[/PREFIX]...

        Prints the size in bytes of each object below each URL (and of the object
        named exactly PREFIX), one "SIZE  gs://BUCKET/NAME" line each, from the
        listing itself: one request a page of up to 1000 objects, whatever the depth.

          -s                  one line per URL: the sum of its objects
          -c                  a final "SIZE  total" line
          -a                  count every generation, noncurrent ones too, printed as
                              gs://BUCKET/NAME#GENERATION (Google Cloud Storage only)
          --readable-sizes    sizes as 1.50 KiB, 3.00 MiB … instead of bytes

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(StorageOptions.connectionUsage)

        Exit status: 0 counted, 2 usage, 4 credentials refused, 5 the bucket does not
        exist or a URL matched no objects, 6 retries ran out, 1 other.
        """

    let addresses: [ObjectAddress]
    let summarize: Bool
    let total: Bool
    let allVersions: Bool
    let readable: Bool
    let storage: StorageOptions
    /// The most entries per listing request; small in tests, to make many pages.
    var pageSize = StorageReference.maximumListResults

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            ShortFlags.expand(words, letters: "sca"), valued: StorageOptions.valued,
            flags: StorageOptions.flags.union(["-s", "-c", "-a", "--readable-sizes"]))
        addresses = try ObjectAddress.listings(arguments.positional, command: "du")
        summarize = arguments.has("-s")
        total = arguments.has("-c")
        allVersions = arguments.has("-a")
        readable = arguments.has("--readable-sizes")
        storage = try StorageOptions(arguments, environment: environment)
    }

    func run(output: OutputWriter) async -> ExitCode {
        await storage.withConnection(bucket: addresses[0].bucket) { connection in
            var worst = ExitCode.success
            var grand: Int64 = 0
            for address in addresses {
                let status = await count(address, in: connection.storage(for: address.bucket), to: output, sum: &grand)
                guard let status else { return worst }
                worst = worst.worse(status)
            }
            if total { _ = try? await output.write(line(grand, "total")) }
            return worst
        }
    }

    /// Counts one URL, printing each object (or, with `-s`, the sum) as it goes.
    ///
    /// - Returns: The status, or nil when the output went away.
    private func count(
        _ address: ObjectAddress, in storage: Storage, to output: OutputWriter, sum grand: inout Int64
    ) async -> ExitCode? {
        var sum: Int64 = 0
        var found = false
        var buffer = ""
        var listed: [ObjectWalker.Entry] = []
        if !address.path.isEmpty && !address.endsInSlash {
            // The object named exactly as the URL counts too (its live version), as in `ls`.
            listed.append(.object(address.reference(in: storage), listed: nil))
        }
        var walker = ObjectWalker(root: address.folder(in: storage), recursive: true, pageSize: pageSize)
        walker.versions = allVersions
        var closed = false
        do {
            try await walker.walk { entry in
                listed.append(entry)
            } pageDone: {
                // GCS listings carry each size; Firebase v0 ones cost a request per object.
                let sizes = await ListCommand.metadata(of: listed)
                for (entry, metadata) in zip(listed, sizes) {
                    guard case .object(let object, _) = entry, let metadata else { continue }
                    found = true
                    sum += metadata.size
                    guard !summarize else { continue }
                    buffer += line(metadata.size, "\(object)")  // Under -a, pinned: gs://BUCKET/NAME#GENERATION.
                }
                listed.removeAll(keepingCapacity: true)
                guard await output.writePage(&buffer) else {
                    closed = true
                    return false
                }
                return true
            }
        } catch {
            return ListCommand.failed(error, address)
        }
        if closed { return nil }
        grand += sum
        if summarize { _ = try? await output.write(line(sum, address.url)) }
        guard found || address.path.isEmpty else {
            report("No objects match \(address.url)")
            return .notFound
        }
        return .success
    }

    /// `SIZE  NAME`, the size padded as gcloud does.
    private func line(_ size: Int64, _ name: String) -> String {
        let text = readable ? Self.readableSize(size) : String(size)
        return text.padding(toLength: max(text.count, 12), withPad: " ", startingAt: 0) + name + "\n"
    }

    /// `512 B`, `1.50 KiB`, `3.00 MiB`…
    static func readableSize(_ size: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(size)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(size) B" : String(format: "%.2f %@", value, units[unit])
    }
}
