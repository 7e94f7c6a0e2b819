import Foundation
import Synchronization
import Testing

@testable import StorageEmulator

/// Complete and Abort of one XML multipart upload, racing: one of them wins, never both.
@Suite("XML API multipart uploads: Complete and Abort serialised")
struct XMLMultipartRaceTests {
    typealias Upload = XMLMultipartUploadTests

    /// Runs `first` and `second` at once on two threads; their statuses.
    static func race(_ first: @escaping @Sendable () -> Int, _ second: @escaping @Sendable () -> Int) -> (Int, Int) {
        let results = ResultPair()
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            if index == 0 { results.set(0, first()) } else { results.set(1, second()) }
        }
        return results.both
    }

    /// An upload of two parts whose Complete copies (part 2 sent first): a Complete that takes a while.
    static func prepared(_ harness: Harness, _ name: String) throws -> (id: String, completion: [UInt8]) {
        let id = try Upload.initiate(harness, name)
        let tag2 = Upload.putPart(harness, name, id, 2, testBytes(128 * 1024, seed: 2))
        let tag1 = Upload.putPart(harness, name, id, 1, testBytes(1024 * 1024, seed: 1))
        return (id, Upload.completion([(1, tag1), (2, tag2)]))
    }

    @Test("Abort racing Complete: one wins; an Abort that succeeded leaves no object")
    func abortDuringComplete() throws {
        let harness = try Harness { $0.minimumPartSize = 4 }
        for round in 0..<30 {
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
        for round in 0..<30 {
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
    func set(_ index: Int, _ value: Int) { values.withLock { $0[index] = value } }
    var both: (Int, Int) { values.withLock { ($0[0], $0[1]) } }
}
