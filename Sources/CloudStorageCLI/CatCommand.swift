import CloudStorage
import Foundation

/// `cloud-storage cat gs://BUCKET/PATH...`: writes objects' bytes to standard output.
struct CatCommand {
    static let usage = """
        usage: cloud-storage cat [options] gs://BUCKET/PATH[#GENERATION]...

        Writes each object's bytes to standard output, in order, as they arrive
        (memory stays bounded whatever the size). The CRC32C of a whole object is
        checked after its last byte: a mismatch exits 7, after the bytes were
        written, so treat the output as unverified unless the status is 0. A reader
        that stops early (cloud-storage cat ... | head -c 10) ends the command
        quietly with status 0. PATH#GENERATION (digits after the last #, as gcloud
        reads them) writes that generation of the object, live or noncurrent.

          -r RANGE            only bytes START-END (inclusive, from 0) or START- (to the end)

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(StorageOptions.connectionUsage)

        Exit status: 0 written, 2 usage (a bucket or object name that breaks the rules
        is refused before anything is contacted), 4 credentials refused, 5 an object or
        bucket does not exist, 6 retries ran out, 7 integrity failure, 1 other.
        """

    let addresses: [ObjectAddress]
    /// `-r`'s first byte and, when given, last byte.
    let range: (start: Int64, end: Int64?)?
    let storage: StorageOptions

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            words, valued: StorageOptions.valued.union(["-r"]), flags: StorageOptions.flags)
        guard !arguments.positional.isEmpty else { throw UsageError("cat needs a gs://BUCKET/PATH") }
        addresses = try arguments.positional.map { text throws(UsageError) in
            let address = try ObjectAddress(text, role: "the object")
            try address.validate(needsObject: true, allowsGeneration: true)
            return address
        }
        range = try arguments.value("-r").map(Self.range)
        storage = try StorageOptions(arguments, environment: environment)
    }

    /// Parses `START-END` or `START-`.
    static func range(_ text: String) throws(UsageError) -> (start: Int64, end: Int64?) {
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let digits = { (part: Substring) in !part.isEmpty && part.utf8.allSatisfy { (0x30...0x39).contains($0) } }
        guard parts.count == 2, digits(parts[0]), let start = Int64(parts[0]) else {
            throw UsageError("-r: \(text) is not START-END or START- (byte offsets from 0)")
        }
        if parts[1].isEmpty { return (start, nil) }
        guard digits(parts[1]), let end = Int64(parts[1]), end >= start else {
            throw UsageError("-r: \(text) is not START-END or START- (byte offsets from 0, END not before START)")
        }
        return (start, end)
    }

    func run(output: OutputWriter) async -> ExitCode {
        await storage.withConnection(bucket: addresses[0].bucket) { connection in
            var worst = ExitCode.success
            for address in addresses {
                let reference = address.reference(in: connection.storage(for: address.bucket))
                let stream: StorageDownloadStream
                switch range {
                case nil: stream = reference.dataStream()
                case (let start, nil)?: stream = reference.dataStream(range: start...)
                case (let start, let end?)?: stream = reference.dataStream(range: start...end)
                }
                var written: Int64 = 0
                do throws(StorageError) {
                    for try await chunk in stream {
                        do {
                            try await output.write(chunk)
                        } catch {
                            // The reader went away: what it wanted it has.
                            return worst
                        }
                        written += Int64(chunk.count)
                    }
                } catch {
                    CopyCommand.reportStreamFailure(error, of: reference, written: written)
                    worst = worst.worse(ExitCode(error))
                }
            }
            return worst
        }
    }
}
