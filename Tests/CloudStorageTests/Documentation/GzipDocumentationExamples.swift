import CloudStorage
import Foundation

// The Swift blocks of DOCS-section.md and README-section.md (gzip, download()), compiled with the tests until
// they are spliced into the "Options and observability" article and the README; then they move
// into DocumentationSnippets.swift as regions like every other block. Nothing here runs.

func gzipRawDownload() async throws {
    var configuration = StorageConfiguration()
    configuration.decompressesDownloads = false
    let raw = Storage(bucket: "my-bucket", configuration: configuration)
    let compressed = try await raw.reference(withPath: "site/app.js").data(maxSize: 10 * 1024 * 1024)
    _ = compressed
}

func gzipCompressedUpload(storage: Storage) async throws {
    let stored = try await storage.reference(withPath: "site/app.js")
        .putFile(from: URL(fileURLWithPath: "build/app.js"), compression: .gzip)
        .value
    print(stored.contentEncoding ?? "")  // gzip
}

func gzipReadme(storage: Storage) async throws {
    let stored = try await storage.reference(withPath: "site/app.js")
        .putFile(from: URL(fileURLWithPath: "build/app.js"), compression: .gzip)
        .value  // stored with Content-Encoding: gzip
    let original = try await storage.reference(withPath: "site/app.js").data(maxSize: 1 << 20)
    _ = (stored, original)
}

func downloadWithMetadata(storage: Storage) async throws {
    let download = try await storage.reference(withPath: "videos/launch.mp4").download()
    print("Content-Type:", download.metadata.contentType ?? "application/octet-stream")
    for try await chunk in download.bytes {
        _ = chunk  // write it to the client
    }
}

func downloadWithMetadataReadme(storage: Storage) async throws {
    let download = try await storage.reference(withPath: "videos/launch.mp4").download()
    print(download.metadata.contentType ?? "", download.metadata.size)
    for try await chunk in download.bytes { _ = chunk }
}
