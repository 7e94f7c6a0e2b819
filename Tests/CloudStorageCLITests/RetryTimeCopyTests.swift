import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `cp --retry-time` bounds the retries of every direction it copies in, not only uploads.
extension CopyDirectionsTests {
    /// `--retry-time 0` gives up at the first failure in every direction and for `-r`'s listing:
    /// the emulator answers its first request with 503 and would serve the second, so exactly one
    /// request proves that nothing was retried.
    @Test(arguments: [["gs://demo/x.txt", "FILE"], ["gs://demo/x.txt", "-"], ["-r", "gs://demo/", "FILE"]])
    func retryTimeZeroGivesUpAtTheFirstFailureInEveryDirection(words: [String]) async throws {
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent("emulator")
        let filling = try Self.emulator { $0.backing = .directory(directory) }
        try await Self.put(["x.txt": Data("x".utf8)], in: filling)
        filling.stop()
        let emulator = try Self.emulator {
            $0.backing = .directory(directory)
            $0.faults = ["return-503"]
        }
        defer { emulator.stop() }
        let target = root.appendingPathComponent("copy").path
        let arguments = ["--quiet", "--retry-time", "0"] + words.map { $0 == "FILE" ? target : $0 }
        let (status, output) = try await Self.cp(arguments, emulator)
        #expect(status == .unavailable, "\(Self.text(output))")
        #expect(emulator.requestsReceived == 1)
        #expect(!FileManager.default.fileExists(atPath: target))
    }
}
