import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// Faults on media downloads act on the response body: the head and N body
/// bytes go out before a reset or a stall.
@Suite("Response faults on media downloads")
struct ResponseFaultTests {
    static let size = 3 * kib256 + 5

    /// A harness holding `bkt/d` (`size` test bytes) and `bkt/empty`, stored without faults.
    func harness() throws -> (Harness, [UInt8]) {
        let harness = try Harness()
        let bytes = testBytes(Self.size, seed: 3)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=d", body: bytes).status == 200)
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=empty").status == 200)
        return (harness, bytes)
    }

    func plan(_ harness: Harness, _ instructions: [String]) throws -> HTTPHeaders {
        ["x-emulator-faults": try harness.app.installFaultPlan(instructions)]
    }

    static let mediaTargets = [
        "/storage/v1/b/bkt/o/d?alt=media",
        "/download/storage/v1/b/bkt/o/d?alt=media",
        "/download/storage/v1/b/bkt/o/d",
        "/v0/b/bkt/o/d?alt=media",
    ]

    @Test("reset-after-N sends the head and N body bytes, then resets", arguments: mediaTargets, [0, 1, 1000, 300_000])
    func resetMidBody(target: String, n: Int) throws {
        let (harness, bytes) = try harness()
        let headers = try plan(harness, ["reset-after-\(n)", "pass"])
        let response = harness.send("GET", target, headers: headers)
        #expect(response.midBodyResets == 1)
        #expect(response.status == 200)
        #expect(response.announcedLength == Int64(bytes.count), "the head announces the whole object")
        #expect(response.body == Data(bytes[0..<n]))
        // The plan moved on: the next download is whole.
        #expect(harness.send("GET", target, headers: headers).body == Data(bytes))
    }

    @Test("reset-after-N counts from the start of a ranged response's body")
    func resetRanged() throws {
        let (harness, bytes) = try harness()
        let headers = try plan(harness, ["reset-after-10K"])
        var ranged = headers
        ranged.add("Range", "bytes=5000-")
        let response = harness.send("GET", "/v0/b/bkt/o/d?alt=media", headers: ranged)
        #expect(response.midBodyResets == 1)
        #expect(response.status == 206)
        #expect(response.headers["Content-Range"] == "bytes 5000-\(bytes.count - 1)/\(bytes.count)")
        #expect(response.body == Data(bytes[5000..<(5000 + 10240)]))
    }

    @Test("A body of N bytes or fewer is sent whole, then the connection resets")
    func resetPastEnd() throws {
        let (harness, bytes) = try harness()
        for n in [bytes.count, bytes.count + 1, 8 * 1024 * 1024] {
            let response = harness.send(
                "GET", "/storage/v1/b/bkt/o/d?alt=media", headers: try plan(harness, ["reset-after-\(n)"]))
            #expect(response.midBodyResets == 1)
            #expect(response.body == Data(bytes))
        }
    }

    @Test("stall-<ms>ms-after-N sends N bytes, pauses, then finishes the body")
    func stall() throws {
        let (harness, bytes) = try harness()
        let headers = try plan(harness, ["stall-250ms-after-100K"])
        let clock = ContinuousClock()
        let started = clock.now
        let response = harness.send("GET", "/download/storage/v1/b/bkt/o/d?alt=media", headers: headers)
        #expect(clock.now - started >= .milliseconds(240))
        #expect(response.answers == 1)
        #expect(response.status == 200)
        #expect(response.body == Data(bytes))
    }

    @Test("stall-after-N sends the head and N body bytes, then holds the connection", arguments: mediaTargets)
    func holdMidBody(target: String) throws {
        let (harness, bytes) = try harness()
        let headers = try plan(harness, ["stall-after-100K"])
        let response = harness.send("GET", target, headers: headers)
        #expect(response.midBodyHolds == 1)
        #expect(response.status == 200)
        #expect(response.announcedLength == Int64(bytes.count))
        #expect(response.body == Data(bytes[0..<(100 * 1024)]))
        // The plan is used up: the next download is whole.
        #expect(harness.send("GET", target, headers: headers).body == Data(bytes))
    }

    @Test("return-<status>-after-N answers the status before any body byte, as before")
    func respondAfter() throws {
        let (harness, _) = try harness()
        let headers = try plan(harness, ["return-503-after-1K"])
        let gcs = harness.send("GET", "/storage/v1/b/bkt/o/d?alt=media", headers: headers)
        #expect(gcs.status == 503)
        #expect(gcs.errorMessage.contains("Injected fault"))
        let firebase = harness.send(
            "GET", "/v0/b/bkt/o/d?alt=media", headers: try plan(harness, ["return-503-after-1K"]))
        #expect(firebase.status == 503)
        #expect(firebase.json["error"] != nil)
    }

    @Test("drop-response closes a download without answering")
    func dropResponse() throws {
        let (harness, _) = try harness()
        let response = harness.send(
            "GET", "/v0/b/bkt/o/d?alt=media", headers: try plan(harness, ["drop-response"]))
        #expect(response.closes == 1)
        #expect(response.status == nil)
    }

    @Test(
        "Requests without a response body to fault keep the old behaviour: the reset comes before any answer",
        arguments: [
            "/storage/v1/b/bkt/o/d",  // metadata
            "/storage/v1/b/bkt/o/missing?alt=media",  // 404
            "/storage/v1/b/bkt/o/empty?alt=media",  // empty object
            "/v0/b/bkt/o/empty?alt=media",
        ])
    func resetBeforeAnswer(target: String) throws {
        let (harness, _) = try harness()
        let response = harness.send("GET", target, headers: try plan(harness, ["reset-after-0"]))
        #expect(response.resets == 1)
        #expect(response.status == nil)
    }

    @Test("A HEAD of the media is not a download: the reset comes before the answer")
    func headIsNotADownload() throws {
        let (harness, _) = try harness()
        let response = harness.send(
            "HEAD", "/download/storage/v1/b/bkt/o/d", headers: try plan(harness, ["reset-after-10"]))
        #expect(response.resets == 1)
    }

    @Test("Uploads still fault on the request body")
    func uploadsUnchanged() throws {
        let (harness, _) = try harness()
        let response = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=u",
            headers: try plan(harness, ["reset-after-1K"]), body: testBytes(5000))
        #expect(response.resets == 1)
        #expect(harness.object("bkt", "u") == nil)
    }
}
