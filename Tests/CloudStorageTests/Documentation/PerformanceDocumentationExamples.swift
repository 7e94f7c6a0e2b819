import CloudStorage
import Foundation
import StorageEmulator

// The Swift blocks of the "Performance" article, compiled with the tests (see
// DocumentationSnippetTests). Nothing here runs.

func performanceSlicing() throws {
    // snippet: DocsCatalog/CloudStorage.docc/Performance.md#1
    var configuration = StorageConfiguration()
    configuration.downloads.slicingThreshold = 64 * 1024 * 1024  // slice from 64 MiB
    try configuration.downloads.setSliceCount(16)  // 1 ... 64; 1 never slices
    // Slice unless the first connection did 1 GB/s over its first 100 ms (nil: always slice).
    configuration.downloads.slicingProbe = try .init(duration: .milliseconds(100), rate: 1_000_000_000)
    let storage = Storage(bucket: "my-bucket", configuration: configuration)
    // end snippet
    _ = storage
}

func performanceParallelUpload() async throws {
    // snippet: DocsCatalog/CloudStorage.docc/Performance.md#2
    var configuration = StorageConfiguration()
    configuration.uploads.parallel.threshold = 64 * 1024 * 1024
    try configuration.uploads.parallel.setPartSize(16 * 1024 * 1024)
    try configuration.uploads.parallel.setConnections(8)
    let storage = Storage(bucket: "my-bucket", configuration: configuration)
    let metadata = try await storage.reference(withPath: "videos/launch.mp4")
        .putFileAsync(from: URL(fileURLWithPath: "/tmp/launch.mp4"))
    // end snippet
    _ = metadata
}

func performanceTransferManager(storage: Storage) async throws {
    // snippet: DocsCatalog/CloudStorage.docc/Performance.md#3
    let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 32, memoryBudget: 128 << 20)

    // A directory up, a prefix down, a prefix copied on the server, a prefix deleted.
    let up = manager.uploadDirectory(URL(fileURLWithPath: "/srv/site"), to: "www/")
    let down = manager.downloadObjects(withPrefix: "logs/2024/", to: URL(fileURLWithPath: "/var/tmp/logs"))
    let copy = manager.copyObjects(withPrefix: "2024/", to: "2024/", in: storage.bucket("archive"))
    let wipe = manager.deleteObjects(withPrefix: "tmp/")

    for await snapshot in up.transferSnapshots {
        print(snapshot.files, snapshot.progress)  // "12/40 files", "1048576/8388608 bytes"
    }
    let report = try await up.value
    for outcome in report.failed {
        if case .failed(let error) = outcome.result { print(outcome.name, error.code) }
    }
    // end snippet
    _ = (down, copy, wipe)
}

func performanceShapedEmulator() throws {
    // snippet: DocsCatalog/CloudStorage.docc/Performance.md#4
    var configuration = StorageEmulator.Configuration()
    configuration.networkShape = try .init(parsing: "rate=50MB/s,latency=10ms")
    // or .init(rate: 50_000_000, latency: .milliseconds(10))
    let emulator = try StorageEmulator.start(configuration)
    // end snippet
    emulator.stop()
}
