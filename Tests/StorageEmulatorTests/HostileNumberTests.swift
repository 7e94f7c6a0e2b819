import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// Numbers taken from requests are range-checked before any arithmetic: a hostile
/// client gets a 400 (or 416) that names the field, never a trap.
@Suite("Hostile numbers")
struct HostileNumberTests {
    static let bucket = "demo.appspot.com"

    @Test(
        "GCS session PUT with out-of-range Content-Range values is 400",
        arguments: [
            "bytes 0-9223372036854775807/*",
            "bytes 0-9223372036854775806/*",
            "bytes 0-9223372036854775806/9223372036854775807",
            "bytes 0-9223372036854775808/*",
            "bytes */9223372036854775807",
            "bytes 0-10/-5",
            "bytes +0-9/*",
            "bytes 0-0x10/*",
        ])
    func gcsContentRange(header: String) throws {
        let harness = try Harness()
        let session = harness.startGCSSession(name: "big")
        let response = harness.send("PUT", session, headers: ["Content-Range": header], body: [1, 2, 3])
        #expect(response.status == 400)
        #expect(response.errorMessage.contains("Content-Range"))
        // The session is intact: a query still answers 308 with nothing stored.
        let query = harness.send("PUT", session, headers: ["Content-Range": "bytes */*"])
        #expect(query.status == 308)
        #expect(query.headers["Range"] == nil)
    }

    @Test("GCS upload announcing a size beyond the object size limit is 400")
    func gcsDeclaredSize() throws {
        let harness = try Harness()
        let response = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=x",
            headers: ["X-Upload-Content-Length": "9223372036854775807"], json: [:])
        #expect(response.status == 400)
        #expect(response.errorMessage.contains("X-Upload-Content-Length"))
    }

    @Test("Firebase upload, finalize announcing an enormous Content-Length is 400")
    func firebaseOffsetPlusLength() throws {
        let harness = try Harness(token: "t")
        let auth: HTTPHeaders = ["Authorization": "Firebase t"]
        var headers = auth
        headers.add("X-Goog-Upload-Protocol", "resumable")
        headers.add("X-Goog-Upload-Command", "start")
        headers.add("X-Goog-Upload-Header-Content-Length", "524288")
        let started = harness.send("POST", "/v0/b/\(Self.bucket)/o?name=x", headers: headers, json: [:])
        #expect(started.status == 200)
        let url = String((started.headers["X-Goog-Upload-URL"] ?? "").dropFirst("http://emulator.test".count))
        var first = auth
        first.add("X-Goog-Upload-Command", "upload")
        first.add("X-Goog-Upload-Offset", "0")
        #expect(harness.send("POST", url, headers: first, body: testBytes(kib256)).status == 200)
        var hostile = auth
        hostile.add("X-Goog-Upload-Command", "upload, finalize")
        hostile.add("X-Goog-Upload-Offset", "262144")
        let response = harness.send(
            "POST", url, headers: hostile, body: [1, 2, 3], declaredLength: 9_223_372_036_854_775_807)
        #expect(response.status == 400)
        var query = auth
        query.add("X-Goog-Upload-Command", "query")
        #expect(harness.send("POST", url, headers: query).headers["X-Goog-Upload-Size-Received"] == "262144")
    }

    @Test(
        "Firebase offsets and declared sizes out of range are 400",
        arguments: [
            ("X-Goog-Upload-Offset", "9223372036854775807"),
            ("X-Goog-Upload-Offset", "99999999999999999999"),
            ("X-Goog-Upload-Offset", "+0"),
            ("X-Goog-Upload-Header-Content-Length", "9223372036854775807"),
            ("X-Goog-Upload-Header-Content-Length", "-1"),
        ])
    func firebaseHeaders(name: String, value: String) throws {
        let harness = try Harness()
        var headers: HTTPHeaders = ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"]
        if name == "X-Goog-Upload-Header-Content-Length" { headers.add(name, value) }
        let started = harness.send("POST", "/v0/b/\(Self.bucket)/o?name=x", headers: headers, json: [:])
        if name == "X-Goog-Upload-Header-Content-Length" {
            #expect(started.status == 400)
            #expect(started.errorMessage.contains(name))
            return
        }
        let url = String((started.headers["X-Goog-Upload-URL"] ?? "").dropFirst("http://emulator.test".count))
        let response = harness.send(
            "POST", url, headers: ["X-Goog-Upload-Command": "upload, finalize", name: value], body: [1])
        #expect(response.status == 400)
        #expect(response.errorMessage.contains(name))
    }

    @Test("download ranges with enormous numbers are 416 or clamped, never a trap")
    func downloadRanges() throws {
        let harness = try Harness()
        let bytes = testBytes(1000)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=r", body: bytes).status == 200)
        func get(_ range: String) -> TestResponder {
            harness.send("GET", "/storage/v1/b/bkt/o/r?alt=media", headers: ["Range": range])
        }
        #expect(get("bytes=9223372036854775807-").status == 416)
        #expect(get("bytes=99999999999999999999-").status == 416)
        let clamped = get("bytes=990-99999999999999999999")
        #expect(clamped.status == 206)
        #expect(clamped.body == Data(bytes[990...]))
        let suffix = get("bytes=-99999999999999999999")
        #expect(suffix.status == 206)
        #expect(suffix.body == Data(bytes))
    }

    @Test(
        "query parameters out of range are 400",
        arguments: [
            "/storage/v1/b/bkt/o?maxResults=99999999999999999999",
            "/storage/v1/b/bkt/o?maxResults=-1",
            "/storage/v1/b/bkt/o/r?generation=99999999999999999999",
            "/storage/v1/b/bkt/o/r?generation=-3",
            "/upload/storage/v1/b/bkt/o?uploadType=media&name=r&ifGenerationMatch=99999999999999999999",
        ])
    func queryParameters(target: String) throws {
        let harness = try Harness()
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=r", body: [1]).status == 200)
        let method = target.hasPrefix("/upload") ? "POST" : "GET"
        #expect(harness.send(method, target, body: method == "POST" ? [1] : []).status == 400)
    }

    @Test("ifMetagenerationMatch that is not a number is 400 rather than ignored")
    func metagenerationMatch() throws {
        let harness = try Harness()
        #expect(harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=r", body: [1]).status == 200)
        let response = harness.send(
            "PATCH", "/storage/v1/b/bkt/o/r?ifMetagenerationMatch=99999999999999999999", json: ["contentType": "a/b"])
        #expect(response.status == 400)
        #expect(response.errorMessage.contains("ifMetagenerationMatch"))
    }
}

extension HostileNumberTests {
    @Test(
        "a rewrite's maxBytesRewrittenPerCall beyond the largest object is 400, with or without a token",
        arguments: ["9223372036853727232", "5497558138880000000"])
    func rewritePerCall(perCall: String) throws {
        let harness = try Harness()
        let bytes = testBytes(3 * 1_048_576)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=s", body: bytes).status == 200)
        let rewrite = "/storage/v1/b/bkt/o/s/rewriteTo/b/bkt/o/d"
        let first = harness.send("POST", rewrite + "?maxBytesRewrittenPerCall=1048576", json: [:])
        #expect(first.status == 200)
        let token = try #require(first.json["rewriteToken"] as? String)
        for target in [
            rewrite + "?maxBytesRewrittenPerCall=\(perCall)",
            rewrite + "?maxBytesRewrittenPerCall=\(perCall)&rewriteToken=\(URLText.encodeComponent(token))",
        ] {
            let response = harness.send("POST", target, json: [:])
            #expect(response.status == 400)
            #expect(response.errorMessage.contains("maxBytesRewrittenPerCall"))
        }
        // The token still finishes the rewrite, with every byte.
        let last = harness.send(
            "POST", rewrite + "?rewriteToken=\(URLText.encodeComponent(token))", json: [:])
        #expect(last.status == 200)
        #expect(harness.object("bkt", "d") == Data(bytes))
    }
}
