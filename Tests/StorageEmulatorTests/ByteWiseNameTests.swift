import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// GCS compares object names byte by byte; Swift's `String` compares them canonically,
/// so `café` in NFC and in NFD would be one object. Every store and listing must keep
/// them apart.
@Suite("Byte-wise object names")
struct ByteWiseNameTests {
    /// `café` with a precomposed é (NFC) and with e + combining acute accent (NFD).
    static let nfc = "caf\u{E9}"
    static let nfd = "cafe\u{301}"

    static func stores(_ directory: URL) throws -> [(String, any ObjectStore)] {
        [("memory", MemoryObjectStore()), ("directory", try DirectoryObjectStore(root: directory))]
    }

    @Test("stores keep NFC and NFD names apart: put, get, list, delete, reload")
    func stores() throws {
        #expect(Self.nfc == Self.nfd, "Swift compares canonically; the premise of this test")
        let parent = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        for (kind, store) in try Self.stores(parent.appendingPathComponent("s")) {
            _ = try store.createBucket("bkt")
            try put(store, "bkt", Self.nfc, [1])
            try put(store, "bkt", Self.nfd, [2, 2])
            #expect(store.record(bucket: "bkt", name: Self.nfc)?.size == 1, "\(kind)")
            #expect(store.record(bucket: "bkt", name: Self.nfd)?.size == 2, "\(kind)")
            let names = store.records(bucket: "bkt").map { Array($0.name.utf8) }
            #expect(names == [Array(Self.nfd.utf8), Array(Self.nfc.utf8)], "\(kind): both, in byte order")
            #expect(try store.delete(bucket: "bkt", name: Self.nfd, generation: nil), "\(kind)")
            #expect(store.record(bucket: "bkt", name: Self.nfd) == nil, "\(kind)")
            let left = try #require(store.record(bucket: "bkt", name: Self.nfc), "\(kind)")
            #expect(Array(left.name.utf8) == Array(Self.nfc.utf8), "\(kind)")
            #expect(try store.readAll(left) == Data([1]), "\(kind)")
        }
        // A directory store reloaded from disk sees both, and deleting one leaves no file of it behind.
        let root = parent.appendingPathComponent("reload")
        let first = try DirectoryObjectStore(root: root)
        _ = try first.createBucket("bkt")
        try put(first, "bkt", Self.nfc, [1])
        try put(first, "bkt", Self.nfd, [2, 2])
        let reloaded = try DirectoryObjectStore(root: root)
        #expect(reloaded.records(bucket: "bkt").count == 2)
        #expect(try reloaded.delete(bucket: "bkt", name: Self.nfc, generation: nil))
        let files = allFiles(under: root).filter { $0.contains("o-") }
        #expect(files.count == 2, "only the NFD object's bytes and metadata: \(files)")
        #expect(files.allSatisfy { $0.contains(SafeFileName.percentEncode(Self.nfd)) })
    }

    @Test("listings compare prefixes, delimiters and page tokens byte by byte", arguments: ["memory", "directory"])
    func listings(kind: String) throws {
        let parent = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        let store: any ObjectStore =
            kind == "memory" ? MemoryObjectStore() : try DirectoryObjectStore(root: parent)
        let harness = try Harness(store: store)
        for name in [Self.nfc + "/1", Self.nfd + "/2", Self.nfd + "x", "\u{301}lone"] {
            let target = "/upload/storage/v1/b/bkt/o?uploadType=media&name=\(URLText.encodeComponent(name))"
            #expect(harness.send("POST", target, body: [1]).status == 200)
        }
        func list(_ query: String) -> (items: [[UInt8]], prefixes: [[UInt8]], next: String?) {
            let json = harness.send("GET", "/storage/v1/b/bkt/o?\(query)").json
            let items = (json["items"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            let prefixes = json["prefixes"] as? [String] ?? []
            return (items.map { Array($0.utf8) }, prefixes.map { Array($0.utf8) }, json["nextPageToken"] as? String)
        }
        // `cafe` is a byte prefix of the NFD names only; the NFC name starts `caf\xC3`.
        let cafe = list("prefix=cafe")
        #expect(cafe.items == [Array((Self.nfd + "/2").utf8), Array((Self.nfd + "x").utf8)])
        let nfcPrefix = list("prefix=\(URLText.encodeComponent(Self.nfc))")
        #expect(nfcPrefix.items == [Array((Self.nfc + "/1").utf8)])
        // With a delimiter, the two spellings are two prefixes.
        let grouped = list("delimiter=/")
        #expect(grouped.prefixes == [Array((Self.nfd + "/").utf8), Array((Self.nfc + "/").utf8)])
        #expect(grouped.items == [Array((Self.nfd + "x").utf8), Array("\u{301}lone".utf8)])
        // One entry per page walks every entry exactly once, in byte order, even a name that starts
        // with a combining mark (which would merge with the token's `i:` in a String).
        var seen: [[UInt8]] = []
        var token: String?
        for _ in 0..<10 {
            var query = "delimiter=/&maxResults=1"
            if let token { query += "&pageToken=\(URLText.encodeComponent(token))" }
            let page = list(query)
            seen += page.prefixes + page.items
            token = page.next
            if token == nil { break }
        }
        let expected: [[UInt8]] = [
            grouped.prefixes[0], grouped.items[0], grouped.prefixes[1], grouped.items[1],
        ]
        #expect(seen == expected)
    }

    @Test("GCS and Firebase requests address NFC and NFD names as two objects")
    func requests() throws {
        let harness = try Harness()
        let nfc = URLText.encodeComponent(Self.nfc)
        let nfd = URLText.encodeComponent(Self.nfd)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=\(nfc)", body: [1]).status == 200)
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=\(nfd)", body: [2, 2]).status == 200)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/\(nfc)").json["size"] as? String == "1")
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/\(nfd)").json["size"] as? String == "2")
        #expect(harness.send("DELETE", "/storage/v1/b/bkt/o/\(nfd)").status == 204)
        #expect(harness.send("GET", "/storage/v1/b/bkt/o/\(nfd)").status == 404)
        #expect(harness.send("GET", "/v0/b/bkt/o/\(nfc)").status == 200)
    }
}
