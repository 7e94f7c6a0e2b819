import Foundation
import Testing

@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `cp` of a file sent in parts records its multipart upload, and a rerun after `kill -9` sends
/// only the parts the server lacks: the first run is held by the emulator (`stall-after`) on its
/// third and fourth parts while the first two are stored, and is killed there.
@Suite("cp resumes a parallel upload after kill -9", .serialized, .timeLimit(.minutes(10)))
struct CopyPartsResumeTests {
    static let part = CopyResumeTests.chunk
    /// The initiate and the first two parts pass; the next two are held after 100 KiB each.
    static let heldPlan = ["pass", "pass", "pass", "stall-after-100K", "stall-after-100K"]
    static let heldAt = Int64(2 * part + 2 * 100 * 1024)

    static func arguments(_ scene: CopyResumeTests.Scene, _ emulator: StorageEmulator) -> [String] {
        [
            "cp", "--quiet", "--parallel-threshold", "1M", "--part-size", "1M", "--connections", "2", "--endpoint",
            emulator.baseURL.absoluteString, scene.file.path, "gs://resume-bucket/big.bin",
        ]
    }

    @Test func aRerunAfterKill9SendsOnlyTheMissingParts() async throws {
        try await CopyResumeTests.withScene { scene in
            var configuration = StorageEmulator.Configuration()
            configuration.faults = Self.heldPlan
            configuration.minimumMultipartPartSize = 1
            let emulator = try StorageEmulator.start(configuration)
            defer { emulator.stop() }

            let (first, firstErrors) = try CopyResumeTests.launch(
                Self.arguments(scene, emulator), environment: scene.environment)
            defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
            try await CopyResumeTests.wait(for: first) {
                emulator.bytesReceived >= Self.heldAt && scene.recordFiles().count == 1
            }
            try await CopyResumeTests.kill9(first, firstErrors)
            #expect(emulator.multipartUploadsInProgress == 1, "the killed run left its upload for the rerun")

            let (process, errors) = try CopyResumeTests.launch(
                Self.arguments(scene, emulator), environment: scene.environment)
            let (status, stderr) = try await CopyResumeTests.finish(process, errors)
            #expect(status == 0, "\(stderr)")
            #expect(
                stderr.contains("resuming the upload of \(scene.file.path) from byte \(2 * Self.part)"), "\(stderr)")
            let stored = try await CopyResumeTests.storedBytes(emulator) == scene.payload
            #expect(stored)
            // Without resuming, the rerun alone sends all 12 MiB on top of the 2.2 MiB sent before.
            #expect(emulator.bytesReceived < Int64(CopyResumeTests.size + Self.part), "\(emulator.bytesReceived) bytes")
            #expect(emulator.multipartUploadsInProgress == 0)
            #expect(scene.recordFiles().isEmpty, "the record is removed once the object is stored")
        }
    }
}
