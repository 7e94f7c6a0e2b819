import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// Where a multipart upload's parts are staged: each at its place in the upload's shared
/// writer when it can be, so that a Complete of parts 1…k commits that writer as it lies; a
/// copy otherwise. Whatever the layout, the object is the named parts' bytes in order.
@Suite("XML API multipart uploads: parts placed where they belong")
struct MultipartPlacementTests {
    typealias Upload = XMLMultipartUploadTests

    /// The backings that stage bytes: memory and a directory (a fresh one per call).
    static func harnesses() throws -> [(String, Harness, URL?)] {
        let directory = temporaryDirectory()
        return [
            ("memory", try Harness { $0.minimumPartSize = 4 }, nil),
            (
                "directory", try Harness(store: try DirectoryObjectStore(root: directory)) { $0.minimumPartSize = 4 },
                directory
            ),
        ]
    }

    /// Staging files left in the bucket's directory (none once every upload has ended).
    static func stagingFiles(_ directory: URL?) -> [String] {
        guard let directory else { return [] }
        let bucket = directory.appendingPathComponent("b-bkt")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: bucket.path)) ?? []
        return names.filter { $0.hasPrefix(".tmp-") }
    }

    /// Sends `parts` (number, bytes) in the order given, completes with `named`, and returns
    /// the Complete's status.
    static func upload(
        _ harness: Harness, _ name: String, parts: [(Int, [UInt8])], named: [Int]
    ) throws -> Int {
        let id = try Upload.initiate(harness, name)
        var tags: [Int: String] = [:]
        for (number, bytes) in parts { tags[number] = Upload.putPart(harness, name, id, number, bytes) }
        let completion = Upload.completion(named.map { ($0, tags[$0] ?? "") })
        return harness.send("POST", "/bkt/\(name)?uploadId=\(id)", body: completion).status ?? 0
    }

    @Test("parts 1…k of equal length but the last, sent in any order, become the object as they lie: no copy")
    func assembledInPlace() throws {
        for (kind, harness, directory) in try Self.harnesses() {
            defer { directory.map { try? FileManager.default.removeItem(at: $0) } }
            let (one, two, three) = (testBytes(8, seed: 1), testBytes(8, seed: 2), testBytes(5, seed: 3))
            let status = try Self.upload(harness, "o", parts: [(2, two), (3, three), (1, one)], named: [1, 2, 3])
            #expect(status == 200, "\(kind)")
            #expect(harness.object("bkt", "o") == Data(one + two + three), "\(kind)")
            #expect(harness.app.multipartBytesCopied == 0, "\(kind)")
            // A Complete of 1…k while a part after k is stored: cut off, still no copy.
            let status2 = try Self.upload(harness, "p", parts: [(1, one), (2, two), (3, three)], named: [1, 2])
            #expect(status2 == 200, "\(kind)")
            #expect(harness.object("bkt", "p") == Data(one + two), "\(kind)")
            #expect(harness.app.multipartBytesCopied == 0, "\(kind)")
            #expect(Self.stagingFiles(directory).isEmpty, "\(kind): \(Self.stagingFiles(directory))")
        }
    }

    @Test("a short part first, a part named out of the layout, a part sent again: copied, exact bytes")
    func copiedWhenNotInPlace() throws {
        let (one, two, three) = (testBytes(8, seed: 1), testBytes(8, seed: 2), testBytes(5, seed: 3))
        let cases: [(String, [(Int, [UInt8])], [Int], [UInt8])] = [
            ("the short last part begun first", [(3, three), (1, one), (2, two)], [1, 2, 3], one + two + three),
            ("a Complete that leaves part 2 out", [(1, one), (2, two), (3, three)], [1, 3], one + three),
            ("parts numbered from 2", [(2, one), (3, three)], [2, 3], one + three),
            (
                "part 1 sent again with other bytes", [(1, two), (2, two), (1, one), (3, three)], [1, 2, 3],
                one + two + three
            ),
        ]
        for (kind, harness, directory) in try Self.harnesses() {
            defer { directory.map { try? FileManager.default.removeItem(at: $0) } }
            for (index, (label, parts, named, expected)) in cases.enumerated() {
                let before = harness.app.multipartBytesCopied
                let status = try Self.upload(harness, "o\(index)", parts: parts, named: named)
                #expect(status == 200, "\(kind): \(label)")
                #expect(harness.object("bkt", "o\(index)") == Data(expected), "\(kind): \(label)")
                let record = try #require(harness.store.record(bucket: "bkt", name: "o\(index)"))
                #expect(record.crc32c == crc32cOf(expected), "\(kind): \(label)")
                #expect(harness.app.multipartBytesCopied - before == Int64(expected.count), "\(kind): \(label)")
            }
            #expect(Self.stagingFiles(directory).isEmpty, "\(kind): \(Self.stagingFiles(directory))")
        }
    }

    @Test("a part cut off mid-body frees its place: sent again, it lands there and nothing is copied")
    func brokenPartResent() throws {
        for (kind, harness, directory) in try Self.harnesses() {
            defer { directory.map { try? FileManager.default.removeItem(at: $0) } }
            let id = try Upload.initiate(harness, "o")
            let (one, two) = (testBytes(8, seed: 1), testBytes(6, seed: 2))
            let tag1 = Upload.putPart(harness, "o", id, 1, one)
            let garbage = testBytes(6, seed: 9)
            let broken = harness.send("PUT", "/bkt/o?partNumber=2&uploadId=\(id)", body: garbage, breakAfter: 4)
            #expect(broken.status != 200, "\(kind)")
            let tag2 = Upload.putPart(harness, "o", id, 2, two)
            let done = harness.send("POST", "/bkt/o?uploadId=\(id)", body: Upload.completion([(1, tag1), (2, tag2)]))
            #expect(done.status == 200, "\(kind)")
            #expect(harness.object("bkt", "o") == Data(one + two), "\(kind)")
            #expect(harness.app.multipartBytesCopied == 0, "\(kind)")
        }
    }

    @Test("Abort leaves no staging file, placed parts and parts of their own alike")
    func abortLeavesNothing() throws {
        for (kind, harness, directory) in try Self.harnesses() {
            defer { directory.map { try? FileManager.default.removeItem(at: $0) } }
            let id = try Upload.initiate(harness, "gone")
            _ = Upload.putPart(harness, "gone", id, 1, testBytes(8, seed: 1))
            _ = Upload.putPart(harness, "gone", id, 1, testBytes(8, seed: 2))
            _ = Upload.putPart(harness, "gone", id, 2, testBytes(9, seed: 3))
            #expect(harness.send("DELETE", "/bkt/gone?uploadId=\(id)").status == 204, "\(kind)")
            #expect(Self.stagingFiles(directory).isEmpty, "\(kind): \(Self.stagingFiles(directory))")
        }
    }

    @Test("claims: one attempt per place, none over a stored placed part, none longer than the stride")
    func claims() throws {
        let table = MultipartUploadTable()
        let upload = table.initiate(
            bucket: "bkt", name: "o", attributes: ObjectAttributes(), shared: MemoryStagingWriter(), now: Date())
        #expect(table.claimPlace(for: 2, length: nil, in: upload.id) == nil, "a chunked part has no known length")
        #expect(table.claimPlace(for: 2, length: 10, in: upload.id) == 10, "the first claim sets the stride")
        #expect(table.claimPlace(for: 2, length: 10, in: upload.id) == nil, "held by an attempt")
        #expect(table.claimPlace(for: 3, length: 11, in: upload.id) == nil, "longer than the stride")
        #expect(table.claimPlace(for: 3, length: 4, in: upload.id) == 20, "a shorter one fits at its place")
        table.release(3, in: upload.id)
        #expect(table.claimPlace(for: 3, length: 10, in: upload.id) == 20, "released, free again")
        let placed = MultipartUploadTable.Part(
            writer: upload.shared, offset: 10, size: 10, isPlaced: true, etag: "\"a\"", crc32c: 0, lastModified: Date())
        #expect(table.store(placed, number: 2, in: upload.id))
        #expect(table.claimPlace(for: 2, length: 10, in: upload.id) == nil, "held by the stored part")
        let own = MultipartUploadTable.Part(
            writer: MemoryStagingWriter(), offset: 0, size: 10, isPlaced: false, etag: "\"b\"", crc32c: 0,
            lastModified: Date())
        #expect(table.store(own, number: 2, in: upload.id))
        #expect(table.claimPlace(for: 2, length: 10, in: upload.id) == 10, "replaced by a part of its own: free")
        #expect(table.remove(upload.id, if: { _ in true }) == nil, "not taken while attempts write")
        table.release(2, in: upload.id)
        table.release(3, in: upload.id)
        #expect(table.remove(upload.id, if: { _ in true })?.id == upload.id)
        #expect(table.claimPlace(for: 1, length: 10, in: upload.id) == nil, "the upload is gone")
    }
}

private func crc32cOf(_ bytes: [UInt8]) -> UInt32 {
    var checksums = Checksums(computingMD5: false)
    bytes.withUnsafeBytes { checksums.update($0) }
    return checksums.crc32c
}
