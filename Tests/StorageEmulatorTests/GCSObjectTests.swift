import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

@Suite("GCS objects, listing, buckets and auth")
struct GCSObjectTests {
    @discardableResult
    func upload(
        _ harness: Harness, _ name: String, _ bytes: [UInt8], contentType: String = "text/plain"
    ) -> TestResponder {
        harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=\(URLText.encodeComponent(name))",
            headers: ["Content-Type": contentType], body: bytes)
    }

    @Test("GET metadata, alt=media on both paths, generation must match")
    func getObject() throws {
        let harness = try Harness()
        let bytes = testBytes(400_000)
        let generation = try #require(upload(harness, "a/b c", bytes).json["generation"] as? String)
        let metadata = harness.send("GET", "/storage/v1/b/bkt/o/a%2Fb%20c")
        #expect(metadata.status == 200)
        #expect(metadata.json["name"] as? String == "a/b c")
        #expect(metadata.json["size"] as? String == "400000")
        let media = harness.send("GET", "/storage/v1/b/bkt/o/a%2Fb%20c?alt=media")
        #expect(media.status == 200)
        #expect(media.body == Data(bytes))
        #expect(media.headers["Content-Type"] == "text/plain")
        #expect(media.headers["x-goog-generation"] == generation)
        #expect(media.headers["x-goog-hash"]?.contains("crc32c=\(crc32cBase64(bytes))") == true)
        let download = harness.send("GET", "/download/storage/v1/b/bkt/o/a%2Fb%20c?alt=media&generation=\(generation)")
        #expect(download.body == Data(bytes))
        // Unencoded slashes in the object path work too.
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/a/b%20c").status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/a%2Fb%20c?generation=1").status == 404)
        let missing = harness.send("GET", "/storage/v1/b/bkt/o/nope")
        #expect(missing.status == 404)
        let error = try #require(missing.json["error"] as? [String: Any])
        #expect(error["code"] as? Int == 404)
        #expect(error["message"] as? String == "No such object: bkt/nope")
        #expect(((error["errors"] as? [[String: Any]])?.first?["reason"] as? String) == "notFound")
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/bad%ZZ").status == 400)
        #expect(harness.send("GET", "/nothing/here").status == 404)
    }

    @Test("Range downloads: 206 with Content-Range, suffix and open ranges, 416 when unsatisfiable")
    func ranges() throws {
        let harness = try Harness()
        let bytes = testBytes(1000)
        upload(harness, "r", bytes)
        let cases: [(String, Range<Int>)] = [
            ("bytes=0-99", 0..<100), ("bytes=900-", 900..<1000), ("bytes=-10", 990..<1000),
            ("bytes=500-5000", 500..<1000),
        ]
        for (header, expected) in cases {
            let response = harness.send("GET", "/storage/v1/b/bkt/o/r?alt=media", headers: ["Range": header])
            #expect(response.status == 206, "\(header)")
            #expect(response.body == Data(bytes[expected]))
            #expect(response.headers["Content-Range"] == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/1000")
        }
        for header in ["bytes=1000-", "bytes=5-4", "bytes=2000-3000"] {
            let response = harness.send("GET", "/storage/v1/b/bkt/o/r?alt=media", headers: ["Range": header])
            #expect(response.status == 416, "\(header)")
            #expect(response.headers["Content-Range"] == "bytes */1000")
        }
        // Syntax the server does not understand is ignored, as HTTP allows.
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/r?alt=media", headers: ["Range": "items=1-2"]).status == 200)
    }

    @Test("PATCH merges metadata: null removes a custom key, fields can be cleared, metageneration bumps")
    func patch() throws {
        let harness = try Harness()
        let sent = Self.multipart(["name": "p", "metadata": ["a": "1", "b": "2"], "contentLanguage": "en"])
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
                headers: ["Content-Type": "multipart/related; boundary=x"], body: sent
            ).status == 200)
        let patched = harness.send(
            "PATCH", "/storage/v1/b/bkt/o/p",
            json: [
                "metadata": ["a": NSNull(), "c": "3"], "contentType": "application/json", "contentLanguage": NSNull(),
                "size": "999",
            ])
        #expect(patched.status == 200)
        #expect((patched.json["metadata"] as? [String: String]) == ["b": "2", "c": "3"])
        #expect(patched.json["contentType"] as? String == "application/json")
        #expect(patched.json["contentLanguage"] == nil)
        #expect(patched.json["metageneration"] as? String == "2")
        #expect(patched.json["size"] as? String == "1")
        let cleared = harness.send("PATCH", "/storage/v1/b/bkt/o/p", json: ["metadata": NSNull()])
        #expect(cleared.json["metadata"] == nil)
        #expect(cleared.json["metageneration"] as? String == "3")
        #expect(harness.send("PATCH", "/storage/v1/b/bkt/o/p", json: ["metadata": ["x": ["nested"]]]).status == 400)
        #expect(harness.send("PATCH", "/storage/v1/b/bkt/o/nope", json: ["contentType": "a/b"]).status == 404)
        #expect(
            harness.send("PATCH", "/storage/v1/b/bkt/o/p?ifMetagenerationMatch=1", json: ["contentType": "a/b"]).status
                == 412)
        #expect(harness.send("PATCH", "/storage/v1/b/bkt/o/p", body: Array("not json".utf8)).status == 400)
    }

    static func multipart(_ metadata: [String: Any], media: [UInt8] = [7]) -> [UInt8] {
        GCSUploadTests.multipartBody(boundary: "x", metadata: metadata, media: media)
    }

    @Test("DELETE: 204, then 404; a generation that does not match is 404 and keeps the object")
    func delete() throws {
        let harness = try Harness()
        let generation = try #require(upload(harness, "d", [1]).json["generation"] as? String)
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/d?generation=12345").status == 404)
        #expect(harness.object("bkt", "d") != nil)
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/d?generation=\(generation)").status == 204)
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/d").status == 404)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/d").status == 404)
    }

    @Test("Listing 2,500 objects: sorted, paginated with prefix and delimiter, nothing lost or repeated")
    func listing() throws {
        let harness = try Harness()
        var names: [String] = []
        for index in 0..<2500 {
            let directory = ["a", "b", "c", "d", "e"][index % 5]
            let name = index % 7 == 0 ? "\(directory)/sub\(index % 3)/f\(index)" : "\(directory)/f\(index)"
            names.append(name)
        }
        for name in names.shuffled() {
            var record = ObjectRecord(bucket: "bkt", name: name)
            record.size = 0
            _ = try harness.store.createBucket("bkt")
            _ = try harness.store.commit(try harness.store.makeStagingWriter(bucket: "bkt"), record: record)
        }
        func listAll(_ query: String) -> (items: [String], prefixes: [String], pages: Int) {
            var items: [String] = []
            var prefixes: [String] = []
            var token: String?
            var pages = 0
            repeat {
                var target = "/storage/v1/b/bkt/o?\(query)"
                if let token { target += "&pageToken=\(URLText.encodeComponent(token))" }
                let response = harness.send("GET", target)
                #expect(response.status == 200)
                items += (response.json["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
                prefixes += response.json["prefixes"] as? [String] ?? []
                token = response.json["nextPageToken"] as? String
                pages += 1
            } while token != nil && pages < 1000
            return (items, prefixes, pages)
        }
        let everything = listAll("maxResults=1000")
        let sorted = everything.items == names.sorted { NameRules.precedes($0, $1) }
        #expect(sorted)
        #expect(everything.pages == 3)
        let small = listAll("maxResults=97")
        let sameItems = small.items == everything.items
        #expect(sameItems)
        #expect(small.pages == 26)
        let underB = listAll("prefix=b%2F&delimiter=%2F&maxResults=33")
        #expect(underB.prefixes == ["b/sub0/", "b/sub1/", "b/sub2/"])
        let directItems =
            underB.items
            == names.filter { $0.hasPrefix("b/") && !$0.hasPrefix("b/sub") }.sorted { NameRules.precedes($0, $1) }
        #expect(directItems)
        // Prefixes count toward maxResults and a prefix spanning pages is not repeated.
        let top = listAll("delimiter=%2F&maxResults=2")
        #expect(top.prefixes == ["a/", "b/", "c/", "d/", "e/"])
        #expect(top.items.isEmpty)
        #expect(top.pages == 3)
        let one = harness.send("GET", "/storage/v1/b/bkt/o?delimiter=%2F&maxResults=1")
        #expect(one.json["prefixes"] as? [String] == ["a/"])
        #expect(one.json["kind"] as? String == "storage#objects")
        #expect(harness.send("GET", "/storage/v1/b/bkt/o?pageToken=%25%25%25").status == 400)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o?maxResults=0").status == 400)
        let empty = harness.send("GET", "/storage/v1/b/bkt/o?prefix=zzz")
        #expect(empty.json["items"] == nil && empty.json["nextPageToken"] == nil)
    }

    @Test("Buckets: create (409 when it exists), get, 404 without auto-creation")
    func buckets() throws {
        let harness = try Harness(autoCreate: false)
        let created = harness.send("POST", "/storage/v1/b?project=p", json: ["name": "new-bucket"])
        #expect(created.status == 200)
        #expect(created.json["name"] as? String == "new-bucket")
        #expect(created.json["kind"] as? String == "storage#bucket")
        #expect(harness.send("POST", "/storage/v1/b", json: ["name": "new-bucket"]).status == 409)
        #expect(harness.send("POST", "/storage/v1/b", json: ["name": "Bad Name"]).status == 400)
        #expect(harness.send("POST", "/storage/v1/b", json: [:]).status == 400)
        #expect(harness.send("GET", "/storage/v1/b/new-bucket").status == 200)
        #expect(harness.send("GET", "/storage/v1/b/missing").status == 404)
        let upload = harness.send("POST", "/upload/storage/v1/b/missing/o?uploadType=media&name=x", body: [1])
        #expect(upload.status == 404)
        #expect(upload.errorMessage == "The specified bucket does not exist.")
        #expect(harness.send("GET", "/storage/v1/b/missing/o").status == 404)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/new-bucket/o?uploadType=media&name=x", body: [1]).status == 200)
        // With auto-creation, the first use creates the bucket.
        let auto = try Harness()
        #expect(auto.send("POST", "/upload/storage/v1/b/fresh/o?uploadType=media&name=x", body: [1]).status == 200)
        #expect(auto.send("GET", "/storage/v1/b/fresh").status == 200)
    }

    @Test("Auth: a required token makes GCS requests without Bearer <token> 401; session URLs need none")
    func auth() throws {
        let harness = try Harness(token: "secret")
        let anonymous = harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x", body: [1])
        #expect(anonymous.status == 401)
        #expect(((anonymous.json["error"] as? [String: Any])?["code"] as? Int) == 401)
        #expect(anonymous.headers["WWW-Authenticate"] != nil)
        #expect(
            harness.send(
                "POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x",
                headers: ["Authorization": "Bearer wrong"],
                body: [1]
            ).status == 401)
        let authorized: HTTPHeaders = ["Authorization": "Bearer secret"]
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=x", headers: authorized, body: [1])
                .status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x").status == 401)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/x", headers: authorized).status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o").status == 401)
        #expect(harness.send("GET", "/download/storage/v1/b/bkt/o/x?alt=media").status == 401)
        let session = harness.startGCSSession(name: "s", headers: authorized)
        #expect(harness.send("PUT", session, headers: ["Content-Range": "bytes 0-0/1"], body: [1]).status == 200)
    }
}
