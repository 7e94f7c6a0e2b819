import CloudStorage
import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

/// `ls`, `stat`, `cat` and `rm` address object names exactly (`gs://b/a//b` is `a//b`), and the
/// recursive walks act on exactly the names listed, and end, whatever the names.
extension ObjectCommandsTests {
    /// An emulator holding the names of `TestSupport.exactNames`.
    static func emulatorWithExactNames(directory: URL? = nil) async throws -> StorageEmulator {
        let emulator = try Self.emulator { configuration in
            if let directory { configuration.backing = .directory(directory) }
        }
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        for (name, bytes) in TestSupport.exactNames {
            _ = try await storage.reference(objectName: name).putDataAsync(Self.bytes(bytes))
        }
        return emulator
    }

    /// The bytes of the object named exactly `name`, or nil when there is none.
    static func stored(_ name: String, in emulator: StorageEmulator) async throws -> String? {
        let storage = Storage(bucket: "demo", endpoint: .gcs(emulator.baseURL))
        do {
            return String(decoding: try await storage.reference(objectName: name).data(maxSize: 100), as: UTF8.self)
        } catch  where error.code == .objectNotFound {
            return nil
        }
    }

    @Test(arguments: [false, true])
    func lsAndRecursiveWalksListEveryNameExactlyAndEnd(directory: Bool) async throws {
        let root = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let emulator = try await Self.emulatorWithExactNames(directory: directory ? root : nil)
        defer { emulator.stop() }

        // The walk descends into `/`, `a//` and `pfx//` once each, and lists each object once.
        let (status, listing) = try await Self.run(["ls", "-r", "gs://demo"], emulator, pageSize: 2)
        #expect(status == .success)
        let names = TestSupport.exactNames.map(\.name).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(listing == names.map { "gs://demo/\($0)\n" }.joined())

        // One level: the prefix `/` prints as gs://demo//, the placeholder dir/ under dir/.
        let (_, top) = try await Self.run(["ls", "gs://demo"], emulator)
        #expect(
            top == "gs://demo//\ngs://demo/a/\ngs://demo/dir\ngs://demo/dir/\ngs://demo/lead\ngs://demo/pfx/\n")
        #expect(try await Self.run(["ls", "gs://demo/pfx//"], emulator).1 == "gs://demo/pfx//abs.txt\n")
        #expect(try await Self.run(["ls", "gs://demo/pfx/"], emulator).1 == "gs://demo/pfx//\ngs://demo/pfx/abs.txt\n")
        #expect(try await Self.run(["ls", "-r", "gs://demo/dir/"], emulator).1 == "gs://demo/dir/\n")
        #expect(try await Self.run(["ls", "gs://demo//"], emulator).1 == "gs://demo//lead\n")
    }

    @Test func statAndCatReadTheObjectNamedNotItsNeighbour() async throws {
        let emulator = try await Self.emulatorWithExactNames()
        defer { emulator.stop() }
        for (name, bytes) in TestSupport.exactNames {
            #expect(try await Self.run(["cat", "gs://demo/\(name)"], emulator) == (.success, bytes), "\(name)")
            let (status, block) = try await Self.run(["stat", "gs://demo/\(name)"], emulator)
            #expect(status == .success)
            #expect(block.hasPrefix("gs://demo/\(name):\n"), "\(block)")
            #expect(block.contains("    Size:                \(bytes.utf8.count)\n"), "\(name)")
        }
    }

    /// `rm -r gs://demo/pfx//` deletes the names that start with `pfx//`: `pfx/abs.txt` stays.
    /// `rm gs://demo/dir/` deletes the placeholder, not `dir`; `rm -r gs://demo` empties the bucket.
    @Test func rmDeletesExactlyTheNamesListedAndEnds() async throws {
        let emulator = try await Self.emulatorWithExactNames()
        defer { emulator.stop() }
        let (doubled, removed) = try await Self.run(["rm", "-r", "gs://demo/pfx//"], emulator)
        #expect(doubled == .success)
        #expect(removed == "Removed gs://demo/pfx//abs.txt\n")
        #expect(try await Self.stored("pfx/abs.txt", in: emulator) == "single")

        #expect(try await Self.run(["rm", "gs://demo/dir/"], emulator) == (.success, "Removed gs://demo/dir/\n"))
        #expect(try await Self.stored("dir", in: emulator) == "not dir/")
        #expect(try await Self.run(["rm", "gs://demo//lead", "gs://demo/a//b"], emulator).0 == .success)
        #expect(try await Self.stored("lead", in: emulator) == "not /lead")
        #expect(try await Self.stored("a/b", in: emulator) == "not a//b")

        let (all, output) = try await Self.run(["rm", "-r", "--quiet", "gs://demo"], emulator, pageSize: 2)
        #expect(all == .success)
        #expect(output == "Removed 4 objects\n")
        #expect(try await Self.run(["ls", "-r", "gs://demo"], emulator) == (.success, ""))
    }

    /// A server that answers a listing of `x/` with the prefix `x/` again: the walk stops with a
    /// protocol error after that one listing instead of asking for it for ever.
    @Test func aRecursiveWalkStopsAtAServerThatListsThePrefixAskedFor() async throws {
        let server = try TestSupport.listingServer(#"{"prefixes": ["x/"]}"#)
        defer { server.stop() }
        let command = try ListCommand(
            ["-r", "gs://demo", "--endpoint", server.baseURL.absoluteString], environment: [:])
        let (status, output) = try await Self.capture { await command.run(output: $0) }
        #expect(status == .failure)
        #expect(output.isEmpty)
        let remove = try RemoveCommand(
            ["-r", "gs://demo/x/", "--endpoint", server.baseURL.absoluteString], environment: [:])
        #expect(try await Self.capture { await remove.run(output: $0) }.0 == .failure)
    }
}
