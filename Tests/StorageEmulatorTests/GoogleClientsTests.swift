import FakeGCSServer
import Foundation
import StorageEmulator
import Testing

/// Google's own clients, unchanged, against the emulator started in this process: the Python
/// client's every object call (a script in `Python/`), and the Google Cloud CLI's `gcloud
/// storage` commands (a script in `GCloud/`). Each script checks the bytes and metadata that
/// come back and prints a line per step; the tests check that it got to its last line.
enum GoogleClients {
    /// This file's directory, where the scripts are.
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    /// A fresh directory for a run, removed by `body`'s caller.
    static func withScratch<T>(_ body: (URL) async throws -> T) async throws -> T {
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("google-clients-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        return try await body(scratch)
    }

    /// The emulator on a free loopback port, stopped after `body`.
    static func withEmulator<T>(
        _ backing: StorageEmulator.Configuration.Backing, _ body: (StorageEmulator) async throws -> T
    )
        async throws -> T
    {
        var configuration = StorageEmulator.Configuration()
        configuration.backing = backing
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        return try await body(emulator)
    }

    /// `gcloud` on `PATH`, if it is installed.
    static let gcloud: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/gcloud" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }()
}

@Suite(
    "Google's Python client (google-cloud-storage) makes every object call against the emulator",
    .timeLimit(.minutes(10)))
struct PythonClientTests {
    /// Pinned, as the benchmarks pin it, so that every run meets the same client.
    static let requirement = "google-cloud-storage==3.17.1"

    @Test(
        "uploads, downloads, ranges, listing options, copy, rewrite tokens, compose, move, patch, versions, deletes, CSEK, requester pays, transfer manager parallel upload",
        arguments: ["memory", "directory"])
    func everyCall(backing: String) async throws {
        let installed = try await PythonVirtualEnvironment(
            name: "google-cloud-storage", requirements: [Self.requirement]
        )
        .prepare()
        let script = GoogleClients.directory.appendingPathComponent("Python/google_cloud_storage_calls.py").path
        let outcome = try await GoogleClients.withScratch { scratch in
            try await GoogleClients.withEmulator(
                backing == "memory" ? .memory : .directory(scratch.appendingPathComponent("store"))
            ) {
                emulator in
                try await SpawnedProcess.run(
                    installed.python, [script],
                    environment: [
                        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:\(emulator.port)", "HOME": scratch.path,
                        "PATH": "/usr/bin:/bin",
                    ])
            }
        }
        #expect(outcome.status == 0, "\(outcome.output)")
        #expect(outcome.output.hasSuffix("all 17 steps passed\n"), "\(outcome.output)")
    }
}

@Suite("gcloud storage runs against the emulator", .timeLimit(.minutes(10)))
struct GCloudTests {
    @Test(
        "cp 1 KB, 3 MB and 20 MB both ways (multipart, resumable, parallel composite), cp -r, ls, cat, objects describe/update/compose, gs-to-gs cp, mv, hash, du, rsync, rm -r",
        .enabled(
            if: GoogleClients.gcloud != nil, "gcloud is not installed: the Google Cloud CLI's commands are not run"))
    func commands() async throws {
        let script = GoogleClients.directory.appendingPathComponent("GCloud/gcloud_storage_calls.sh").path
        let outcome = try await GoogleClients.withScratch { scratch in
            try await GoogleClients.withEmulator(.directory(scratch.appendingPathComponent("store"))) { emulator in
                var environment = ["HOME": scratch.path]
                // gcloud finds its Python, and the script its tools, on the path.
                environment["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
                // Our CLI, when the build made it, downloads what gcloud stored gzip-compressed.
                let ours = GoogleClients.directory.appendingPathComponent("../../.build/debug/cloud-storage")
                    .standardizedFileURL.path
                return try await SpawnedProcess.run(
                    "/bin/bash",
                    [script, "http://127.0.0.1:\(emulator.port)/", scratch.appendingPathComponent("work").path]
                        + (FileManager.default.isExecutableFile(atPath: ours) ? [ours] : []),
                    environment: environment)
            }
        }
        #expect(outcome.status == 0, "\(outcome.output)")
        #expect(outcome.output.hasSuffix("all 9 steps passed\n"), "\(outcome.output)")
        #expect(outcome.output.contains("also through cloud-storage cp and cat"), "\(outcome.output)")
    }
}
