import CloudStorage
import Foundation

// The Swift blocks of the gzip and download() sections of the "Options and observability"
// article and the README, compiled with the tests (see DocumentationSnippetTests). Nothing here runs.

func gzipRawDownload(storage: Storage) async throws {
    // snippet: DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#6
    let compressed = try await storage.reference(withPath: "site/app.js")
        .with(.init(decompressesDownloads: false))
        .data(maxSize: 10 * 1024 * 1024)
    // end snippet
    _ = compressed
}

func gzipCompressedUpload(storage: Storage) async throws {
    // snippet: DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#7
    let stored = try await storage.reference(withPath: "site/app.js")
        .putFile(from: URL(fileURLWithPath: "build/app.js"), compression: .gzip)
        .value
    print(stored.contentEncoding ?? "")  // gzip
    // end snippet
}

func gzipReadme(storage: Storage) async throws {
    // snippet: README.md#17
    let stored = try await storage.reference(withPath: "site/app.js")
        .putFile(from: URL(fileURLWithPath: "build/app.js"), compression: .gzip)
        .value  // stored with Content-Encoding: gzip
    let original = try await storage.reference(withPath: "site/app.js").data(maxSize: 1 << 20)
    // end snippet
    _ = (stored, original)
}

func downloadWithMetadata(storage: Storage) async throws {
    // snippet: DocsCatalog/CloudStorage.docc/OptionsAndObservability.md#8
    let download = try await storage.reference(withPath: "videos/launch.mp4").download()
    print("Content-Type:", download.metadata.contentType ?? "application/octet-stream")
    for try await chunk in download.bytes {
        _ = chunk  // write it to the client
    }
    // end snippet
}

func downloadWithMetadataReadme(storage: Storage) async throws {
    // snippet: README.md#18
    let download = try await storage.reference(withPath: "videos/launch.mp4").download()
    print(download.metadata.contentType ?? "", download.metadata.size)
    for try await chunk in download.bytes { _ = chunk }
    // end snippet
}
