import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

@Suite("GCS buckets, versioning, listing options and gcloud's request forms")
struct GCSVersioningTests {
    @discardableResult
    static func upload(_ harness: Harness, _ name: String, _ bytes: [UInt8], bucket: String = "bkt") -> [String: Any] {
        harness.send(
            "POST", "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=\(URLText.encodeComponent(name))",
            body: bytes
        ).json
    }

    @Test(
        "versioned buckets keep noncurrent generations: addressed, listed, patched, deleted, persisted",
        arguments: ["memory", "directory"])
    func versions(backing: String) throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let store: any ObjectStore = backing == "memory" ? MemoryObjectStore() : try DirectoryObjectStore(root: root)
        let harness = try Harness(store: store)
        #expect(
            harness.send("POST", "/storage/v1/b?project=p", json: ["name": "bkt", "versioning": ["enabled": true]])
                .json["versioning"] as? [String: Bool] == ["enabled": true])
        let one = try #require(Self.upload(harness, "v", [1])["generation"] as? String)
        let two = try #require(Self.upload(harness, "v", [2, 2])["generation"] as? String)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/v?alt=media&generation=\(one)").body == Data([1]))
        #expect(harness.send("GET", "/download/storage/v1/b/bkt/o/v?alt=media&generation=\(one)").body == Data([1]))
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/v?alt=media").body == Data([2, 2]))
        let old = harness.send("GET", "/storage/v1/b/bkt/o/v?generation=\(one)").json
        #expect(old["timeDeleted"] is String)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/v").json["timeDeleted"] == nil)
        let listed = harness.send("GET", "/storage/v1/b/bkt/o?versions=true").json["items"] as? [[String: Any]]
        #expect(listed?.compactMap { $0["generation"] as? String } == [one, two])
        #expect((harness.send("GET", "/storage/v1/b/bkt/o").json["items"] as? [[String: Any]])?.count == 1)
        // Pages of one over versions of one name lose and repeat nothing.
        var seen: [String] = []
        var token: String?
        repeat {
            let page = harness.send(
                "GET", "/storage/v1/b/bkt/o?versions=true&maxResults=1" + (token.map { "&pageToken=\($0)" } ?? "")
            ).json
            seen += (page["items"] as? [[String: Any]] ?? []).compactMap { $0["generation"] as? String }
            token = page["nextPageToken"] as? String
        } while token != nil && seen.count < 5
        #expect(seen == [one, two])
        let patched = harness.send("PATCH", "/storage/v1/b/bkt/o/v?generation=\(one)", json: ["metadata": ["k": "v"]])
        #expect(patched.json["metageneration"] as? String == "2")
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/v").json["metageneration"] as? String == "1")
        // Deleting the live version keeps it; deleting a generation removes it.
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/v").status == 204)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/v").status == 404)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/v?alt=media&generation=\(two)").body == Data([2, 2]))
        #expect(harness.send("DELETE", "/storage/v1/b/bkt").status == 409, "noncurrent versions keep a bucket")
        if backing == "directory" {
            let reopened = try DirectoryObjectStore(root: root)
            #expect(reopened.bucket("bkt")?.versioning == true)
            #expect(reopened.versions(bucket: "bkt").map(\.generation) == [Int64(one), Int64(two)])
            #expect(reopened.versions(bucket: "bkt").first?.attributes.metadata == ["k": "v"])
            let files = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("b-bkt").path)
            #expect(files.allSatisfy { $0 == "bucket.json" || SafeFileName.isSafe($0) }, "\(files)")
        }
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/v?generation=\(one)").status == 204)
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/v?generation=\(two)").status == 204)
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/v?generation=\(two)").status == 404)
        #expect(harness.send("DELETE", "/storage/v1/b/bkt").status == 204)
        #expect(harness.send("GET", "/storage/v1/b/bkt").status == 404)
    }

    @Test("without versioning, replaced and deleted objects are gone; turning it on and off is a patch")
    func bucketCalls() throws {
        let harness = try Harness()
        let created = harness.send("POST", "/storage/v1/b?project=p", json: ["name": "plain"])
        #expect(created.json["versioning"] == nil)
        Self.upload(harness, "x", [1], bucket: "plain")
        Self.upload(harness, "x", [2], bucket: "plain")
        #expect((harness.send("GET", "/storage/v1/b/plain/o?versions=True").json["items"] as? [Any])?.count == 1)
        let patched = harness.send("PATCH", "/storage/v1/b/plain", json: ["versioning": ["enabled": true]])
        #expect(patched.json["versioning"] as? [String: Bool] == ["enabled": true])
        #expect(patched.json["metageneration"] as? String == "2")
        #expect(harness.send("PATCH", "/storage/v1/b/plain?ifMetagenerationMatch=1", json: [:]).status == 412)
        #expect(harness.send("PATCH", "/storage/v1/b/plain", json: ["versioning": "yes"]).status == 400)
        #expect(harness.send("PUT", "/storage/v1/b/plain", json: [:]).json["versioning"] == nil, "update replaces it")
        _ = harness.send("POST", "/storage/v1/b?project=p", json: ["name": "another"])
        let list = harness.send("GET", "/storage/v1/b?project=p&maxResults=1")
        #expect((list.json["items"] as? [[String: Any]])?.first?["name"] as? String == "another")
        let token = try #require(list.json["nextPageToken"] as? String)
        let next = harness.send("GET", "/storage/v1/b?project=p&maxResults=1&pageToken=\(token)")
        #expect((next.json["items"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["plain"])
        #expect(next.json["nextPageToken"] == nil)
        #expect(harness.send("DELETE", "/storage/v1/b/plain").status == 409)
        #expect(harness.send("DELETE", "/storage/v1/b/plain/o/x").status == 204)
        #expect(harness.send("DELETE", "/storage/v1/b/plain").status == 204)
        #expect(harness.send("DELETE", "/storage/v1/b/plain").status == 404)
        let layout = harness.send("GET", "/storage/v1/b/another/storageLayout")
        #expect((layout.json["hierarchicalNamespace"] as? [String: Bool]) == ["enabled": false])
        #expect(
            harness.send("GET", "/storage/v1/b/another/managedFolders").json["kind"] as? String
                == "storage#managedFolders")
        #expect(harness.send("GET", "/storage/v1/b/missing-bucket/storageLayout").status == 404)
    }

    @Test("gcloud's forms: a boundary in single quotes with LF line breaks, resumable starts under /resumable/")
    func gcloudForms() throws {
        let harness = try Harness()
        let media = Array("line one\r\nline two\n".utf8)
        let boundary = "===============6079732393126729298=="
        let body =
            Array(
                "--\(boundary)\nContent-Type: application/json\nMIME-Version: 1.0\n\n{\"name\": \"g.txt\"}\n--\(boundary)\nContent-Type: text/plain\n\n"
                    .utf8) + media
            + Array("\n--\(boundary)--\n".utf8)
        let answer = harness.send(
            "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
            headers: ["Content-Type": "multipart/related; boundary='\(boundary)'"], body: body, readSize: 7)
        #expect(answer.status == 200, "\(answer.errorMessage)")
        #expect(harness.object("bkt", "g.txt") == Data(media))
        // CRLF bodies keep the CR before the delimiter out of the object, LF bodies keep a media
        // part's last CR in it (1 in 256 random files ends in one), whatever the read size.
        for ending in ["", "\r", "\r\n", "\n\r"] {
            let media = Array("line one\r\nline two\(ending)".utf8)
            for readSize in [1, 3, 7, 64] {
                let crlf = GCSUploadTests.multipartBody(boundary: "b", metadata: ["name": "c"], media: media)
                harness.send(
                    "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
                    headers: ["Content-Type": "multipart/related; boundary=\"b\""], body: crlf, readSize: readSize)
                #expect(
                    harness.object("bkt", "c") == Data(media),
                    "CRLF, read size \(readSize), ending \(Array(ending.utf8))")
                let lf =
                    Array("--\(boundary)\nContent-Type: application/json\n\n{\"name\": \"l\"}\n--\(boundary)\n\n".utf8)
                    + media + Array("\n--\(boundary)--\n".utf8)
                harness.send(
                    "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart",
                    headers: ["Content-Type": "multipart/related; boundary='\(boundary)'"], body: lf, readSize: readSize
                )
                #expect(
                    harness.object("bkt", "l") == Data(media), "LF, read size \(readSize), ending \(Array(ending.utf8))"
                )
            }
        }
        let start = harness.send(
            "POST", "/resumable/upload/storage/v1/b/bkt/o?uploadType=resumable&name=r", json: [:])
        #expect(start.status == 200)
        let location = try #require(start.headers["Location"])
        let session = String(location.dropFirst("http://emulator.test".count))
        #expect(harness.send("PUT", session, body: [1, 2, 3]).status == 200)
        #expect(harness.object("bkt", "r") == Data([1, 2, 3]))
    }

    @Test("listing: offsets, matchGlob, includeTrailingDelimiter, includeFoldersAsPrefixes, pages without a delimiter")
    func listingOptions() throws {
        let harness = try Harness()
        for name in ["a", "b/1", "b/2", "c.txt", "d/", "e", "x/y/z.txt"] { _ = Self.upload(harness, name, [0]) }
        func names(_ query: String) -> [String] {
            (harness.send("GET", "/storage/v1/b/bkt/o?\(query)").json["items"] as? [[String: Any]] ?? []).compactMap {
                $0["name"] as? String
            }
        }
        #expect(names("startOffset=b/2&endOffset=d/") == ["b/2", "c.txt"])
        #expect(names("matchGlob=**/*.txt") == ["c.txt", "x/y/z.txt"])
        #expect(names("matchGlob=b/*") == ["b/1", "b/2"])
        #expect(names("matchGlob=*") == ["a", "c.txt", "e"])
        #expect(names("matchGlob=%7Ba,e%7D") == ["a", "e"])
        #expect(names("matchGlob=%5B!a-c%5D") == ["e"])
        #expect(harness.send("GET", "/storage/v1/b/bkt/o?matchGlob=%5Ba").status == 400)
        let trailing = harness.send("GET", "/storage/v1/b/bkt/o?delimiter=/&includeTrailingDelimiter=true").json
        #expect(
            (trailing["items"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["a", "c.txt", "d/", "e"])
        #expect(trailing["prefixes"] as? [String] == ["b/", "d/", "x/"])
        // Paged, the same entries come back, and no page holds more than it was asked for: the
        // item `d/` and its prefix `d/` are never split, and never overfill a page.
        for maxResults in 1...4 {
            var items: [String] = []
            var prefixes: [String] = []
            var token: String?
            var pages = 0
            repeat {
                let page = harness.send(
                    "GET",
                    "/storage/v1/b/bkt/o?delimiter=/&includeTrailingDelimiter=true&maxResults=\(maxResults)"
                        + (token.map { "&pageToken=\($0)" } ?? "")
                ).json
                let pageItems = (page["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
                let pagePrefixes = page["prefixes"] as? [String] ?? []
                #expect(
                    pageItems.count + pagePrefixes.count <= max(maxResults, pageItems == ["d/"] ? 2 : 1),
                    "maxResults \(maxResults): \(pageItems) \(pagePrefixes)")
                items += pageItems
                prefixes += pagePrefixes
                token = page["nextPageToken"] as? String
                pages += 1
            } while token != nil && pages < 20
            #expect(items == ["a", "c.txt", "d/", "e"], "maxResults \(maxResults)")
            #expect(prefixes == ["b/", "d/", "x/"], "maxResults \(maxResults)")
        }
        #expect(harness.send("GET", "/storage/v1/b/bkt/o?includeFoldersAsPrefixes=true").status == 400)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o?delimiter=/&includeFoldersAsPrefixes=true").status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o?versions=maybe").status == 400)
        var all: [String] = []
        var token: String?
        repeat {
            let page = harness.send(
                "GET", "/storage/v1/b/bkt/o?maxResults=2" + (token.map { "&pageToken=\($0)" } ?? "")
            ).json
            all += (page["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            token = page["nextPageToken"] as? String
        } while token != nil && all.count < 20
        #expect(all == ["a", "b/1", "b/2", "c.txt", "d/", "e", "x/y/z.txt"])
    }

    @Test("matchGlob: stars stop at slashes, ** crosses them, **/ matches zero or more segments")
    func glob() throws {
        let cases: [(String, String, Bool)] = [
            ("*.txt", "a.txt", true), ("*.txt", "d/a.txt", false), ("**.txt", "d/a.txt", true),
            ("**/a.txt", "a.txt", true), ("**/a.txt", "x/y/a.txt", true), ("**/a.txt", "xa.txt", false),
            ("a?c", "abc", true), ("a?c", "a/c", false), ("[a-c]x", "bx", true), ("[!a-c]x", "bx", false),
            ("{foo,bar}/*", "bar/1", true), ("{foo,bar}/*", "baz/1", false), ("a\\*", "a*", true),
            ("a\\*", "ab", false),
            ("é?", "éa", true), ("", "", true), ("", "a", false),
        ]
        for (pattern, name, expected) in cases {
            #expect(try ObjectNameGlob(pattern).matches(name) == expected, "\(pattern) ~ \(name)")
        }
        for bad in ["[abc", "{a,b", "{a{b}}", "x\\"] {
            #expect(throws: HTTPError.self, "\(bad)") { try ObjectNameGlob(bad) }
        }
    }
}
