import Foundation
import NativeTLS
import StorageTestSupport
import Testing

@testable import CloudStorage

#if canImport(Glibc)
import Glibc
#endif

/// A library must leave the host's signal dispositions alone: an upload, a download or a
/// server-side copy over `https://` (the route that reads files in this process to encrypt
/// them) changes none of `SIGBUS`, `SIGSEGV` and `SIGPIPE`. Each runs in a process of its own
/// (an exit test), so that nothing this test process did earlier can hide a change.
@Suite("Signal dispositions", .timeLimit(.minutes(10)))
struct SignalDispositionTests {
    enum Transfer: String, CaseIterable, Codable, Sendable {
        case upload, download, copy
    }

    /// The signals a transfer could be tempted to handle: a mapped file's lost page, a bad
    /// access, a write to a closed connection.
    static let signals: [(name: String, number: Int32)] = [
        ("SIGBUS", SIGBUS), ("SIGSEGV", SIGSEGV), ("SIGPIPE", SIGPIPE),
    ]

    /// Each signal's disposition: its handler's bytes and its flags.
    static func dispositions() -> [String: [UInt8]] {
        var table: [String: [UInt8]] = [:]
        for (name, number) in signals {
            var action = sigaction()
            _ = sigaction(number, nil, &action)
            table[name] =
                withUnsafeBytes(of: action.__sigaction_handler) { Array($0) }
                + withUnsafeBytes(of: action.sa_flags) { Array($0) }
        }
        return table
    }

    /// Runs `transfer` against an emulator serving TLS, in this process; throws when a disposition changed.
    static func run(_ transfer: Transfer) async throws {
        let before = dispositions()
        let emulator = try TestRoute.nativeHTTPS.startEmulator()
        defer { emulator.stop() }
        let storage = HTTPSEndToEndTests.storage(emulator, wire: .gcs, trustingTestCA: true)
        // Larger than the TLS read step, so a file goes through several reads (or, before, a map).
        let payload = TestSupport.payload(size: 3 * .mebibyte + 5, seed: 77)
        let source = try TestSupport.file(containing: payload)
        let directory = source.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        switch transfer {
        case .upload:
            _ = try await storage.reference(withPath: "signals/up.bin").putFileAsync(from: source)
        case .download:
            _ = try await storage.reference(withPath: "signals/down.bin").putDataAsync(payload)
            let destination = directory.appendingPathComponent("down.bin")
            _ = try await storage.reference(withPath: "signals/down.bin").writeAsync(toFile: destination)
            guard try Data(contentsOf: destination) == payload else { throw Changed(what: "the downloaded bytes") }
        case .copy:
            _ = try await storage.reference(withPath: "signals/from.bin").putDataAsync(payload)
            _ = try await storage.reference(withPath: "signals/from.bin").copy(
                to: storage.reference(withPath: "signals/to.bin"))
        }
        let after = dispositions()
        for (name, _) in signals where before[name] != after[name] {
            throw Changed(what: "the disposition of \(name)")
        }
    }

    struct Changed: Error, CustomStringConvertible {
        let what: String
        var description: String { "\(what) changed" }
    }

    @Test(.enabled(if: TLSLibrary.isAvailable), arguments: Transfer.allCases)
    func aTransferOverTLSLeavesSignalDispositionsAlone(transfer: Transfer) async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) { [transfer] in
            do {
                try await SignalDispositionTests.run(transfer)
            } catch {
                // Said and ended here: an error thrown out of an exit test ends its process in a trap.
                FileHandle.standardError.write(Data("\(transfer): \(error)\n".utf8))
                exit(EXIT_FAILURE)
            }
        }
        if let result, !result.standardErrorContent.isEmpty {
            Issue.record("\(transfer): \(String(decoding: result.standardErrorContent, as: UTF8.self))")
        }
    }
}
