import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `cp` addresses object names exactly and copies exactly the objects listed.
extension CopyDirectionsTests {
    /// `cp -r gs://demo/pfx// DIR` copies `pfx//abs.txt`, never `pfx/abs.txt`; a whole-bucket copy
    /// refuses the names whose files would be another object's (`a//b` would be `a/b`), skips the
    /// placeholder `dir/`, and writes every other object's own bytes.
    @Test func rDownloadCopiesExactlyTheListedObjects() async throws {
        let emulator = try await ObjectCommandsTests.emulatorWithExactNames()
        defer { emulator.stop() }
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }

        let doubled = root.appendingPathComponent("doubled")
        let (status, output) = try await Self.cp(["-r", "--quiet", "gs://demo/pfx//", doubled.path], emulator)
        #expect(status == .success, "\(Self.text(output))")
        #expect(try TestSupport.files(below: doubled) == ["abs.txt": Data("doubled".utf8)])

        let whole = root.appendingPathComponent("whole")
        let (wholeStatus, wholeOutput) = try await Self.cp(
            ["-r", "--quiet", "gs://demo", whole.path], emulator, pageSize: 2)
        #expect(wholeStatus == .localFile)
        let lines = Self.text(wholeOutput).split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines.first?.hasPrefix("Copied 4 files (") == true && lines.first?.hasSuffix("; 3 failed:") == true)
        for name in ["/lead", "a//b", "pfx//abs.txt"] {
            #expect(
                lines.contains { $0.hasPrefix("  gs://demo/\(name): refused: its name has an empty segment") },
                "\(name): \(lines)")
        }
        #expect(
            try TestSupport.files(below: whole) == [
                "pfx/abs.txt": Data("single".utf8), "a/b": Data("not a//b".utf8), "dir": Data("not dir/".utf8),
                "lead": Data("not /lead".utf8),
            ])
    }

    @Test func singleCopiesNameObjectsExactly() async throws {
        let emulator = try await ObjectCommandsTests.emulatorWithExactNames()
        defer { emulator.stop() }
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("a-b.txt")
        #expect(try await Self.cp(["--quiet", "gs://demo/a//b", file.path], emulator).0 == .success)
        #expect(try Data(contentsOf: file) == Data("a-b".utf8))
        #expect(try await Self.cp(["--quiet", "gs://demo//lead", "-"], emulator) == (.success, Data("leading".utf8)))

        #expect(try await Self.cp(["--quiet", file.path, "gs://demo/up//load"], emulator).0 == .success)
        #expect(try await ObjectCommandsTests.stored("up//load", in: emulator) == "a-b")
        #expect(try await ObjectCommandsTests.stored("up/load", in: emulator) == nil)
    }

    /// A listing that names an object with a NUL byte (which no file name can hold) is refused
    /// saying so, not as a `.` or `..` segment.
    @Test func rDownloadRefusesANameWithANulByteForWhatItIs() async throws {
        let server = try TestSupport.listingServer(
            #"{"items": [{"name": "p/a\u0000b", "size": "1", "generation": "1"}]}"#)
        defer { server.stop() }
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let command = try CopyCommand(
            ["-r", "--quiet", "gs://demo/p", root.path + "/out", "--endpoint", server.baseURL.absoluteString],
            environment: [:])
        let (status, output) = try await ObjectCommandsTests.capture { await command.run(output: $0) }
        #expect(status == .localFile)
        #expect(output.contains("refused: its name holds a NUL byte"), "\(output)")
        #expect(!output.contains(". or .."), "\(output)")
    }
}
