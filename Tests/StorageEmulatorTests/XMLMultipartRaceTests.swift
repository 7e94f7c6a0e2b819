import Foundation
import Synchronization
import Testing

@testable import StorageEmulator

/// Complete and Abort of one XML multipart upload, racing: one of them wins, never both.
@Suite("XML API multipart uploads: Complete and Abort serialised")
struct XMLMultipartRaceTests {
    typealias Upload = XMLMultipartUploadTests

    /// Runs `first` and `second` at once on two threads of their own, released together; their statuses.
    static func race(_ first: @escaping @Sendable () -> Int, _ second: @escaping @Sendable () -> Int) -> (Int, Int) {
        let results = ResultPair()
        let done = DispatchGroup()
        for (index, work) in [first, second].enumerated() {
            done.enter()
            Thread {
                results.arrive()
                while results.arrived < 2 {}
                results.set(index, work())
                done.leave()
            }.start()
        }
        done.wait()
        return results.both
    }

    @Test("the table: while a Complete runs, a second Complete and an Abort find no upload; a failed one hands it back")
    func table() {
        let table = MultipartUploadTable()
        let upload = table.initiate(
            bucket: "bkt", name: "o", attributes: ObjectAttributes(), shared: MemoryStagingWriter(), now: Date())
        #expect(table.beginCompletion(upload.id)?.id == upload.id)
        #expect(table.beginCompletion(upload.id) == nil, "one Complete at a time")
        #expect(table.abort(upload.id) == nil, "the Complete wins over an Abort")
        #expect(table.claimPlace(for: 1, length: 10, in: upload.id) == nil, "no part placed while completing")
        table.endCompletion(upload.id)
        #expect(table.abort(upload.id)?.id == upload.id, "a failed Complete hands the upload back")
        #expect(table.beginCompletion(upload.id) == nil, "aborted: gone")
    }

    /// An upload of two parts whose Complete copies (part 2 sent first): a Complete that takes a while.
    static func prepared(_ harness: Harness, _ name: String) throws -> (id: String, completion: [UInt8]) {
        let id = try Upload.initiate(harness, name)
        let tag2 = Upload.putPart(harness, name, id, 2, testBytes(128 * 1024, seed: 2))
        let tag1 = Upload.putPart(harness, name, id, 1, testBytes(4 * 1024 * 1024, seed: 1))
        return (id, Upload.completion([(1, tag1), (2, tag2)]))
    }

    @Test("Abort racing Complete: one wins; an Abort that succeeded leaves no object")
    func abortDuringComplete() throws {
        let harness = try Harness { $0.minimumPartSize = 4 }
        for round in 0..<20 {
            let name = "o\(round)"
            let (id, completion) = try Self.prepared(harness, name)
            let (completed, aborted) = Self.race(
                { harness.send("POST", "/bkt/\(name)?uploadId=\(id)", body: completion).status ?? 0 },
                { harness.send("DELETE", "/bkt/\(name)?uploadId=\(id)").status ?? 0 })
            #expect(
                [completed, aborted].sorted() == [200, 404] || [completed, aborted] == [404, 204], "round \(round)")
            #expect((harness.object("bkt", name) != nil) == (completed == 200), "round \(round)")
        }
        #expect(harness.app.multipartUploadsInProgress == 0)
    }

    @Test("two Completes racing: one 200, the other NoSuchUpload")
    func twoCompletes() throws {
        let harness = try Harness { $0.minimumPartSize = 4 }
        for round in 0..<20 {
            let name = "o\(round)"
            let (id, completion) = try Self.prepared(harness, name)
            let complete = { @Sendable in
                harness.send("POST", "/bkt/\(name)?uploadId=\(id)", body: completion).status ?? 0
            }
            let (first, second) = Self.race(complete, complete)
            #expect([first, second].sorted() == [200, 404], "round \(round)")
        }
    }

    @Test(
        "part numbers are decimal digits, 1–10000",
        arguments: ["%2B1", "+1", "-1", "0", "10001", "1.0", "0x1", "%201", "99999999999999999999999"])
    func strictPartNumbers(text: String) throws {
        let harness = try Harness()
        let id = try Upload.initiate(harness, "o")
        let response = harness.send("PUT", "/bkt/o?partNumber=\(text)&uploadId=\(id)", body: [1, 2, 3])
        #expect(response.status == 400)
        let completion = Array(
            "<CompleteMultipartUpload><Part><PartNumber>\(text)</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>"
                .utf8)
        #expect(harness.send("POST", "/bkt/o?uploadId=\(id)", body: completion).status == 400)
    }
}

/// Two results written by two threads.
private final class ResultPair: Sendable {
    private let values = Mutex<[Int]>([0, 0])
    private let count = Atomic<Int>(0)
    func arrive() { count.add(1, ordering: .sequentiallyConsistent) }
    var arrived: Int { count.load(ordering: .sequentiallyConsistent) }
    func set(_ index: Int, _ value: Int) { values.withLock { $0[index] = value } }
    var both: (Int, Int) { values.withLock { ($0[0], $0[1]) } }
}
