import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

@Suite("GCS uploads")
struct GCSUploadTests {
    @Test("uploadType=media stores the bytes with size, CRC32C and MD5")
    func media() throws {
        let harness = try Harness()
        let bytes = testBytes(300_000)
        let response = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=dir%2Fa%20b.bin",
            headers: ["Content-Type": "image/png"], body: bytes, readSize: 7_777)
        #expect(response.status == 200)
        let json = response.json
        #expect(json["kind"] as? String == "storage#object")
        #expect(json["name"] as? String == "dir/a b.bin")
        #expect(json["bucket"] as? String == "bkt")
        #expect(json["size"] as? String == "300000")
        #expect(json["contentType"] as? String == "image/png")
        #expect(json["crc32c"] as? String == crc32cBase64(bytes))
        #expect(json["md5Hash"] as? String == md5Base64(bytes))
        #expect(json["metageneration"] as? String == "1")
        let generation = try #require(json["generation"] as? String)
        #expect(Int64(generation) != nil)
        #expect(json["id"] as? String == "bkt/dir/a b.bin/\(generation)")
        #expect(json["selfLink"] as? String == "http://emulator.test/storage/v1/b/bkt/o/dir%2Fa%20b.bin")
        #expect(
            json["mediaLink"] as? String
                == "http://emulator.test/download/storage/v1/b/bkt/o/dir%2Fa%20b.bin?generation=\(generation)&alt=media"
        )
        let created = try #require(json["timeCreated"] as? String)
        #expect(created.hasSuffix("Z") && created.contains("."))
        #expect(harness.object("bkt", "dir/a b.bin") == Data(bytes))
        #expect(harness.app.bytesReceived == 300_000)
    }

    @Test("media upload: missing name is 400, bad x-goog-hash is 400 and stores nothing, chunked bodies work")
    func mediaErrors() throws {
        let harness = try Harness()
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media", body: [1]).status == 400)
        let bad = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x",
            headers: ["x-goog-hash": "crc32c=AAAAAA=="], body: [1, 2, 3])
        #expect(bad.status == 400)
        #expect(bad.errorMessage.contains("CRC32C"))
        #expect(harness.object("bkt", "x") == nil)
        let good = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x",
            headers: ["x-goog-hash": "crc32c=\(crc32cBase64([1, 2, 3])),md5=\(md5Base64([1, 2, 3]))"], body: [1, 2, 3],
            chunked: true)
        #expect(good.status == 200)
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=bogus&name=x").status == 400)
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=..", body: [1]).status == 400)
    }

    static func multipartBody(
        boundary: String, metadata: [String: Any], media: [UInt8], mediaType: String = "text/plain"
    )
        -> [UInt8]
    {
        let json = String(decoding: (try? JSONSerialization.data(withJSONObject: metadata)) ?? Data(), as: UTF8.self)
        var body = Array(
            "--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n\(json)\r\n--\(boundary)\r\nContent-Type: \(mediaType)\r\n\r\n"
                .utf8)
        body += media
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        return body
    }

    @Test("uploadType=multipart: metadata part then media part, streamed in small reads")
    func multipart() throws {
        let harness = try Harness()
        // Media containing near-boundary bytes must survive intact.
        var media = testBytes(200_000)
        media.replaceSubrange(1000..<1020, with: Array("\r\n--BOUNDAR".utf8) + Array(repeating: 0x2D, count: 9))
        let body = Self.multipartBody(
            boundary: "BOUNDARY", metadata: ["name": "m.txt", "metadata": ["k": "v"], "cacheControl": "no-cache"],
            media: media)
        for readSize in [1_000, 13, 100_000] {
            let response = harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
                headers: ["Content-Type": "multipart/related; boundary=BOUNDARY"], body: body, readSize: readSize)
            #expect(response.status == 200)
            #expect(response.json["contentType"] as? String == "text/plain")
            #expect(response.json["cacheControl"] as? String == "no-cache")
            #expect((response.json["metadata"] as? [String: String]) == ["k": "v"])
            #expect(harness.object("bkt", "m.txt") == Data(media))
        }
    }

    @Test("multipart: crc32c/md5Hash in the metadata are verified (400 and no object on mismatch)")
    func multipartHashes() throws {
        let harness = try Harness()
        let media = testBytes(5000)
        let good = Self.multipartBody(
            boundary: "b1", metadata: ["name": "ok", "crc32c": crc32cBase64(media), "md5Hash": md5Base64(media)],
            media: media)
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
                headers: ["Content-Type": "multipart/related; boundary=b1"], body: good
            ).status == 200)
        let badCRC = Self.multipartBody(boundary: "b1", metadata: ["name": "bad", "crc32c": "AAAAAA=="], media: media)
        let crcResponse = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
            headers: ["Content-Type": "multipart/related; boundary=b1"], body: badCRC)
        #expect(crcResponse.status == 400)
        let badMD5 = Self.multipartBody(
            boundary: "b1", metadata: ["name": "bad", "md5Hash": md5Base64([1])], media: media)
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
                headers: ["Content-Type": "multipart/related; boundary=b1"], body: badMD5
            ).status == 400)
        #expect(harness.object("bkt", "bad") == nil)
        // Malformed bodies and missing boundaries.
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
                headers: ["Content-Type": "multipart/related; boundary=b1"], body: Array("garbage".utf8)
            ).status == 400)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart", body: good).status == 400)
        // Name in the query and the body must agree.
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart&name=other",
                headers: ["Content-Type": "multipart/related; boundary=b1"], body: good
            ).status == 400)
    }

    @Test("Resumable start: Location with upload_id, X-Upload-Content-Type used, name required")
    func resumableStart() throws {
        let harness = try Harness()
        let session = harness.startGCSSession(name: "big", headers: ["X-Upload-Content-Type": "video/mp4"])
        let final = harness.send("PUT", session, headers: ["Content-Range": "bytes 0-2/3"], body: [1, 2, 3])
        #expect(final.status == 200)
        #expect(final.json["contentType"] as? String == "video/mp4")
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable", json: [:]).status == 400)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=a", json: ["name": "b"]).status
                == 400)
        let fromBody = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable", json: ["name": "n", "contentType": "text/x"])
        #expect(fromBody.status == 200)
    }

    @Test("Resumable: 308 with Range after each chunk, no Range before any byte, final 200 with the resource")
    func resumableChunks() throws {
        let harness = try Harness()
        let bytes = testBytes(kib256 * 2 + 1000)
        let session = harness.startGCSSession(name: "obj")
        let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
        #expect(query.status == 308)
        #expect(query.headers["Range"] == nil)
        let first = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes 0-\(kib256 - 1)/*"], body: Array(bytes[0..<kib256]))
        #expect(first.status == 308)
        #expect(first.headers["Range"] == "bytes=0-\(kib256 - 1)")
        let second = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(kib256)-\(2 * kib256 - 1)/*"],
            body: Array(bytes[kib256..<2 * kib256]), readSize: 4096)
        #expect(second.status == 308)
        #expect(second.headers["Range"] == "bytes=0-\(2 * kib256 - 1)")
        let last = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(2 * kib256)-\(bytes.count - 1)/\(bytes.count)"],
            body: Array(bytes[(2 * kib256)..<bytes.count]))
        #expect(last.status == 200)
        #expect(last.json["size"] as? String == String(bytes.count))
        #expect(last.json["crc32c"] as? String == crc32cBase64(bytes))
        #expect(last.json["md5Hash"] as? String == md5Base64(bytes))
        #expect(harness.object("bkt", "obj") == Data(bytes))
        // A completed session answers again with the same resource, without storing anything new.
        let again = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
        #expect(again.status == 200)
        #expect(again.json["generation"] as? String == last.json["generation"] as? String)
        let replay = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(2 * kib256)-\(bytes.count - 1)/\(bytes.count)"],
            body: Array(bytes[(2 * kib256)..<bytes.count]))
        #expect(replay.status == 200)
        #expect(replay.json["generation"] as? String == last.json["generation"] as? String)
    }

    @Test("Resumable: a non-final chunk that is not a multiple of 256 KiB is 400 and changes nothing")
    func granularity() throws {
        let harness = try Harness()
        let session = harness.startGCSSession(name: "obj")
        let response = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes 0-999/*"], body: testBytes(1000))
        #expect(response.status == 400)
        #expect(response.errorMessage.contains("262144"))
        let alsoBad = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes 0-999/5000"], body: testBytes(1000))
        #expect(alsoBad.status == 400)
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes */*"]).headers["Range"] == nil)
        // The last chunk may have any length.
        #expect(
            harness.send("PUT", session, headers: ["Content-Range": "bytes 0-999/1000"], body: testBytes(1000)).status
                == 200)
    }

    @Test("Resumable: bytes re-sent below the committed offset are ignored, only the new tail is appended")
    func resentBytes() throws {
        let harness = try Harness()
        let bytes = testBytes(kib256 * 3)
        let session = harness.startGCSSession(name: "obj")
        #expect(
            harness.send(
                "PUT", session, headers: ["Content-Range": "bytes 0-\(2 * kib256 - 1)/*"],
                body: Array(bytes[0..<2 * kib256])
            ).status == 308)
        // The client lost the answer and re-sends from 256 KiB: the overlap is skipped.
        let overlap = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(kib256)-\(3 * kib256 - 1)/\(3 * kib256)"],
            body: Array(bytes[kib256..<bytes.count]))
        #expect(overlap.status == 200)
        #expect(overlap.json["size"] as? String == String(3 * kib256))
        #expect(harness.object("bkt", "obj") == Data(bytes))
    }

    @Test("Resumable: a gap beyond the committed offset is 400")
    func gap() throws {
        let harness = try Harness()
        let session = harness.startGCSSession(name: "obj")
        let response = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(kib256)-\(2 * kib256 - 1)/*"], body: testBytes(kib256))
        #expect(response.status == 400)
        #expect(response.errorMessage.contains("exceeds already uploaded size of 0"))
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes */*"]).headers["Range"] == nil)
    }

    @Test("Resumable: bytes */* never finalizes; bytes */N with N == stored finalizes; other N")
    func queryAndFinalize() throws {
        let harness = try Harness()
        let bytes = testBytes(kib256)
        let session = harness.startGCSSession(name: "obj")
        harness.send("PUT", session, headers: ["Content-Range": "bytes 0-\(kib256 - 1)/*"], body: bytes)
        for _ in 0..<3 {
            let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
            #expect(query.status == 308)
            #expect(query.headers["Range"] == "bytes=0-\(kib256 - 1)")
        }
        #expect(harness.object("bkt", "obj") == nil)
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes */\(kib256 * 2)"]).status == 308)
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes */10"]).status == 400)
        let finalize = harness.send("PUT", session, headers: ["Content-Range": "bytes */\(kib256)"])
        #expect(finalize.status == 200)
        #expect(harness.object("bkt", "obj") == Data(bytes))
        // An empty object: bytes */0 on a fresh session.
        let empty = harness.startGCSSession(name: "empty")
        let done = harness.send("PUT", empty, headers: ["Content-Range": "bytes */0"])
        #expect(done.status == 200)
        #expect(done.json["size"] as? String == "0")
        #expect(done.json["crc32c"] as? String == "AAAAAA==")
        #expect(done.json["md5Hash"] as? String == "1B2M2Y8AsgTpgAmY7PhCfg==")
    }

    @Test("Resumable: x-goog-hash on the final request is verified; a mismatch is 400 and nothing is finalized")
    func finalHash() throws {
        let harness = try Harness()
        let bytes = testBytes(kib256 + 10)
        let session = harness.startGCSSession(name: "obj")
        harness.send(
            "PUT", session, headers: ["Content-Range": "bytes 0-\(kib256 - 1)/*"], body: Array(bytes[0..<kib256]))
        let tail = Array(bytes[kib256..<bytes.count])
        let range = "bytes \(kib256)-\(bytes.count - 1)/\(bytes.count)"
        let bad = harness.send(
            "PUT", session, headers: ["Content-Range": range, "x-goog-hash": "crc32c=AAAAAA=="], body: tail)
        #expect(bad.status == 400)
        #expect(harness.object("bkt", "obj") == nil)
        let badMD5 = harness.send(
            "PUT", session, headers: ["Content-Range": range, "x-goog-hash": "md5=\(md5Base64([1]))"], body: tail)
        #expect(badMD5.status == 400)
        // The session is back where it was before the final request.
        #expect(
            harness.send("PUT", session, headers: ["Content-Range": "bytes */*"]).headers["Range"]
                == "bytes=0-\(kib256 - 1)")
        let good = harness.send(
            "PUT", session,
            headers: ["Content-Range": range, "x-goog-hash": "crc32c=\(crc32cBase64(bytes)),md5=\(md5Base64(bytes))"],
            body: tail)
        #expect(good.status == 200)
        #expect(harness.object("bkt", "obj") == Data(bytes))
        // crc32c declared at the start is verified too.
        let declared = harness.startGCSSession(name: "declared", metadata: ["crc32c": "AAAAAA=="])
        #expect(
            harness.send("PUT", declared, headers: ["Content-Range": "bytes 0-2/3"], body: [1, 2, 3]).status == 400)
        #expect(harness.object("bkt", "declared") == nil)
    }

    @Test("Resumable: DELETE answers 499 and the session is gone (404 afterwards); unknown ids are 404")
    func cancel() throws {
        let harness = try Harness()
        let session = harness.startGCSSession(name: "obj")
        harness.send("PUT", session, headers: ["Content-Range": "bytes 0-\(kib256 - 1)/*"], body: testBytes(kib256))
        #expect(harness.send("DELETE", session).status == 499)
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes */*"]).status == 404)
        #expect(harness.send("DELETE", session).status == 404)
        #expect(harness.app.sessions.count == 0)
        #expect(
            harness.send(
                "PUT", "/upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id=nope",
                headers: ["Content-Range": "bytes */*"]
            )
            .status == 404)
    }

    @Test("Resumable: Content-Range that disagrees with the body or the declared size is 400")
    func mismatchedLengths() throws {
        let harness = try Harness()
        let session = harness.startGCSSession(name: "obj", headers: ["X-Upload-Content-Length": "100"])
        #expect(
            harness.send("PUT", session, headers: ["Content-Range": "bytes 0-9/10"], body: testBytes(10)).status == 400)
        #expect(
            harness.send("PUT", session, headers: ["Content-Range": "bytes 0-99/100"], body: testBytes(50)).status
                == 400)
        let chunked = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes 0-99/100"], body: testBytes(50), chunked: true)
        #expect(chunked.status == 400)
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes */*"]).headers["Range"] == nil)
        #expect(harness.send("PUT", session, headers: ["Content-Range": "nonsense"]).status == 400)
        #expect(
            harness.send("PUT", session, headers: ["Content-Range": "bytes 0-99/100"], body: testBytes(100)).status
                == 200)
    }

    @Test("A PUT without Content-Range uploads the whole object in one request")
    func putWholeObject() throws {
        let harness = try Harness()
        let session = harness.startGCSSession(name: "obj")
        #expect(harness.send("PUT", session, body: [9, 9]).status == 200)
        #expect(harness.object("bkt", "obj") == Data([9, 9]))
    }

    @Test("A connection that breaks mid-chunk keeps the whole 256 KiB units received")
    func brokenConnection() throws {
        let harness = try Harness()
        let bytes = testBytes(kib256 * 4)
        let session = harness.startGCSSession(name: "obj")
        let broken = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes 0-\(bytes.count - 1)/\(bytes.count)"], body: bytes,
            readSize: 10_000, breakAfter: kib256 * 2 + 5000)
        #expect(broken.closes == 1)
        let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
        #expect(query.headers["Range"] == "bytes=0-\(2 * kib256 - 1)")
        let resumed = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(2 * kib256)-\(bytes.count - 1)/\(bytes.count)"],
            body: Array(bytes[(2 * kib256)..<bytes.count]))
        #expect(resumed.status == 200)
        #expect(harness.object("bkt", "obj") == Data(bytes))
    }
}

@Suite("GCS preconditions and session lifetime")
struct GCSSessionLifetimeTests {
    @Test("ifGenerationMatch: 0 refuses to overwrite (412), the current generation allows it, on every upload type")
    func ifGenerationMatch() throws {
        let harness = try Harness()
        let first = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x&ifGenerationMatch=0", body: [1])
        #expect(first.status == 200)
        let generation = try #require(first.json["generation"] as? String)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x&ifGenerationMatch=0", body: [2])
                .status == 412)
        let multipart = GCSUploadTests.multipartBody(boundary: "q", metadata: ["name": "x"], media: [3])
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart&ifGenerationMatch=0",
                headers: ["Content-Type": "multipart/related; boundary=q"], body: multipart
            ).status == 412)
        #expect(harness.object("bkt", "x") == Data([1]))
        // A session checks when it starts...
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=x&ifGenerationMatch=0", json: [:]
            ).status == 412)
        // ...and again when it finalizes, against the object stored then.
        let guarded = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=late&ifGenerationMatch=0", json: [:])
        #expect(guarded.status == 200)
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=late", body: [7]).status == 200)
        let path = String((guarded.headers["Location"] ?? "").dropFirst("http://emulator.test".count))
        let refused = harness.send("PUT", path, headers: ["Content-Range": "bytes 0-0/1"], body: [4])
        #expect(refused.status == 412)
        #expect(
            refused.json["error"].flatMap { ($0 as? [String: Any])?["errors"] as? [[String: Any]] }?.first?["reason"]
                as? String == "conditionNotMet")
        #expect(harness.object("bkt", "late") == Data([7]))
        #expect(harness.object("bkt", "x") == Data([1]))
        let matching = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x&ifGenerationMatch=\(generation)", body: [5])
        #expect(matching.status == 200)
        #expect(harness.object("bkt", "x") == Data([5]))
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x&ifGenerationMatch=abc", body: [6])
                .status == 400)
    }

    @Test("Shutdown cancels unfinished sessions and deletes their staged bytes")
    func shutdown() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let harness = try Harness(store: try DirectoryObjectStore(root: root))
        let session = harness.startGCSSession(name: "s")
        harness.send("PUT", session, headers: ["Content-Range": "bytes 0-\(kib256 - 1)/*"], body: testBytes(kib256))
        #expect(allFiles(under: root).contains { $0.contains(".tmp-") })
        harness.app.shutdown()
        #expect(!allFiles(under: root).contains { $0.contains(".tmp-") })
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes */*"]).status == 404)
    }

    @Test("Concurrent requests on one session are serialised; a cancel racing uploads never leaves partial objects")
    func concurrentSession() async throws {
        let harness = try Harness()
        let bytes = testBytes(kib256 * 8)
        let session = harness.startGCSSession(name: "race")
        await withTaskGroup(of: Void.self) { group in
            for chunk in 0..<8 {
                group.addTask {
                    let start = chunk * kib256
                    let isLast = chunk == 7
                    let total = isLast ? String(bytes.count) : "*"
                    harness.send(
                        "PUT", session, headers: ["Content-Range": "bytes \(start)-\(start + kib256 - 1)/\(total)"],
                        body: Array(bytes[start..<start + kib256]))
                }
            }
        }
        // Whatever order they ran in, the session holds a prefix of the data, and any object is complete.
        if let stored = harness.object("bkt", "race") {
            #expect(stored == Data(bytes))
        } else {
            let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
            #expect(query.status == 308)
        }
    }
}
