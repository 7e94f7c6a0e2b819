import CloudStorage
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `--verbose` prints the SDK's events to standard error, and every request names the tool.
/// Run as a separate process, in the serialized command suite.
extension CommandLineToolTests {
    @Test(arguments: [["cp", "--verbose"], ["--verbose", "cp"]])
    func verboseCopyPrintsEachEventOnOneRedactedLine(words: [String]) async throws {
        let (source, _) = try Self.file(size: 300 * 1024)
        let home = source.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: home) }
        let (status, errors) = try await Self.runTool(
            words + ["--quiet", "--chunk-size", "256K", source.path, "gs://demo/verbose.bin"],
            environment: ["HOME": home.path, "XDG_DATA_HOME": home.appendingPathComponent("data").path])
        #expect(status == ExitCode.success.rawValue, "\(errors)")
        let lines = errors.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.hasPrefix("[cloud-storage] ") }, "\(errors)")
        #expect(lines.first?.hasPrefix("[cloud-storage] transport-chosen native for http://127.0.0.1:") == true)
        // Small enough for one multipart request; the session events are the SDK tests' concern.
        #expect(lines.dropFirst().first?.contains(" request POST http://127.0.0.1:") == true, "\(errors)")
        #expect(lines.dropFirst().first?.contains("uploadType=multipart: 200 in ") == true, "\(errors)")
        #expect(lines.last?.contains(" checksum-verdict verbose.bin: CRC32C matched") == true, "\(errors)")
        #expect(!errors.contains(where: { $0 == "\r" }))
    }

    @Test func everyRequestOfTheToolNamesIt() async throws {
        let server = try AuthTestServer { _ in
            AuthTestServer.Reply.json(404, #"{"error":{"code":404,"message":"No such object"}}"#)
        }
        defer { server.stop() }
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let (status, _) = try await Self.runTool(
            ["stat", "--endpoint", server.baseURL.absoluteString, "gs://demo/missing"], environment: ["HOME": home.path]
        )
        #expect(status != ExitCode.success.rawValue)
        let request = try #require(server.requests.first)
        let version = StorageConfiguration.Identification.sdkVersion
        #expect(request.headers["User-Agent"] == "cloud-storage-swift/\(version) cloud-storage-cli/\(version)")
    }
}
