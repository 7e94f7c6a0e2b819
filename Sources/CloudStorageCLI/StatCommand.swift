import CloudStorage
import Foundation

/// `cloud-storage stat gs://BUCKET/PATH...`: prints objects' metadata.
struct StatCommand {
    static let usage = """
        usage: cloud-storage stat [options] gs://BUCKET/PATH[#GENERATION]...

        Prints each object's metadata, one block per object: name, size, content type,
        generation, metageneration, creation and update times (RFC 3339, UTC), MD5 and
        CRC32C (base64, as the server gives them) and custom metadata. A missing object
        is reported on standard error and the others are still shown. PATH#GENERATION
        (digits after the last #, as gcloud reads them) is that generation of the
        object, live or noncurrent; one that does not exist is a missing object.

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(StorageOptions.connectionUsage)

        Exit status: 0 shown, 2 usage (a bucket or object name that breaks the rules is
        refused before anything is contacted), 4 credentials refused, 5 an object or
        bucket does not exist, 6 retries ran out, 1 other; with several objects, the
        highest of their statuses.
        """

    let addresses: [ObjectAddress]
    let storage: StorageOptions

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(words, valued: StorageOptions.valued, flags: StorageOptions.flags)
        guard !arguments.positional.isEmpty else { throw UsageError("stat needs a gs://BUCKET/PATH") }
        addresses = try arguments.positional.map { text throws(UsageError) in
            let address = try ObjectAddress(text, role: "the object")
            try address.validate(needsObject: true, allowsGeneration: true)
            return address
        }
        storage = try StorageOptions(arguments, environment: environment)
    }

    func run(output: OutputWriter) async -> ExitCode {
        await storage.withConnection(bucket: addresses[0].bucket) { connection in
            var worst = ExitCode.success
            for address in addresses {
                let reference = address.reference(in: connection.storage(for: address.bucket))
                do throws(StorageError) {
                    let metadata = try await reference.getMetadata()
                    try? await output.write(Self.block(for: reference, metadata))
                } catch {
                    report(error.code == .objectNotFound ? "No such object: \(reference)" : "\(reference): \(error)")
                    worst = worst.worse(ExitCode(error))
                }
            }
            return worst
        }
    }

    /// The lines `stat` prints for one object.
    static func block(for reference: StorageReference, _ metadata: StorageMetadata) -> String {
        var fields: [(String, String)] = [
            ("Size", "\(metadata.size)"),
            ("Content-Type", metadata.contentType ?? "-"),
        ]
        for (name, value) in [
            ("Cache-Control", metadata.cacheControl), ("Content-Disposition", metadata.contentDisposition),
            ("Content-Encoding", metadata.contentEncoding), ("Content-Language", metadata.contentLanguage),
        ] {
            if let value { fields.append((name, value)) }
        }
        fields += [
            ("Generation", metadata.generation.map(String.init) ?? "-"),
            ("Metageneration", metadata.metageneration.map(String.init) ?? "-"),
            ("Created", metadata.timeCreated.map(ListCommand.timestamp) ?? "-"),
            ("Updated", metadata.updated.map(ListCommand.timestamp) ?? "-"),
            ("Hash (MD5)", metadata.md5Hash ?? "-"),
            ("Hash (CRC32C)", metadata.crc32c ?? "-"),
        ]
        var text = "\(reference):\n"
        for (name, value) in fields {
            text += "    \(name + ":")\(String(repeating: " ", count: max(1, 20 - name.count)))\(value)\n"
        }
        if !metadata.customMetadata.isEmpty {
            text += "    Metadata:\n"
            for (key, value) in metadata.customMetadata.sorted(by: { $0.key < $1.key }) {
                text += "        \(key): \(value)\n"
            }
        }
        return text
    }
}
