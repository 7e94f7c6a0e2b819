import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `cp -r` and `rsync -r` never write through a symbolic link in the destination that they did not
/// make, and neither does the SDK's `downloadObjects`: both run on its transfer manager.
extension CopyDirectionsTests {
    /// `DIR/p/sub` is a link to a directory outside DIR: the copy of `p/sub/x.txt` is refused
    /// with the link's path, nothing is written outside, and the other objects are copied: by
    /// the SDK's `downloadObjects`, `cp -r` and `rsync -r`.
    @Test(arguments: ["downloadObjects", "cp", "rsync"])
    func aRecursiveCopyNeverWritesThroughALinkInTheDestination(by copier: String) async throws {
        let emulator = try Self.emulator()
        defer { emulator.stop() }
        let bytes = Data("the object's bytes\n".utf8)
        try await Self.put(["p/sub/x.txt": bytes, "p/y.txt": bytes], in: emulator)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outside = directory.appendingPathComponent("outside")
        let root = directory.appendingPathComponent("copy")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("p"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: root.appendingPathComponent("p/sub"), withDestinationURL: outside)

        let link = root.appendingPathComponent("p/sub").path
        switch copier {
        case "cp":
            let (status, output) = try await Self.cp(
                ["--quiet", "-r", "gs://demo/p", root.path], emulator)
            #expect(status == .localFile)
            #expect(Self.text(output).contains("\(link) is a symbolic link"))
        case "rsync":
            let (status, _) = try await RsyncCommandTests.rsync(
                ["--quiet", "-r", "gs://demo/p", root.appendingPathComponent("p").path], emulator)
            #expect(status == .localFile)
        default:
            let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
            let report = try await StorageTransferManager(storage: storage)
                .downloadObjects(withPrefix: "p/", to: root.appendingPathComponent("p")).value
            let failed = report.outcomes.compactMap { outcome -> StorageError? in
                if case .failed(let error) = outcome.result { return error }
                return nil
            }
            #expect(failed.map(\.code) == [.unwritableFile])
            #expect(failed.first?.message.contains("\(link) is a symbolic link") == true)
        }
        let written = try FileManager.default.contentsOfDirectory(atPath: outside.path)
        #expect(written.isEmpty, "nothing written through the link")
        #expect(try Data(contentsOf: root.appendingPathComponent("p/y.txt")) == bytes)
    }
}
