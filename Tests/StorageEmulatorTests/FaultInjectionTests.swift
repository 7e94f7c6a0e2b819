import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Fault injection")
struct FaultInjectionTests {
    func plan(_ harness: Harness, _ instructions: [String]) throws -> HTTPHeaders {
        ["x-emulator-faults": try harness.app.installFaultPlan(instructions)]
    }

    @Test("return-<status> answers before reading the body, in the protocol's error JSON; then the plan moves on")
    func respond() throws {
        let harness = try Harness()
        let headers = try plan(harness, ["return-503", "return-429", "pass"])
        let first = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x", headers: headers, body: [1, 2])
        #expect(first.status == 503)
        #expect(((first.json["error"] as? [String: Any])?["errors"] as? [[String: Any]]) != nil)
        #expect(harness.app.bytesReceived == 0)
        #expect(harness.object("bkt", "x") == nil)
        let second = harness.send("POST", "/v0/b/bkt/o?name=x", headers: headers, body: [1, 2])
        #expect(second.status == 429)
        #expect(((second.json["error"] as? [String: Any])?["code"] as? Int) == 429)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x", headers: headers, body: [1, 2])
                .status == 200)
        // Used up: further requests pass.
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x", headers: headers).status == 200)
        // Requests without the header are not affected by installed plans.
        let other = try plan(harness, ["return-500"])
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x").status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x", headers: other).status == 500)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x", headers: ["x-emulator-faults": "nope"]).status == 400)
    }

    @Test("return-503-after-N on a GCS chunk commits whole 256 KiB units of what arrived, then the client resumes")
    func respondAfterResumable() throws {
        let harness = try Harness()
        let bytes = testBytes(4 * kib256 + 77)
        let session = harness.startGCSSession(name: "obj")
        let headers = try plan(harness, ["return-503-after-600K"])
        let before = harness.app.bytesReceived
        var faultHeaders = headers
        faultHeaders.add("Content-Range", "bytes 0-\(bytes.count - 1)/\(bytes.count)")
        let failed = harness.send("PUT", session, headers: faultHeaders, body: bytes, readSize: 50_000)
        #expect(failed.status == 503)
        #expect(harness.app.bytesReceived - before == 600 * 1024)
        // 600 KiB arrived: two whole units (512 KiB) are committed.
        let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
        #expect(query.status == 308)
        #expect(query.headers["Range"] == "bytes=0-\(2 * kib256 - 1)")
        #expect(harness.object("bkt", "obj") == nil)
        let resumed = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(2 * kib256)-\(bytes.count - 1)/\(bytes.count)"],
            body: Array(bytes[(2 * kib256)..<bytes.count]))
        #expect(resumed.status == 200)
        #expect(harness.object("bkt", "obj") == Data(bytes))
    }

    @Test("A fault after more bytes than the body has fires at the end, before the final request finalizes")
    func respondAfterPastEnd() throws {
        let harness = try Harness()
        let bytes = testBytes(kib256 + 100)
        let session = harness.startGCSSession(name: "obj")
        var headers = try plan(harness, ["return-500-after-10M"])
        headers.add("Content-Range", "bytes 0-\(bytes.count - 1)/\(bytes.count)")
        #expect(harness.send("PUT", session, headers: headers, body: bytes).status == 500)
        #expect(harness.object("bkt", "obj") == nil)
        let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
        #expect(query.headers["Range"] == "bytes=0-\(kib256 - 1)")
        // Media uploads commit nothing.
        let media = try plan(harness, ["return-503-after-10"])
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=m", headers: media, body: testBytes(100)
            ).status == 503)
        #expect(harness.object("bkt", "m") == nil)
        // Requests without a body get the fault at once, before they are processed.
        harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=d", body: [1])
        let delete = try plan(harness, ["return-503-after-1K"])
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/d", headers: delete).status == 503)
        #expect(harness.object("bkt", "d") != nil)
    }

    @Test("reset-after-N: reads N bytes, commits whole units, then resets the connection without answering")
    func reset() throws {
        let harness = try Harness()
        let bytes = testBytes(3 * kib256)
        let url: String = {
            let response = harness.send(
                "POST", "/v0/b/bkt/o?name=r",
                headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"], json: [:])
            return String((response.headers["X-Goog-Upload-URL"] ?? "").dropFirst("http://emulator.test".count))
        }()
        var headers = try plan(harness, ["reset-after-300K"])
        headers.add("X-Goog-Upload-Command", "upload, finalize")
        headers.add("X-Goog-Upload-Offset", "0")
        let reset = harness.send("POST", url, headers: headers, body: bytes)
        #expect(reset.resets == 1)
        #expect(reset.status == nil)
        let query = harness.send("POST", url, headers: ["X-Goog-Upload-Command": "query"])
        #expect(query.headers["X-Goog-Upload-Size-Received"] == String(kib256))
        let resumed = harness.send(
            "POST", url,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": String(kib256)],
            body: Array(bytes[kib256..<bytes.count]))
        #expect(resumed.status == 200)
        #expect(harness.object("bkt", "r") == Data(bytes))
    }

    @Test("stall-<ms>ms-after-N pauses mid-body, then the request completes normally")
    func stall() throws {
        let harness = try Harness()
        let headers = try plan(harness, ["stall-300ms-after-1K"])
        let clock = ContinuousClock()
        let started = clock.now
        let response = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=s", headers: headers, body: testBytes(5000))
        let elapsed = clock.now - started
        #expect(response.status == 200)
        #expect(elapsed >= .milliseconds(290))
        #expect(harness.object("bkt", "s") == Data(testBytes(5000)))
    }

    @Test("stall-after-N: reads N bytes, commits whole units like a reset, then holds the connection unanswered")
    func hold() throws {
        let harness = try Harness()
        let bytes = testBytes(3 * kib256)
        let session = harness.startGCSSession(name: "held")
        var headers = try plan(harness, ["stall-after-300K"])
        headers.add("Content-Range", "bytes 0-\(bytes.count - 1)/\(bytes.count)")
        let before = harness.app.bytesReceived
        let held = harness.send("PUT", session, headers: headers, body: bytes, readSize: 50_000)
        #expect(held.holds == 1)
        #expect(held.status == nil)
        #expect(harness.app.bytesReceived - before == 300 * 1024, "nothing is read past N")
        // 300 KiB arrived: one whole unit is committed, and the session is free for the client's query.
        let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
        #expect(query.status == 308)
        #expect(query.headers["Range"] == "bytes=0-\(kib256 - 1)")
        let resumed = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(kib256)-\(bytes.count - 1)/\(bytes.count)"],
            body: Array(bytes[kib256..<bytes.count]))
        #expect(resumed.status == 200)
        #expect(harness.object("bkt", "held") == Data(bytes))
        // A single-request upload that is held stores nothing; a body-less request is held before it is served.
        let media = try plan(harness, ["stall-after-10"])
        let heldMedia = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=m", headers: media, body: testBytes(100))
        #expect(heldMedia.holds == 1)
        #expect(harness.object("bkt", "m") == nil)
        let delete = try plan(harness, ["stall-after-0"])
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/held", headers: delete).holds == 1)
        #expect(harness.object("bkt", "held") != nil)
    }

    /// `drop-response` and `hold-response` process and commit the request, then end without
    /// answering: the first closes the connection, the second holds it until the client closes it.
    @Test(arguments: ["drop-response", "hold-response"])
    func aCommittedRequestGetsNoAnswer(instruction: String) throws {
        let harness = try Harness()
        let session = harness.startGCSSession(name: "obj")
        var headers = try plan(harness, [instruction])
        headers.add("Content-Range", "bytes 0-9/10")
        let unanswered = harness.send("PUT", session, headers: headers, body: testBytes(10))
        #expect(instruction == "drop-response" ? unanswered.closes == 1 : unanswered.holds == 1)
        #expect(unanswered.status == nil)
        #expect(harness.object("bkt", "obj") == Data(testBytes(10)))
        // The retry finds the session complete and gets the resource.
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes */*"]).status == 200)
    }

    @Test("Plans over HTTP: POST /_emulator/v1/faults returns an id; invalid instructions are 400")
    func httpInstall() throws {
        let harness = try Harness()
        let installed = harness.send("POST", "/_emulator/v1/faults", json: ["instructions": ["return-408", "pass"]])
        #expect(installed.status == 200)
        let id = try #require(installed.json["id"] as? String)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: ["x-emulator-faults": id]).status == 408)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: ["x-emulator-faults": id]).status == 200)
        let invalid = harness.send("POST", "/_emulator/v1/faults", json: ["instructions": ["return-503", "explode"]])
        #expect(invalid.status == 400)
        #expect(invalid.errorMessage.contains("explode"))
        #expect(harness.send("POST", "/_emulator/v1/faults", json: ["nothing": 1]).status == 400)
        #expect(harness.send("GET", "/_emulator/v1/faults").status == 405)
        #expect(throws: FaultPlanError.self) { try harness.app.installFaultPlan(["return-5"]) }
    }

    @Test("A global plan applies to requests without the header; a header plan replaces it")
    func globalPlan() throws {
        let harness = try Harness(faults: ["pass", "return-503"])
        #expect(harness.send("GET", "/storage/v1/b/bkt/o").status == 200)
        let headers = try plan(harness, ["pass"])
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: headers).status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o").status == 503)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o").status == 200)
        #expect(throws: FaultPlanError.self) { try Harness(faults: ["nonsense"]) }
    }

    @Test("A random global plan never corrupts stored data: every successful upload reads back intact")
    func randomPlanIntegrity() throws {
        let harness = try Harness(faults: ["random:seed=7,rate=0.5"])
        var successes = 0
        var failures = 0
        for index in 0..<60 {
            let bytes = testBytes(20_000 + index, seed: UInt8(index))
            let response = harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=o\(index)", body: bytes, readSize: 4096)
            if response.status == 200 {
                successes += 1
            } else {
                failures += 1
            }
            if let stored = harness.object("bkt", "o\(index)") {
                #expect(stored == Data(bytes))
            }
        }
        #expect(successes > 10 && failures > 10)
    }
}

@Suite("Backings through the application")
struct BackingTests {
    @Test("Discard backing: uploads succeed with correct size and CRC32C, no MD5; objects then read as not found")
    func discard() throws {
        let store = DiscardObjectStore()
        let harness = try Harness(store: store)
        let bytes = testBytes(kib256 * 2 + 3)
        let session = harness.startGCSSession(name: "d")
        #expect(
            harness.send(
                "PUT", session, headers: ["Content-Range": "bytes 0-\(kib256 - 1)/*"], body: Array(bytes[0..<kib256])
            ).status == 308)
        let done = harness.send(
            "PUT", session, headers: ["Content-Range": "bytes \(kib256)-\(bytes.count - 1)/\(bytes.count)"],
            body: Array(bytes[kib256..<bytes.count]))
        #expect(done.status == 200)
        #expect(done.json["size"] as? String == String(bytes.count))
        #expect(done.json["crc32c"] as? String == crc32cBase64(bytes))
        // A sink for benchmarks hashes only what clients verify.
        #expect(done.json["md5Hash"] == nil)
        #expect(store.bytesDiscarded == Int64(bytes.count))
        #expect(harness.app.bytesReceived >= Int64(bytes.count))
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/d").status == 404)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/d?alt=media").status == 404)
        let media = harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=m", body: bytes)
        #expect(media.json["crc32c"] as? String == crc32cBase64(bytes))
        // An MD5 it cannot check is refused, never accepted unchecked.
        let withMD5 = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=m5",
            headers: ["x-goog-hash": "md5=\(md5Base64(bytes))"], body: bytes)
        #expect(withMD5.status == 400)
        #expect((withMD5.json["error"] as? [String: Any])?["message"] as? String ?? "" != "")
    }

    @Test("Directory backing: resumable and media uploads land on disk and survive a restart")
    func directory() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let bytes = testBytes(kib256 + 5)
        do {
            let harness = try Harness(store: try DirectoryObjectStore(root: root))
            let session = harness.startGCSSession(name: "../../escape")
            #expect(
                harness.send(
                    "PUT", session, headers: ["Content-Range": "bytes 0-\(kib256 - 1)/*"],
                    body: Array(bytes[0..<kib256])
                ).status == 308)
            #expect(
                harness.send(
                    "PUT", session, headers: ["Content-Range": "bytes \(kib256)-\(bytes.count - 1)/\(bytes.count)"],
                    body: Array(bytes[kib256..<bytes.count])
                ).status == 200)
        }
        let reopened = try Harness(store: try DirectoryObjectStore(root: root))
        let media = reopened.send("GET", "/storage/v1/b/bkt/o/..%2F..%2Fescape?alt=media")
        #expect(media.status == 200)
        #expect(media.body == Data(bytes))
        #expect(
            !FileManager.default.fileExists(
                atPath: root.deletingLastPathComponent().appendingPathComponent("escape").path))
        #expect(!allFiles(under: root).contains { $0.contains(".tmp-") })
    }

    @Test("The public StorageEmulator rejects bad fault plans, serves on a real socket and stops")
    func publicAPI() async throws {
        var configuration = StorageEmulator.Configuration()
        configuration.faults = ["bogus"]
        #expect(throws: StorageEmulator.EmulatorError.self) { try StorageEmulator.start(configuration) }
        configuration.faults = []
        let emulator = try StorageEmulator.start(configuration)
        #expect(emulator.port > 0)
        #expect(emulator.baseURL.absoluteString == "http://127.0.0.1:\(emulator.port)")
        try emulator.createBucket("public-api")
        var upload = URLRequest(
            url: URL(
                string:
                    "\(emulator.baseURL.absoluteString)/upload/storage/v1/b/public-api/o?uploadType=media&name=a%2Fb")!)
        upload.httpMethod = "POST"
        let (_, uploaded) = try await URLSession.shared.upload(for: upload, from: Data("hello".utf8))
        #expect((uploaded as? HTTPURLResponse)?.statusCode == 200)
        let (body, _) = try await URLSession.shared.data(
            from: URL(string: "\(emulator.baseURL.absoluteString)/storage/v1/b/public-api/o/a%2Fb?alt=media")!)
        #expect(body == Data("hello".utf8))
        #expect(emulator.bytesReceived >= 5)
        emulator.stop()
        await #expect(throws: (any Error).self) {
            _ = try await URLSession.shared.data(
                from: URL(string: "\(emulator.baseURL.absoluteString)/storage/v1/b/public-api")!)
        }
    }
}
