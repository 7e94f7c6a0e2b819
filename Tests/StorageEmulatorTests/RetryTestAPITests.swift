import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// Google storage-testbench's retry-test API on the emulator: the resource as the testbench
/// answers it, instructions taken per JSON API method, and the testbench's instruction names.
@Suite("Retry-test API")
struct RetryTestAPITests {
    /// Creates a retry test over HTTP and returns its id.
    func create(_ harness: Harness, _ instructions: [String: [String]]) throws -> String {
        let created = harness.send("POST", "/retry_test", json: ["instructions": instructions, "transport": "HTTP"])
        #expect(created.status == 200)
        return try #require(created.json["id"] as? String)
    }

    func test(_ harness: Harness, _ id: String) -> [String: Any] {
        harness.send("GET", "/retry_test/\(id)").json
    }

    @Test("POST, GET, list and DELETE answer as the testbench does; bad tests are refused with the reason")
    func resource() throws {
        let harness = try Harness()
        let created = harness.send(
            "POST", "/retry_test",
            json: [
                "instructions": ["storage.objects.get": ["return-503", "return-503-after-256K"]], "transport": "HTTP",
            ])
        #expect(created.status == 200)
        let id = try #require(created.json["id"] as? String)
        #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
        #expect(created.json["completed"] as? Bool == false)
        #expect(created.json["transport"] as? String == "HTTP")
        let listed = (created.json["instructions"] as? [String: [String]])?["storage.objects.get"]
        #expect(listed == ["return-503", "return-503-after-256K"], "instructions as written")
        #expect(test(harness, id)["id"] as? String == id)
        let all = harness.send("GET", "/retry_tests").json["retry_test"] as? [[String: Any]]
        #expect(all?.compactMap { $0["id"] as? String } == [id])
        let deleted = harness.send("DELETE", "/retry_test/\(id)")
        #expect(deleted.status == 200)
        #expect(String(decoding: deleted.body, as: UTF8.self) == "Deleted \(id)")
        #expect(harness.send("GET", "/retry_test/\(id)").status == 404)
        #expect(harness.send("DELETE", "/retry_test/\(id)").status == 404)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: ["x-retry-test-id": id]).status == 404)
        for (body, reason) in [
            (["instructions": ["storage.objects.get": ["explode"]]], "explode"),
            (["instructions": ["storage.objects.explode": ["return-503"]]], "storage.objects.explode"),
            (["instructions": ["storage.objects.get": ["return-503"]], "transport": "GRPC"], "GRPC"),
            (["nothing": 1], "instructions"),
        ] as [([String: Any], String)] {
            let refused = harness.send("POST", "/retry_test", json: body)
            #expect(refused.status == 400)
            #expect(refused.errorMessage.contains(reason))
        }
        #expect(harness.app.retryTests.count == 0)
    }

    @Test("Requests take their method's instructions in order; others pass; completed once all are used")
    func perMethod() throws {
        let harness = try Harness()
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x", body: [1, 2]).status == 200)
        let id = try create(
            harness, ["storage.objects.get": ["return-503", "return-408"], "storage.objects.list": ["return-500"]])
        let headers: HTTPHeaders = ["x-retry-test-id": id]
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x", headers: headers).status == 503)
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/y", headers: headers).status == 404, "not listed: served")
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x?alt=media", headers: headers).status == 408)
        #expect(test(harness, id)["completed"] as? Bool == false)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x", headers: headers).status == 200, "used up")
        #expect((test(harness, id)["instructions"] as? [String: [String]])?["storage.objects.list"] == ["return-500"])
        #expect(harness.send("GET", "/storage/v1/b/bkt/o", headers: headers).status == 500)
        #expect(test(harness, id)["completed"] as? Bool == true)
        #expect((test(harness, id)["instructions"] as? [String: [String]])?["storage.objects.get"] == [])
    }

    @Test(
        "Every route names its JSON API method in the route table",
        arguments: [
            ("GET", "/storage/v1/b/bkt/o/a%2Fb", "storage.objects.get"),
            ("GET", "/storage/v1/b/bkt/o/a?alt=media", "storage.objects.get"),
            ("GET", "/download/storage/v1/b/bkt/o/a?alt=media", "storage.objects.get"),
            ("GET", "/storage/v1/b/bkt/o", "storage.objects.list"),
            ("POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart", "storage.objects.insert"),
            ("POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=a", "storage.objects.insert"),
            ("PUT", "/upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id=1", "storage.objects.insert"),
            ("PATCH", "/storage/v1/b/bkt/o/a", "storage.objects.patch"),
            ("PUT", "/storage/v1/b/bkt/o/a", "storage.objects.update"),
            ("DELETE", "/storage/v1/b/bkt/o/a", "storage.objects.delete"),
            ("POST", "/storage/v1/b/bkt/o/a/rewriteTo/b/other/o/c", "storage.objects.rewrite"),
            ("POST", "/storage/v1/b/bkt/o/a/copyTo/b/other/o/c", "storage.objects.copy"),
            ("POST", "/storage/v1/b/bkt/o/c/compose", "storage.objects.compose"),
            ("POST", "/storage/v1/b/bkt/o/a/moveTo/o/c", "storage.objects.move"),
            ("GET", "/storage/v1/b", "storage.buckets.list"),
            ("POST", "/storage/v1/b", "storage.buckets.insert"),
            ("GET", "/storage/v1/b/bkt", "storage.buckets.get"),
            ("PATCH", "/storage/v1/b/bkt", "storage.buckets.patch"),
            ("PUT", "/storage/v1/b/bkt", "storage.buckets.update"),
            ("DELETE", "/storage/v1/b/bkt", "storage.buckets.delete"),
        ])
    func methodNames(method: String, target: String, name: String) {
        let match = EmulatorApplication.routes.match(TestRequest(method, target), servesAuthentication: false)
        #expect(match.apiMethod == name)
        #expect(EmulatorApplication.routes.apiMethodNames.contains(name))
    }

    @Test("return-reset-connection resets before reading the body: nothing is stored")
    func resetConnection() throws {
        let harness = try Harness()
        let id = try create(harness, ["storage.objects.insert": ["return-reset-connection"]])
        let before = harness.app.bytesReceived
        let reset = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=r", headers: ["x-retry-test-id": id],
            body: testBytes(1000))
        #expect(reset.resets == 1)
        #expect(harness.app.bytesReceived == before, "no body byte was read")
        #expect(harness.object("bkt", "r") == nil)
        #expect(test(harness, id)["completed"] as? Bool == true)
    }

    @Test("return-broken-stream sends the answer's head and a few body bytes, then closes; the request took effect")
    func brokenStream() throws {
        let harness = try Harness()
        let bytes = testBytes(3 * kib256)
        let id = try create(
            harness,
            [
                "storage.objects.insert": ["return-broken-stream"],
                "storage.objects.get": ["return-broken-stream-after-256K", "return-broken-stream"],
            ])
        let headers: HTTPHeaders = ["x-retry-test-id": id]
        let upload = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=b", headers: headers, body: bytes)
        #expect(upload.midBodyCloses == 1)
        #expect(upload.status == 200)
        #expect(upload.body.count == 4)
        #expect(harness.object("bkt", "b") == Data(bytes), "stored before the answer broke")
        let media = harness.send("GET", "/storage/v1/b/bkt/o/b?alt=media", headers: headers)
        #expect(media.midBodyCloses == 1)
        #expect(media.announcedLength == Int64(bytes.count))
        #expect(media.body == Data(bytes[0..<kib256]))
        let metadata = harness.send("GET", "/storage/v1/b/bkt/o/b", headers: headers)
        #expect(metadata.midBodyCloses == 1)
        #expect(metadata.body.count == 4)
        #expect(test(harness, id)["completed"] as? Bool == true)
        // The same names work in x-emulator-faults plans.
        let plan = try harness.app.installFaultPlan(["return-broken-stream-after-10"])
        let planned = harness.send("GET", "/storage/v1/b/bkt/o/b?alt=media", headers: ["x-emulator-faults": plan])
        #expect(planned.midBodyCloses == 1)
        #expect(planned.body == Data(bytes[0..<10]))
    }

    @Test("return-503-after-256K waits for a request whose body reaches 256 KiB, which commits them, then answers 503")
    func afterBytesWaitsForItsRequest() throws {
        let harness = try Harness()
        let bytes = testBytes(3 * kib256)
        let id = try create(harness, ["storage.objects.insert": ["return-503-after-256K"]])
        let headers: HTTPHeaders = ["x-retry-test-id": id]
        // The session's start has a short body: served, and the instruction stays first.
        let session = harness.startGCSSession(name: "u", headers: headers)
        #expect(test(harness, id)["completed"] as? Bool == false)
        var put = headers
        put.add("Content-Range", "bytes 0-\(bytes.count - 1)/\(bytes.count)")
        #expect(harness.send("PUT", session, headers: put, body: bytes, readSize: 50_000).status == 503)
        #expect(test(harness, id)["completed"] as? Bool == true)
        let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
        #expect(query.headers["Range"] == "bytes=0-\(kib256 - 1)", "the bytes up to 256 KiB are persisted")
    }
}
