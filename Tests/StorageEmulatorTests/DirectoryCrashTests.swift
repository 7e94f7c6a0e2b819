import FakeGCSServer
import Foundation
import Synchronization
import Testing

@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory-backed emulator killed with SIGKILL while two clients overwrite objects, over
/// many rounds: after each restart on the same directory every version's bytes are whole and
/// match its record, and no acknowledged write of the versioned bucket is missing.
///
/// The child is the `cloud-storage` executable built beside the test bundle
/// (`cloud-storage emulator --dir`). `EMULATOR_CRASH_ROUNDS` sets the rounds (20 by default).
@Suite("Directory store: kill -9 during overwrites", .serialized, .timeLimit(.minutes(20)))
struct DirectoryCrashTests {
    static let buckets = ["plain-bkt", "versioned-bkt"]
    static let names = ["a", "b"]

    static var rounds: Int {
        ProcessInfo.processInfo.environment["EMULATOR_CRASH_ROUNDS"].flatMap { Int($0) } ?? 20
    }

    /// The bytes of one write: the seed (8 bytes, little-endian), then bytes generated from it;
    /// 1,000 to 13,000 bytes long, so versions differ in size too.
    static func content(seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        let count = 1000 + Int(generator.next() % 12_000)
        var bytes = withUnsafeBytes(of: seed.littleEndian) { Array($0) }
        while bytes.count < count { bytes.append(UInt8(truncatingIfNeeded: generator.next())) }
        return bytes
    }

    /// Whether `data` is exactly one write's bytes (never a mix of two, never cut short).
    static func isWhole(_ data: Data) -> Bool {
        guard data.count >= 8 else { return false }
        let seed = data.prefix(8).reversed().reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
        return Data(content(seed: seed)) == data
    }

    static var toolExecutable: URL {
        get throws {
            let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            let tool = bundle.deletingLastPathComponent().appendingPathComponent("cloud-storage")
            try #require(FileManager.default.isExecutableFile(atPath: tool.path), "no \(tool.path); build it first")
            return tool
        }
    }

    /// Starts `cloud-storage emulator --dir root` on a free port; the child and its port.
    static func startEmulator(_ root: URL, log: URL) throws -> (ChildProcess, Int) {
        let child = try ChildProcess(
            try toolExecutable.path, ["emulator", "--dir", root.path, "--host", "127.0.0.1", "--port", "0"],
            environment: ["PATH": "/usr/bin:/bin"], output: .file(log.path), errors: .standardOutput)
        let marker = "listening on http://127.0.0.1:"
        // Not a verdict on speed: only a bound for a child that never says where it listens.
        for _ in 0..<6000 {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let found = text.range(of: marker) {
                let digits = text[found.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits),
                    text[found.upperBound...].dropFirst(digits.count).first == "/"
                        || text[found.upperBound...].dropFirst(digits.count).first == "\n"
                {
                    return (child, port)
                }
            }
            guard child.isRunning else { break }
            usleep(10_000)
        }
        child.send(SIGKILL)
        child.waitUntilExit()
        Issue.record("the emulator did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        throw CancellationError()
    }

    /// Overwrites the objects until a request fails (the emulator died); the versioned bucket's
    /// acknowledged seeds go into `acknowledged`.
    static func overwrite(port: Int, writer: UInt64, round: Int, ledger: CrashRoundLedger) {
        var counter: UInt64 = 0
        while true {
            counter += 1
            let seed = UInt64(round) << 32 | writer << 24 | counter
            let bucket = buckets[Int(seed % 2)]
            let name = names[Int((seed / 2) % 2)]
            guard
                let response = try? SessionPersistenceTests.request(
                    port, "POST", "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=\(name)",
                    body: content(seed: seed)),
                response.status == 200
            else { return }
            ledger.writes.add(1, ordering: .relaxed)
            if bucket == "versioned-bkt" {
                ledger.acknowledged.withLock { _ = $0.insert(seed) }
            } else {
                ledger.plainNames.withLock { _ = $0.insert(name) }
            }
        }
    }

    /// Opens the directory as a new emulator would and checks every version it keeps; the
    /// versioned bucket's seeds.
    static func verify(_ root: URL, round: Int) throws -> Set<UInt64> {
        let store = try DirectoryObjectStore(root: root)
        var seeds: Set<UInt64> = []
        for bucket in buckets {
            var records: [ObjectRecord] = []
            store.scan(bucket: bucket, from: ObjectKey(""), versions: .all(after: nil)) { record in
                records.append(record)
                return .next
            }
            for record in records {
                let data = try store.readAll(record)
                var checksums = Checksums(computingMD5: false)
                data.withUnsafeBytes { checksums.update($0) }
                #expect(Int64(data.count) == record.size, "round \(round): \(bucket)/\(record.name)")
                #expect(checksums.crc32c == record.crc32c, "round \(round): \(bucket)/\(record.name)")
                #expect(isWhole(data), "round \(round): \(bucket)/\(record.name) is not one write's bytes")
                if bucket == "versioned-bkt", data.count >= 8 {
                    seeds.insert(data.prefix(8).reversed().reduce(UInt64(0)) { ($0 << 8) | UInt64($1) })
                }
            }
            // Nothing but the bucket's record and each version's two files is left.
            let directory = root.appendingPathComponent(SafeFileName.bucket(bucket))
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(files.count == 1 + 2 * records.count, "round \(round): \(files.sorted())")
        }
        return seeds
    }

    @Test("after kill -9 at random points of overwrites, every object is one whole version, nothing acknowledged lost")
    func killDuringOverwrites() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let log = root.deletingLastPathComponent().appendingPathComponent("crash-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        do {
            let (child, port) = try Self.startEmulator(root, log: log)
            defer {
                child.send(SIGKILL)
                child.waitUntilExit()
            }
            for bucket in Self.buckets {
                let body = "{\"name\":\"\(bucket)\",\"versioning\":{\"enabled\":\(bucket == "versioned-bkt")}}"
                let created = try SessionPersistenceTests.request(
                    port, "POST", "/storage/v1/b?project=p", headers: [("Content-Type", "application/json")],
                    body: Array(body.utf8))
                try #require(created.status == 200)
            }
        }
        let ledger = CrashRoundLedger()
        var killedDuringWrites = 0
        for round in 1...Self.rounds {
            let (child, port) = try Self.startEmulator(root, log: log)
            ledger.writes.store(0, ordering: .relaxed)
            let group = DispatchGroup()
            for writer in 0..<2 {
                DispatchQueue.global().async(group: group) {
                    Self.overwrite(port: port, writer: UInt64(writer), round: round, ledger: ledger)
                }
            }
            // At a random moment after the writes began: the kill lands somewhere in a request,
            // often in a commit (the emulator does little else).
            while ledger.writes.load(ordering: .relaxed) == 0, child.isRunning { usleep(200) }
            usleep(UInt32.random(in: 0...30_000))
            child.send(SIGKILL)
            child.waitUntilExit()
            group.wait()
            if ledger.writes.load(ordering: .relaxed) > 0 { killedDuringWrites += 1 }
            let kept = try Self.verify(root, round: round)
            let lost = ledger.acknowledged.withLock { $0.subtracting(kept) }
            #expect(lost.isEmpty, "round \(round): acknowledged writes lost: \(lost.count)")
            // Every name written to once is there for good, in the plain bucket too.
            let store = try DirectoryObjectStore(root: root)
            for name in ledger.plainNames.withLock({ $0 }) {
                #expect(store.record(bucket: "plain-bkt", name: name) != nil, "round \(round): plain-bkt/\(name) lost")
            }
        }
        #expect(killedDuringWrites == Self.rounds)
    }
}

/// What the writers of a round did: their successful writes, and the versioned bucket's acknowledged seeds.
final class CrashRoundLedger: Sendable {
    let writes = Atomic<Int>(0)
    let acknowledged = Mutex<Set<UInt64>>([])
    let plainNames = Mutex<Set<String>>([])
}
