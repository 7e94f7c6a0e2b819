// Uploads a file to a fake-gcs-server started for the occasion, with a live
// progress line, then reads the object back to show that every byte arrived.
//
//     swift run cloud-storage-example                   # a generated 64 MiB file
//     swift run cloud-storage-example --size-mib 256
//     swift run cloud-storage-example path/to/file.jpg
//
// Until the built-in emulator lands, the "built-in default" is fake-gcs-server,
// installed into a virtualenv under .build/ and started on a free loopback port.

import CloudStorage
import FakeGCSServer
import Foundation

struct Options {
    var file: URL?
    var sizeMiB = 64

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--size-mib":
                guard let value = rest.popFirst().flatMap(Int.init), value >= 0 else {
                    throw ExampleError("--size-mib needs a whole number of MiB")
                }
                options.sizeMiB = value
            case "-h", "--help":
                print("usage: cloud-storage-example [--size-mib N] [FILE]")
                exit(0)
            default:
                guard !argument.hasPrefix("-") else { throw ExampleError("unknown option \(argument)") }
                options.file = URL(fileURLWithPath: argument)
            }
        }
        return options
    }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Renders upload progress: one rewritten line on a terminal, a line per 10% otherwise.
struct ProgressPrinter {
    let isTerminal = isatty(STDOUT_FILENO) == 1
    let start = ContinuousClock.now
    var lastDecile = -1

    mutating func show(_ snapshot: TaskSnapshot) {
        let progress = snapshot.progress
        let elapsed = (ContinuousClock.now - start) / .seconds(1)
        let rate = elapsed > 0 ? Double(progress.completedUnitCount) / elapsed : 0
        let line = String(
            format: "%@ %6.2f%%  %@ of %@  %@/s",
            String(describing: snapshot.status).padding(toLength: 8, withPad: " ", startingAt: 0),
            progress.fractionCompleted * 100,
            Self.bytes(Double(progress.completedUnitCount)),
            Self.bytes(Double(progress.totalUnitCount)),
            Self.bytes(rate)
        )
        if isTerminal {
            // Unbuffered, so the line updates in place as the upload goes.
            FileHandle.standardOutput.write(Data(("\r" + line + (snapshot.status.isTerminal ? "\n" : "")).utf8))
        } else {
            let decile = Int(progress.fractionCompleted * 10)
            if decile != lastDecile || snapshot.status != .progress {
                lastDecile = decile
                print(line)
            }
        }
    }

    static func bytes(_ count: Double) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = count
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: unit == 0 ? "%.0f %@" : "%.1f %@", value, units[unit])
    }
}

func makeSampleFile(sizeMiB: Int) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("cloud-storage-example-\(getpid()).bin")
    guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
        throw ExampleError("cannot create \(url.path)")
    }
    let handle = try FileHandle(forWritingTo: url)
    defer { try? handle.close() }
    var block = Data(count: 1024 * 1024)
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<sizeMiB {
        block.withUnsafeMutableBytes { raw in
            for index in stride(from: 0, to: raw.count, by: 8) {
                raw.storeBytes(of: generator.next() as UInt64, toByteOffset: index, as: UInt64.self)
            }
        }
        try handle.write(contentsOf: block)
    }
    return url
}

func run() async throws {
    let options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
    let file = try options.file ?? makeSampleFile(sizeMiB: options.sizeMiB)
    defer { if options.file == nil { try? FileManager.default.removeItem(at: file) } }

    print("Starting fake-gcs-server (installed under .build/ on first use)…")
    let server = try await FakeGCSServer.start()
    defer { server.stop() }
    let bucket = "example-bucket"
    try await server.createBucket(bucket)

    let storage = Storage(bucket: bucket, endpoint: .gcs(server.baseURL))
    let ref = storage.reference().child("examples").child(file.lastPathComponent)
    print("Uploading \(file.path) to \(ref) on \(server.baseURL.absoluteString)")

    let task = ref.putFile(from: file)
    var printer = ProgressPrinter()
    for await snapshot in task.snapshots {
        printer.show(snapshot)
    }
    let metadata = try await task.value

    let stored = try await server.download(bucket: bucket, object: ref.fullPath)
    let original = try Data(contentsOf: file)
    guard stored == original else {
        throw ExampleError("the stored object differs from the file (\(stored.count) vs \(original.count) bytes)")
    }
    print(
        "Stored \(ref): \(metadata.size) bytes, \(metadata.contentType ?? "no content type"), CRC32C \(metadata.crc32c ?? "-")"
    )
    print("Read it back from the server: every byte matches.")
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("cloud-storage-example: \(error)\n".utf8))
    exit(1)
}
