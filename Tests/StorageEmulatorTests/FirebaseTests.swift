import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

@Suite("Firebase Storage v0")
struct FirebaseTests {
    static let bucket = "demo.appspot.com"

    /// Starts a v0 resumable upload; returns the upload URL's path and query.
    func start(_ harness: Harness, name: String, size: Int?, headers: HTTPHeaders = [:]) -> String {
        var headers = headers
        headers.add("X-Goog-Upload-Protocol", "resumable")
        headers.add("X-Goog-Upload-Command", "start")
        headers.add("X-Goog-Upload-Header-Content-Type", "image/jpeg")
        if let size { headers.add("X-Goog-Upload-Header-Content-Length", String(size)) }
        let response = harness.send(
            "POST", "/v0/b/\(Self.bucket)/o?name=\(URLText.encodeComponent(name))", headers: headers,
            json: ["name": name, "contentType": "image/jpeg", "metadata": ["owner": "me"]])
        #expect(response.status == 200)
        #expect(response.headers["X-Goog-Upload-Status"] == "active")
        #expect(response.headers["X-Goog-Upload-Chunk-Granularity"] == "262144")
        let url = response.headers["X-Goog-Upload-URL"] ?? ""
        #expect(
            url.hasPrefix("http://emulator.test/v0/b/\(Self.bucket)/o?name=\(URLText.encodeComponent(name))&upload_id=")
        )
        #expect(url.hasSuffix("&upload_protocol=resumable"))
        return String(url.dropFirst("http://emulator.test".count))
    }

    func command(
        _ harness: Harness, _ url: String, _ command: String, offset: Int? = nil, body: [UInt8] = [],
        headers: HTTPHeaders = [:], readSize: Int = 100_000
    ) -> TestResponder {
        var headers = headers
        headers.add("X-Goog-Upload-Command", command)
        if let offset { headers.add("X-Goog-Upload-Offset", String(offset)) }
        return harness.send("POST", url, headers: headers, body: body, readSize: readSize)
    }

    @Test("Resumable upload in chunks: offsets honoured, query reports size, finalize returns Firebase metadata")
    func resumable() throws {
        let harness = try Harness()
        let bytes = testBytes(2 * kib256 + 500)
        let url = start(harness, name: "photos/cat.jpg", size: bytes.count)
        let query = command(harness, url, "query")
        #expect(query.status == 200)
        #expect(query.headers["X-Goog-Upload-Status"] == "active")
        #expect(query.headers["X-Goog-Upload-Size-Received"] == "0")
        let first = command(harness, url, "upload", offset: 0, body: Array(bytes[0..<kib256]))
        #expect(first.status == 200)
        #expect(first.headers["X-Goog-Upload-Status"] == "active")
        #expect(command(harness, url, "query").headers["X-Goog-Upload-Size-Received"] == String(kib256))
        let second = command(
            harness, url, "upload", offset: kib256, body: Array(bytes[kib256..<2 * kib256]), readSize: 999)
        #expect(second.status == 200)
        let last = command(
            harness, url, "upload, finalize", offset: 2 * kib256, body: Array(bytes[(2 * kib256)..<bytes.count]))
        #expect(last.status == 200)
        #expect(last.headers["X-Goog-Upload-Status"] == "final")
        let json = last.json
        #expect(json["name"] as? String == "photos/cat.jpg")
        #expect(json["bucket"] as? String == Self.bucket)
        #expect(json["size"] as? String == String(bytes.count))
        #expect(json["contentType"] as? String == "image/jpeg")
        #expect(json["md5Hash"] as? String == md5Base64(bytes))
        #expect(json["crc32c"] as? String == crc32cBase64(bytes))
        #expect(json["storageClass"] as? String == "STANDARD")
        #expect(json["contentEncoding"] as? String == "identity")
        #expect((json["contentDisposition"] as? String)?.hasPrefix("inline; filename*=utf-8''cat.jpg") == true)
        #expect((json["metadata"] as? [String: String]) == ["owner": "me"])
        let tokens = try #require(json["downloadTokens"] as? String)
        #expect(!tokens.isEmpty && !tokens.contains(","))
        #expect(harness.object(Self.bucket, "photos/cat.jpg") == Data(bytes))
        // After finalizing, query says final; the session answers again with the metadata.
        let after = command(harness, url, "query")
        #expect(after.headers["X-Goog-Upload-Status"] == "final")
        #expect(after.json["generation"] as? String == json["generation"] as? String)
    }

    @Test("Offsets: beyond the committed size is 400; below it the re-sent bytes are skipped")
    func offsets() throws {
        let harness = try Harness()
        let bytes = testBytes(3 * kib256)
        let url = start(harness, name: "o", size: bytes.count)
        #expect(command(harness, url, "upload", offset: kib256, body: Array(bytes[kib256..<2 * kib256])).status == 400)
        #expect(command(harness, url, "upload", body: Array(bytes[0..<kib256])).status == 400)
        #expect(command(harness, url, "upload", offset: 0, body: Array(bytes[0..<2 * kib256])).status == 200)
        // A retried request from offset 256 KiB: the first 256 KiB of it are already stored.
        let retried = command(
            harness, url, "upload, finalize", offset: kib256, body: Array(bytes[kib256..<bytes.count]))
        #expect(retried.status == 200)
        #expect(retried.json["size"] as? String == String(bytes.count))
        #expect(harness.object(Self.bucket, "o") == Data(bytes))
    }

    @Test("Non-final chunks must be multiples of 256 KiB; finalize needs the declared size")
    func granularityAndSize() throws {
        let harness = try Harness()
        let url = start(harness, name: "g", size: 1000)
        #expect(command(harness, url, "upload", offset: 0, body: testBytes(1000)).status == 400)
        #expect(command(harness, url, "query").headers["X-Goog-Upload-Size-Received"] == "0")
        #expect(command(harness, url, "upload, finalize", offset: 0, body: testBytes(999)).status == 400)
        #expect(command(harness, url, "upload, finalize", offset: 0, body: testBytes(1001)).status == 400)
        #expect(command(harness, url, "query").headers["X-Goog-Upload-Size-Received"] == "0")
        #expect(command(harness, url, "bogus").status == 400)
        #expect(command(harness, url, "upload, finalize", offset: 0, body: testBytes(1000)).status == 200)
        // A separate `finalize` command with no body.
        let separate = start(harness, name: "s", size: nil)
        #expect(command(harness, separate, "upload", offset: 0, body: testBytes(kib256)).status == 200)
        let done = command(harness, separate, "finalize")
        #expect(done.status == 200)
        #expect(done.json["size"] as? String == String(kib256))
    }

    @Test("Cancel: 200, then the upload URL is gone (404)")
    func cancel() throws {
        let harness = try Harness()
        let url = start(harness, name: "c", size: kib256 * 2)
        #expect(command(harness, url, "upload", offset: 0, body: testBytes(kib256)).status == 200)
        let cancelled = command(harness, url, "cancel")
        #expect(cancelled.status == 200)
        #expect(cancelled.headers["X-Goog-Upload-Status"] == "cancelled")
        #expect(command(harness, url, "query").status == 404)
        #expect(command(harness, url, "upload", offset: kib256, body: testBytes(kib256)).status == 404)
        #expect(harness.object(Self.bucket, "c") == nil)
        let error = try #require(command(harness, url, "query").json["error"] as? [String: Any])
        #expect(error["code"] as? Int == 404)
    }

    @Test("Multipart and raw uploads create objects with a download token")
    func singleRequestUploads() throws {
        let harness = try Harness()
        let media = testBytes(3000)
        let body = GCSUploadTests.multipartBody(
            boundary: "fb", metadata: ["name": "m", "contentType": "text/csv"], media: media)
        let multipart = harness.send(
            "POST", "/v0/b/\(Self.bucket)/o?name=m",
            headers: ["X-Goog-Upload-Protocol": "multipart", "Content-Type": "multipart/related; boundary=fb"],
            body: body)
        #expect(multipart.status == 200)
        #expect(multipart.json["contentType"] as? String == "text/csv")
        #expect((multipart.json["downloadTokens"] as? String)?.isEmpty == false)
        #expect(harness.object(Self.bucket, "m") == Data(media))
        let raw = harness.send(
            "POST", "/v0/b/\(Self.bucket)/o?name=raw%2Ffile", headers: ["Content-Type": "text/plain"], body: [1, 2])
        #expect(raw.status == 200)
        #expect(raw.json["name"] as? String == "raw/file")
        #expect(harness.send("POST", "/v0/b/\(Self.bucket)/o", body: [1]).status == 400)
        #expect(
            harness.send("POST", "/v0/b/\(Self.bucket)/o?name=x", headers: ["X-Goog-Upload-Protocol": "weird"]).status
                == 400)
    }

    @Test("GET metadata, download with a token or auth, 403 for a wrong token, 404 when missing")
    func download() throws {
        let harness = try Harness(token: "idtoken")
        let auth: HTTPHeaders = ["Authorization": "Firebase idtoken"]
        let bytes = testBytes(5000)
        let uploaded = harness.send(
            "POST", "/v0/b/\(Self.bucket)/o?name=a%2Fb.txt", headers: auth, body: bytes)
        #expect(uploaded.status == 200)
        let token = try #require(uploaded.json["downloadTokens"] as? String)
        #expect(harness.send("GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt").status == 401)
        let metadata = harness.send("GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt", headers: auth)
        #expect(metadata.status == 200)
        #expect(metadata.json["size"] as? String == "5000")
        // `owner` is no secret: with a token configured it opens nothing unless asked for (see TokenTests).
        for owner in ["Bearer owner", "Firebase owner"] {
            #expect(
                harness.send("GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt", headers: ["Authorization": owner]).status
                    == 401)
        }
        #expect(
            harness.send("GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt", headers: ["Authorization": "Firebase nobody"])
                .status
                == 401)
        let withToken = harness.send("GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt?alt=media&token=\(token)")
        #expect(withToken.status == 200)
        #expect(withToken.body == Data(bytes))
        let ranged = harness.send(
            "GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt?alt=media&token=\(token)", headers: ["Range": "bytes=10-19"])
        #expect(ranged.status == 206)
        #expect(ranged.body == Data(bytes[10..<20]))
        #expect(
            harness.send("GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt?alt=media&token=wrong", headers: auth).status == 403)
        #expect(harness.send("GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt?alt=media").status == 401)
        #expect(harness.send("GET", "/v0/b/\(Self.bucket)/o/a%2Fb.txt?alt=media", headers: auth).body == Data(bytes))
        #expect(harness.send("GET", "/v0/b/\(Self.bucket)/o/missing", headers: auth).status == 404)
        #expect(harness.send("GET", "/v0/b/\(Self.bucket)/o/missing?alt=media&token=x").status == 404)
        let unauthorized = harness.send("POST", "/v0/b/\(Self.bucket)/o?name=x", body: [1])
        #expect(unauthorized.status == 401)
        #expect(((unauthorized.json["error"] as? [String: Any])?["code"] as? Int) == 401)
        // GCS-style Bearer tokens are not accepted on v0 unless they are the token itself.
        #expect(
            harness.send("POST", "/v0/b/\(Self.bucket)/o?name=x", headers: ["Authorization": "Bearer nope"], body: [1])
                .status == 401)
    }

    @Test("PATCH metadata and DELETE")
    func patchAndDelete() throws {
        let harness = try Harness()
        let url = start(harness, name: "p", size: 3)
        #expect(command(harness, url, "upload, finalize", offset: 0, body: [1, 2, 3]).status == 200)
        let patched = harness.send(
            "PATCH", "/v0/b/\(Self.bucket)/o/p",
            json: [
                "contentType": "text/plain", "cacheControl": "max-age=60", "metadata": ["owner": NSNull(), "k": "v"],
            ])
        #expect(patched.status == 200)
        #expect(patched.json["contentType"] as? String == "text/plain")
        #expect(patched.json["cacheControl"] as? String == "max-age=60")
        #expect((patched.json["metadata"] as? [String: String]) == ["k": "v"])
        #expect(patched.json["metageneration"] as? String == "2")
        #expect(harness.send("PATCH", "/v0/b/\(Self.bucket)/o/nope", json: ["contentType": "a/b"]).status == 404)
        #expect(harness.send("DELETE", "/v0/b/\(Self.bucket)/o/p").status == 204)
        #expect(harness.send("DELETE", "/v0/b/\(Self.bucket)/o/p").status == 404)
        #expect(harness.send("GET", "/v0/b/\(Self.bucket)/o/p").status == 404)
    }

    @Test("List with prefix, delimiter and pages: {prefixes, items:[{name,bucket}], nextPageToken}")
    func list() throws {
        let harness = try Harness()
        for name in ["root1", "root2", "dir/a", "dir/b", "dir/sub/c", "other/x"] {
            #expect(
                harness.send("POST", "/v0/b/\(Self.bucket)/o?name=\(URLText.encodeComponent(name))", body: [1]).status
                    == 200)
        }
        let top = harness.send("GET", "/v0/b/\(Self.bucket)/o?delimiter=%2F")
        #expect(top.json["prefixes"] as? [String] == ["dir/", "other/"])
        let items = (top.json["items"] as? [[String: String]]) ?? []
        #expect(items == [["name": "root1", "bucket": Self.bucket], ["name": "root2", "bucket": Self.bucket]])
        #expect(top.json["nextPageToken"] == nil)
        var seen: [String] = []
        var token: String?
        repeat {
            var target = "/v0/b/\(Self.bucket)/o?prefix=dir%2F&delimiter=%2F&maxResults=1"
            if let token { target += "&pageToken=\(URLText.encodeComponent(token))" }
            let page = harness.send("GET", target)
            seen += (page.json["prefixes"] as? [String]) ?? []
            seen += ((page.json["items"] as? [[String: String]]) ?? []).compactMap { $0["name"] }
            token = page.json["nextPageToken"] as? String
        } while token != nil && seen.count < 10
        #expect(seen == ["dir/a", "dir/b", "dir/sub/"])
    }
}
