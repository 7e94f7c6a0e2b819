import Foundation
import Testing

@testable import StorageEmulator

/// Commits `bytes` as `bucket/name` through the store's staging path.
@discardableResult
func put(_ store: any ObjectStore, _ bucket: String, _ name: String, _ bytes: [UInt8]) throws -> ObjectRecord {
    let writer = try store.makeStagingWriter(bucket: bucket)
    var checksums = Checksums()
    try bytes.withUnsafeBytes { raw in
        try writer.write(raw)
        checksums.update(raw)
    }
    var record = ObjectRecord(bucket: bucket, name: name)
    record.size = checksums.count
    record.crc32c = checksums.crc32c
    record.md5 = checksums.md5Digest
    return try store.commit(writer, record: record)
}

func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("emulator-tests-" + UUID().uuidString)
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Every file under `url`, relative.
func allFiles(under url: URL) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: url.path) else { return [] }
    return enumerator.compactMap { $0 as? String }
}

@Suite("Object stores")
struct ObjectStoreTests {
    @Test("Memory and directory stores: put, get, replace, list order, delete with generation")
    func basicOperations() throws {
        let parent = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let stores: [any ObjectStore] = [
            MemoryObjectStore(), try DirectoryObjectStore(root: parent.appendingPathComponent("root")),
        ]
        for store in stores {
            #expect(try store.createBucket("bkt"))
            #expect(try !store.createBucket("bkt"))
            let first = try put(store, "bkt", "b/x", [1, 2, 3])
            #expect(try store.readAll(first) == Data([1, 2, 3]))
            let second = try put(store, "bkt", "b/x", [4, 5])
            #expect(second.generation > first.generation)
            #expect(try store.readAll(second) == Data([4, 5]))
            #expect(throws: StoreError.self) { try store.openReader(first) }
            try put(store, "bkt", "a", [])
            try put(store, "bkt", "é", [9])
            try put(store, "bkt", "Z", [9])
            #expect(store.records(bucket: "bkt").map(\.name) == ["Z", "a", "b/x", "é"])
            #expect(try !store.delete(bucket: "bkt", name: "b/x", generation: first.generation))
            #expect(try store.delete(bucket: "bkt", name: "b/x", generation: second.generation))
            #expect(store.record(bucket: "bkt", name: "b/x") == nil)
            #expect(throws: StoreError.self) { try put(store, "missing", "x", [1]) }
            #expect(throws: StoreError.self) { try store.createBucket("../etc") }
        }
    }

    @Test(
        "Invalid object names are refused by every store", arguments: [".", "..", "", "a\u{0}b", "line\nfeed", "cr\r"])
    func invalidNames(_ name: String) throws {
        let parent = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        for store in [MemoryObjectStore(), try DirectoryObjectStore(root: parent), DiscardObjectStore()]
            as [any ObjectStore]
        {
            _ = try store.createBucket("bkt")
            #expect(throws: StoreError.self) { try put(store, "bkt", name, [1]) }
        }
        #expect(throws: StoreError.self) { try NameRules.validateObjectName(String(repeating: "x", count: 1025)) }
    }

    @Test(
        "Directory store: hostile names stay inside the root and round-trip",
        arguments: [
            "../x", "../../../../../../tmp/evil", "/abs", "/etc/passwd", "a/../../b", "./.", "a/./b", ".hidden",
            "%2e%2e/x", "back\\slash\\..\\..", "o-a.json", "h-deadbeef", "bucket.json", ".tmp-123",
            String(repeating: "long/", count: 200), String(repeating: "é", count: 500),
        ])
    func traversal(_ name: String) throws {
        let parent = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let root = parent.appendingPathComponent("root")
        let store = try DirectoryObjectStore(root: root)
        _ = try store.createBucket("bkt")
        let bytes = testBytes(1000)
        let record = try put(store, "bkt", name, bytes)
        #expect(try store.readAll(record) == Data(bytes))
        // Only the root exists in the parent; under it, one bucket directory holding flat, safe file names.
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path) == ["root"])
        let files = allFiles(under: root).sorted()
        #expect(files.count == 4, "\(files)")
        for file in files {
            let components = file.split(separator: "/")
            #expect(components.count <= 2)
            #expect(
                components.allSatisfy {
                    $0 != ".." && $0 != "." && SafeFileName.isSafe(String($0)) || $0 == "bucket.json"
                }, "\(file)")
            #expect(components.allSatisfy { $0.utf8.count <= 255 })
        }
        // Reopening the directory finds the object under its real name.
        let reopened = try DirectoryObjectStore(root: root)
        #expect(reopened.record(bucket: "bkt", name: name) == record)
        #expect(reopened.records(bucket: "bkt").map(\.name) == [name])
        #expect(try store.delete(bucket: "bkt", name: name, generation: nil))
        #expect(allFiles(under: root).count == 2)
    }

    @Test("Safe file names are one-to-one, and long names do not collide")
    func safeNames() {
        let names = [
            "a", "a%41", "aA", "a.b", "a%2Eb", "a/b", "a%2Fb", String(repeating: "x", count: 300),
            String(repeating: "x", count: 301), ".", "..", "...",
        ]
        let encoded = names.map(SafeFileName.object)
        #expect(Set(encoded).count == names.count)
        #expect(encoded.allSatisfy { !$0.contains("/") && !$0.contains(".") && $0.utf8.count <= 200 })
    }

    @Test("Directory store: staged bytes are invisible until commit, then appear all at once")
    func atomicCommit() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try DirectoryObjectStore(root: root)
        _ = try store.createBucket("bkt")
        let old = try put(store, "bkt", "obj", [1, 1, 1])
        let writer = try store.makeStagingWriter(bucket: "bkt")
        let half = testBytes(500_000)
        try half.withUnsafeBytes { try writer.write($0) }
        // Mid-upload: the old version is what everyone sees, in full.
        #expect(store.record(bucket: "bkt", name: "obj") == old)
        #expect(try store.readAll(old) == Data([1, 1, 1]))
        let reader = try store.openReader(old)
        try half.withUnsafeBytes { try writer.write($0) }
        var record = ObjectRecord(bucket: "bkt", name: "obj")
        record.size = writer.size
        let new = try store.commit(writer, record: record)
        #expect(try store.readAll(new).count == 1_000_000)
        // A reader opened before the commit keeps reading the old bytes.
        var buffer = [UInt8](repeating: 0, count: 10)
        let count = try buffer.withUnsafeMutableBytes { try reader.read(at: 0, into: $0) }
        #expect(Array(buffer[0..<count]) == [1, 1, 1])
        reader.close()
        // No staging files are left behind.
        #expect(!allFiles(under: root).contains { $0.contains(".tmp-") })
        // A discarded staging file disappears.
        let abandoned = try store.makeStagingWriter(bucket: "bkt")
        try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try abandoned.write($0) }
        #expect(allFiles(under: root).contains { $0.contains(".tmp-") })
        abandoned.discard()
        #expect(!allFiles(under: root).contains { $0.contains(".tmp-") })
    }

    @Test("Directory store: concurrent readers never see a partial object while writers replace it")
    func concurrentReplace() async throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try DirectoryObjectStore(root: root)
        _ = try store.createBucket("bkt")
        let versions = (0..<4).map { testBytes(300_000, seed: UInt8($0)) }
        try put(store, "bkt", "obj", versions[0])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 1...20 { try put(store, "bkt", "obj", versions[round % 4]) }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<40 {
                        guard let record = store.record(bucket: "bkt", name: "obj") else { continue }
                        guard let data = try? store.readAll(record) else { continue }  // replaced meanwhile
                        #expect(versions.contains { Data($0) == data })
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("Discard store: counts bytes, keeps nothing, objects are not found")
    func discard() throws {
        let store = DiscardObjectStore()
        _ = try store.createBucket("bkt")
        let record = try put(store, "bkt", "obj", testBytes(1234))
        #expect(record.size == 1234)
        #expect(record.generation > 0)
        #expect(store.bytesDiscarded == 1234)
        #expect(store.objectsDiscarded == 1)
        #expect(store.record(bucket: "bkt", name: "obj") == nil)
        #expect(store.records(bucket: "bkt").isEmpty)
        #expect(throws: StoreError.self) { try store.openReader(record) }
    }
}
