import CloudStorage
import Dispatch
import Foundation
import StorageEmulator
import Synchronization
import SystemCalls

/// `cloud-storage hash FILE|gs://BUCKET/PATH...`: prints CRC32C and MD5 digests.
struct HashCommand {
    static let usage = """
        usage: cloud-storage hash [--hex] [options] FILE|gs://BUCKET/PATH...

        Prints the CRC32C and MD5 of each file or object, as `gcloud storage hash` does:

            ---
            crc32c_hash: yZRlqg==
            digest_format: base64
            md5_hash: XrY7u+Ae7tCTyyK7j1rNww==
            url: hello.txt

        A file is read once, in blocks, and hashed here; an object's digests come from its
        metadata (nothing is downloaded). An object without an MD5 (a composed one) shows
        only its CRC32C.

          --hex               hexadecimal digests instead of base64

        \(StorageOptions.destinationUsage)

        Options:
        \(StorageOptions.tokenUsage)
        \(StorageOptions.connectionUsage)

        Exit status: 0 printed, 2 usage, 3 a file is missing, unreadable or not a regular
        file, 4 credentials refused, 5 an object or bucket does not exist, 6 retries ran
        out, 1 other; with several arguments, the highest of their statuses.
        """

    /// One argument: a local file or an object.
    enum Target {
        case file(String)
        case object(ObjectAddress)
    }

    let targets: [Target]
    let hex: Bool
    let storage: StorageOptions

    init(_ words: [String], environment: [String: String]) throws(UsageError) {
        let arguments = try CommandLineArguments(
            words, valued: StorageOptions.valued, flags: StorageOptions.flags.union(["--hex"]))
        guard !arguments.positional.isEmpty else { throw UsageError("hash needs a FILE or gs://BUCKET/PATH") }
        targets = try arguments.positional.map { text throws(UsageError) in
            guard text.hasPrefix("gs://") else {
                guard !text.contains("://") else { throw UsageError("only gs:// URLs and local files: \(text)") }
                guard text != "-" else { throw UsageError("hash reads files, not standard input (-)") }
                return .file(text)
            }
            let address = try ObjectAddress(text, role: "the object")
            try address.validate(needsObject: true)
            return .object(address)
        }
        hex = arguments.has("--hex")
        storage = try StorageOptions(arguments, environment: environment)
    }

    /// An object's or file's digests: the CRC32C, and the MD5 when known.
    struct Digests: Equatable {
        let crc32c: UInt32
        let md5: [UInt8]?
    }

    func run(output: OutputWriter) async -> ExitCode {
        var worst = ExitCode.success
        var files: [(Int, String)] = []
        var objects: [(Int, ObjectAddress)] = []
        for (index, target) in targets.enumerated() {
            switch target {
            case .file(let path): files.append((index, path))
            case .object(let address): objects.append((index, address))
            }
        }
        var results = [Result<Digests, CommandFailure>?](repeating: nil, count: targets.count)
        for (index, path) in files {
            results[index] = await Self.digests(ofFile: path)
        }
        if let first = objects.first {
            // Only when there are objects is anything contacted (or the built-in emulator started).
            let status = await storage.withConnection(bucket: first.1.bucket) { connection in
                for (index, address) in objects {
                    let reference = address.reference(in: connection.storage(for: address.bucket))
                    do throws(StorageError) {
                        let metadata = try await reference.getMetadata()
                        results[index] =
                            Self.digests(of: metadata).map(Result.success)
                            ?? .failure(
                                CommandFailure("\(reference): the server reported no CRC32C", .failure))
                    } catch {
                        let message =
                            error.code == .objectNotFound ? "No such object: \(reference)" : "\(reference): \(error)"
                        results[index] = .failure(CommandFailure(message, ExitCode(error)))
                    }
                }
                return .success
            }
            worst = worst.worse(status)
            if status != .success { return worst }
        }
        for (index, target) in targets.enumerated() {
            switch results[index] {
            case .success(let digests)?:
                let url: String
                switch target {
                case .file(let path): url = path
                case .object(let address): url = address.url
                }
                try? await output.write(block(digests, url: url))
            case .failure(let failure)?:
                worst = worst.worse(failure.reported())
            case nil:
                break
            }
        }
        return worst
    }

    /// The lines printed for one file or object.
    func block(_ digests: Digests, url: String) -> String {
        let crc = withUnsafeBytes(of: digests.crc32c.bigEndian) { Array($0) }
        let encode = { (bytes: [UInt8]) in
            hex ? bytes.map { String(format: "%02x", $0) }.joined() : Data(bytes).base64EncodedString()
        }
        var text = "---\ncrc32c_hash: \(encode(crc))\ndigest_format: \(hex ? "hex" : "base64")\n"
        if let md5 = digests.md5 { text += "md5_hash: \(encode(md5))\n" }
        return text + "url: \(url)\n"
    }

    /// An object's digests as its metadata gives them; nil without a CRC32C.
    static func digests(of metadata: StorageMetadata) -> Digests? {
        guard let crc = metadata.crc32cValue else { return nil }
        let md5 = metadata.md5Hash.flatMap { Data(base64Encoded: $0) }.map { Array($0) }
        return Digests(crc32c: crc, md5: md5)
    }

    /// A file's digests, read in 1 MiB blocks on a thread of its own (so a slow disk never
    /// holds a thread of the cooperative pool); cancelling the calling task stops the reading.
    static func digests(ofFile path: String) async -> Result<Digests, CommandFailure> {
        // Before it is opened: opening a FIFO would wait for a writer for ever.
        if let problem = await SourceFile.problem(at: path) {
            return .failure(CommandFailure(problem, .localFile))
        }
        let stop = StopFlag()
        return await withTaskCancellationHandler {
            await LocalDestination.offThePool { readDigests(path, stop: stop) }
        } onCancel: {
            stop.raise()
        }
    }

    /// Set once to stop a read on another thread.
    private final class StopFlag: Sendable {
        private let raised = Atomic(false)
        func raise() { raised.store(true, ordering: .relaxed) }
        var isRaised: Bool { raised.load(ordering: .relaxed) }
    }

    /// Blocking: reads the file to its end, feeding both digests.
    private static func readDigests(_ path: String, stop: StopFlag) -> Result<Digests, CommandFailure> {
        let fd: Int32
        do throws(SystemCallError) {
            fd = try SystemCall.open(path, [.readOnly, .nonBlocking, .closeOnExec])
        } catch {
            return .failure(CommandFailure("\(path) cannot be opened: \(error.reason)", .localFile))
        }
        defer { try? SystemCall.close(fd) }
        var crc = CRC32C()
        var md5 = MD5()
        let buffer = SystemCall.allocateFileBuffer(byteCount: 1 << 20)
        defer { buffer.deallocate() }
        while true {
            if stop.isRaised { return .failure(CommandFailure("interrupted", .interrupted)) }
            let count: Int
            do throws(SystemCallError) {
                count = try SystemCall.read(fd, into: buffer)
            } catch {
                return .failure(CommandFailure("\(path) cannot be read: \(error.reason)", .localFile))
            }
            if count == 0 { break }
            let block = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            crc.update(block)
            md5.update(block)
        }
        return .success(Digests(crc32c: crc.value, md5: md5.finalize()))
    }
}
