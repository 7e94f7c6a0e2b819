import Foundation
import Testing

@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// XML API multipart uploads cost what their parts hold, whatever the part numbers, and count
/// against `--max-sessions` and the session lifetime with resumable sessions.
@Suite("XML API multipart uploads: bounded")
struct MultipartBoundsTests {
    typealias Upload = XMLMultipartUploadTests

    @Test("a 1-byte part 10000 after a 32 KiB part 1 costs its byte, not the gap, in memory and on disk")
    func farPartCostsItsBytes() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        for (kind, store) in [
            ("memory", MemoryObjectStore() as any ObjectStore), ("directory", try DirectoryObjectStore(root: root)),
        ] {
            let harness = try Harness(store: store) { $0.minimumPartSize = 4 }
            let id = try Upload.initiate(harness, "o")
            let one = testBytes(32 * 1024, seed: 1)
            let tag1 = Upload.putPart(harness, "o", id, 1, one)
            let tag2 = Upload.putPart(harness, "o", id, 10_000, [42])
            let upload = try #require(harness.app.multipartUploads.upload(id))
            if let memory = upload.shared as? MemoryStagingWriter {
                #expect(memory.bytesHeld <= Int64(one.count) + 1, "\(kind)")
            } else {
                let files = allFiles(under: root).filter { $0.contains(".tmp-") }
                for file in files {
                    let path = root.appendingPathComponent(file).path
                    // The disk the file takes (a hole takes none), not its length.
                    var info = stat()
                    #expect(stat(path, &info) == 0)
                    #expect(Int64(info.st_blocks) * 512 <= Int64(one.count) + 64 * 1024, "\(kind): \(file)")
                }
            }
            let done = harness.send(
                "POST", "/bkt/o?uploadId=\(id)", body: Upload.completion([(1, tag1), (10_000, tag2)]))
            #expect(done.status == 200, "\(kind)")
            #expect(harness.object("bkt", "o") == Data(one + [42]), "\(kind)")
        }
    }

    @Test(
        "multipart uploads count against --max-sessions with resumable sessions; the least recently used idle one goes")
    func boundedWithSessions() throws {
        let clock = ManualClock()
        let harness = try Harness { settings in
            settings.now = clock.now
            settings.maxSessions = 3
        }
        let first = try Upload.initiate(harness, "a")
        clock.advance(1)
        _ = harness.startGCSSession(name: "s")
        clock.advance(1)
        let third = try Upload.initiate(harness, "c")
        clock.advance(1)
        #expect(harness.app.multipartUploadsInProgress == 2)
        // A fourth evicts the first (least recently used): it answers NoSuchUpload from now on.
        let fourth = try Upload.initiate(harness, "d")
        #expect(harness.app.sessions.count == 3)
        #expect(harness.app.multipartUploadsInProgress == 2)
        #expect(Upload.code(harness.send("GET", "/bkt/a?uploadId=\(first)")) == "NoSuchUpload")
        #expect(harness.send("GET", "/bkt/c?uploadId=\(third)").status == 200)
        #expect(harness.send("GET", "/bkt/d?uploadId=\(fourth)").status == 200)
        // Completed and aborted uploads leave the table.
        #expect(harness.send("DELETE", "/bkt/d?uploadId=\(fourth)").status == 204)
        #expect(harness.app.sessions.count == 2)
        for index in 0..<3000 {
            _ = try Upload.initiate(harness, "flood\(index)")
        }
        #expect(harness.app.sessions.count == 3)
        #expect(harness.app.multipartUploadsInProgress <= 3)
    }

    @Test("a multipart upload expires a session lifetime after it started: NoSuchUpload, its parts gone")
    func expiry() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let clock = ManualClock()
        let harness = try Harness(store: try DirectoryObjectStore(root: root)) { settings in
            settings.now = clock.now
            settings.sessionLifetime = .seconds(60)
        }
        let id = try Upload.initiate(harness, "o")
        _ = Upload.putPart(harness, "o", id, 1, testBytes(1000))
        clock.advance(59)
        #expect(harness.send("GET", "/bkt/o?uploadId=\(id)").status == 200)
        clock.advance(1)
        #expect(Upload.code(harness.send("GET", "/bkt/o?uploadId=\(id)")) == "NoSuchUpload")
        #expect(harness.app.multipartUploadsInProgress == 0)
        #expect(allFiles(under: root).filter { $0.contains(".tmp-") }.isEmpty)
    }
}
