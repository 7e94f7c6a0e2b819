import FakeGCSServer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How tests start other programs: only through ``ChildProcess`` (posix_spawn), which hands the
/// child the three descriptors asked for and nothing else, and reports exits and signals apart.
@Suite("Child processes of the tests", .timeLimit(.minutes(10)))
struct ChildProcessTests {
    /// The repository's root folder.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Foundation's `Process.run()` reads past a buffer while it lists `/proc/self/fd`
    /// (swiftlang/swift-corelibs-foundation#5472); beside the suite's thousand-odd open
    /// descriptors that crashed the whole test process on CI. No source or test may use it.
    @Test func nothingStartsAProcessThroughFoundation() throws {
        var checked = 0
        for folder in ["Sources", "Tests", "Benchmarks"] {
            let url = Self.root.appendingPathComponent(folder)
            guard let files = FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files
            where file.pathExtension == "swift" && file.lastPathComponent != "ChildProcessTests.swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                for pattern in ["= Process()", ".executableURL", "launchedProcess("] {
                    #expect(!text.contains(pattern), "\(file.path) uses Foundation's Process (\(pattern))")
                }
                checked += 1
            }
        }
        #expect(checked > 200)
    }

    /// A descriptor this process opened without close-on-exec does not reach the child.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd")))
    func theChildInheritsOnlyItsStandardDescriptors() async throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { fds.forEach { close($0) } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("fds.txt").path
        // The shell lists its own descriptors: the three standard ones (and none of ours).
        let child = try ChildProcess(
            "/bin/sh", ["-c", "for fd in /proc/$$/fd/*; do echo ${fd##*/}; done"], environment: [:],
            output: .file(output), errors: .standardOutput)
        await child.exited()
        #expect(child.terminationReason == .exit && child.terminationStatus == 0)
        let listed = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").compactMap { Int32($0) }
        #expect(!listed.contains(fds[0]) && !listed.contains(fds[1]), "\(listed)")
        #expect(Set(listed).isSuperset(of: [0, 1, 2]), "\(listed)")
    }

    /// An exit status and a signal are told apart, and a signal after the end reaches nobody.
    @Test func exitsAndSignalsAreToldApart() async throws {
        let exits = try ChildProcess("/bin/sh", ["-c", "exit 7"], environment: [:])
        await exits.exited()
        #expect(exits.terminationReason == .exit && exits.terminationStatus == 7)
        exits.send(SIGKILL)

        let killed = try ChildProcess("/bin/sh", ["-c", "kill -TERM $$; sleep 5"], environment: [:])
        await killed.exited()
        #expect(killed.terminationReason == .uncaughtSignal && killed.terminationStatus == SIGTERM)
        #expect(!killed.isRunning)
    }
}
