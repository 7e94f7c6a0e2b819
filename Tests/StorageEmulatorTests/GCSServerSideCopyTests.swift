import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

@Suite("GCS server-side copies: copyTo, rewriteTo with tokens, compose, moveTo")
struct GCSServerSideCopyTests {
    @discardableResult
    static func upload(_ harness: Harness, _ name: String, _ bytes: [UInt8], bucket: String = "bkt") -> TestResponder {
        harness.send(
            "POST", "/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=\(URLText.encodeComponent(name))",
            headers: ["Content-Type": "text/x-test"], body: bytes)
    }

    @Test(
        "copyTo: a new generation in another bucket with the source's bytes, and the body's metadata instead of its own"
    )
    func copy() throws {
        let harness = try Harness()
        let bytes = testBytes(300_000)
        let source = Self.upload(harness, "a/src", bytes).json
        let copied = harness.send(
            "POST", "/storage/v1/b/bkt/o/a%2Fsrc/copyTo/b/other/o/a%2Fdst", json: ["metadata": ["k": "v"]])
        #expect(copied.status == 200)
        #expect(copied.json["bucket"] as? String == "other")
        // Metadata given with a copy replaces the source's: the content type is not carried over.
        #expect(copied.json["contentType"] as? String != "text/x-test")
        #expect((copied.json["metadata"] as? [String: String]) == ["k": "v"])
        // Without any, the source's metadata is kept.
        let kept = harness.send("POST", "/storage/v1/b/bkt/o/a%2Fsrc/copyTo/b/other/o/a%2Fkept")
        #expect(kept.json["contentType"] as? String == "text/x-test")
        #expect(copied.json["md5Hash"] as? String == md5Base64(bytes))
        #expect(copied.json["generation"] as? String != source["generation"] as? String)
        #expect(harness.object("other", "a/dst") == Data(bytes))
        #expect(harness.send("POST", "/storage/v1/b/bkt/o/nope/copyTo/b/other/o/x").status == 404)
        #expect(
            harness.send("POST", "/storage/v1/b/bkt/o/a%2Fsrc/copyTo/b/other/o/x?ifSourceGenerationMatch=1").status
                == 412)
        #expect(
            harness.send("POST", "/storage/v1/b/bkt/o/a%2Fsrc/copyTo/b/other/o/a%2Fdst?ifGenerationMatch=0").status
                == 412)
        // Without an operation, a POST on an object is still not allowed.
        #expect(harness.send("POST", "/storage/v1/b/bkt/o/a%2Fsrc/other").status == 405)
    }

    @Test("rewriteTo: one MiB per call with a token, done with the resource; bad sizes and tokens are refused")
    func rewrite() throws {
        let harness = try Harness()
        let bytes = testBytes(3 * 1_048_576 + 5)
        Self.upload(harness, "big", bytes)
        let path = "/storage/v1/b/bkt/o/big/rewriteTo/b/bkt/o/copy?maxBytesRewrittenPerCall=1048576"
        var token: String?
        var calls = 0
        while true {
            let answer = harness.send("POST", path + (token.map { "&rewriteToken=\($0)" } ?? ""))
            #expect(answer.status == 200)
            calls += 1
            #expect(answer.json["objectSize"] as? String == String(bytes.count))
            if answer.json["done"] as? Bool == true {
                #expect(answer.json["totalBytesRewritten"] as? String == String(bytes.count))
                #expect((answer.json["resource"] as? [String: Any])?["name"] as? String == "copy")
                break
            }
            #expect(answer.json["totalBytesRewritten"] as? String == String(calls * 1_048_576))
            #expect(harness.object("bkt", "copy") == nil, "nothing is visible until the last call")
            token = try #require(answer.json["rewriteToken"] as? String)
            #expect(calls < 10)
        }
        #expect(calls == 4)
        #expect(harness.object("bkt", "copy") == Data(bytes))

        let first = try #require(harness.send("POST", path).json["rewriteToken"] as? String)
        var tampered = Array(first.utf8)
        tampered[3] = tampered[3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(harness.send("POST", path + "&rewriteToken=\(String(decoding: tampered, as: UTF8.self))").status == 400)
        let elsewhere = "/storage/v1/b/bkt/o/big/rewriteTo/b/bkt/o/elsewhere?maxBytesRewrittenPerCall=1048576"
        #expect(harness.send("POST", elsewhere + "&rewriteToken=\(first)").status == 400)
        #expect(harness.send("POST", path + "&rewriteToken=garbage").status == 400)
        Self.upload(harness, "big", bytes)
        let changed = harness.send("POST", path + "&rewriteToken=\(first)")
        #expect(changed.status == 412, "the source has a new generation")
        for size in ["1000", "0", "-1048576"] {
            #expect(
                harness.send("POST", "/storage/v1/b/bkt/o/big/rewriteTo/b/bkt/o/c?maxBytesRewrittenPerCall=\(size)")
                    .status == 400)
        }
        // Without a limit, one call does it all.
        let whole = harness.send("POST", "/storage/v1/b/bkt/o/big/rewriteTo/b/other/o/c")
        #expect(whole.json["done"] as? Bool == true)
        #expect(harness.object("other", "c") == Data(bytes))
    }

    @Test("compose: concatenated bytes, componentCount, CRC32C combined, no md5Hash; limits and preconditions")
    func compose() throws {
        let harness = try Harness()
        let parts = (0..<3).map { testBytes(1000 + $0 * 333, seed: UInt8($0 + 1)) }
        var generations: [String] = []
        for (index, part) in parts.enumerated() {
            generations.append(try #require(Self.upload(harness, "p\(index)", part).json["generation"] as? String))
        }
        let sources: [[String: Any]] = (0..<3).map { ["name": "p\($0)"] }
        let composed = harness.send(
            "POST", "/storage/v1/b/bkt/o/whole/compose",
            json: ["sourceObjects": sources, "destination": ["contentType": "text/plain"]])
        #expect(composed.status == 200)
        let whole = parts.flatMap { $0 }
        #expect(composed.json["componentCount"] as? Int == 3)
        #expect(composed.json["crc32c"] as? String == crc32cBase64(whole))
        #expect(composed.json["md5Hash"] == nil)
        #expect(composed.json["contentType"] as? String == "text/plain")
        #expect(harness.object("bkt", "whole") == Data(whole))
        // A composite of a composite counts every component; a copy of it stays composite.
        let twice = harness.send(
            "POST", "/storage/v1/b/bkt/o/twice/compose", json: ["sourceObjects": [["name": "whole"], ["name": "p0"]]])
        #expect(twice.json["componentCount"] as? Int == 4)
        #expect(twice.json["crc32c"] as? String == crc32cBase64(whole + parts[0]))
        let copied = harness.send("POST", "/storage/v1/b/bkt/o/twice/copyTo/b/bkt/o/twice-copy")
        #expect(copied.json["componentCount"] as? Int == 4)
        #expect(copied.json["md5Hash"] == nil)

        let wrongGeneration: [[String: Any]] = [["name": "p0", "objectPreconditions": ["ifGenerationMatch": "1"]]]
        #expect(
            harness.send("POST", "/storage/v1/b/bkt/o/x/compose", json: ["sourceObjects": wrongGeneration]).status
                == 412)
        let rightGeneration: [[String: Any]] = [
            ["name": "p0", "generation": generations[0], "objectPreconditions": ["ifGenerationMatch": generations[0]]]
        ]
        #expect(
            harness.send("POST", "/storage/v1/b/bkt/o/x/compose", json: ["sourceObjects": rightGeneration]).status
                == 200)
        #expect(
            harness.send("POST", "/storage/v1/b/bkt/o/x/compose?ifGenerationMatch=0", json: ["sourceObjects": sources])
                .status == 412)
        #expect(
            harness.send("POST", "/storage/v1/b/bkt/o/x/compose", json: ["sourceObjects": [["name": "gone"]]]).status
                == 404)
        #expect(harness.send("POST", "/storage/v1/b/bkt/o/x/compose", json: ["sourceObjects": []]).status == 400)
        #expect(harness.send("POST", "/storage/v1/b/bkt/o/x/compose", json: [:]).status == 400)
        let many = [[String: Any]](repeating: ["name": "p0"], count: 33)
        #expect(harness.send("POST", "/storage/v1/b/bkt/o/x/compose", json: ["sourceObjects": many]).status == 400)
        let most = [[String: Any]](repeating: ["name": "p0"], count: 32)
        #expect(harness.send("POST", "/storage/v1/b/bkt/o/x/compose", json: ["sourceObjects": most]).status == 200)
        #expect(
            harness.send("POST", "/storage/v1/b/bkt/o/x/compose", json: ["sourceObjects": [["generation": "1"]]]).status
                == 400)
    }

    @Test("moveTo: atomic in both stores, preconditions on both sides, the source gone")
    func move() throws {
        let parent = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        for store in [MemoryObjectStore(), try DirectoryObjectStore(root: parent)] as [any ObjectStore] {
            let harness = try Harness(store: store)
            let bytes = testBytes(5000)
            let generation = try #require(Self.upload(harness, "from", bytes).json["generation"] as? String)
            Self.upload(harness, "to", [1])
            #expect(
                harness.send("POST", "/storage/v1/b/bkt/o/from/moveTo/o/to?ifSourceGenerationMatch=1").status == 412)
            #expect(harness.send("POST", "/storage/v1/b/bkt/o/from/moveTo/o/to?ifGenerationMatch=0").status == 412)
            #expect(harness.object("bkt", "from") == Data(bytes), "a refused move changes nothing")
            #expect(harness.send("POST", "/storage/v1/b/bkt/o/from/moveTo/o/from").status == 400)
            let moved = harness.send(
                "POST", "/storage/v1/b/bkt/o/from/moveTo/o/to?ifSourceGenerationMatch=\(generation)")
            #expect(moved.status == 200)
            #expect(moved.json["name"] as? String == "to")
            #expect(moved.json["contentType"] as? String == "text/x-test")
            #expect(harness.object("bkt", "to") == Data(bytes))
            #expect(harness.object("bkt", "from") == nil)
            #expect(harness.send("POST", "/storage/v1/b/bkt/o/from/moveTo/o/to").status == 404)
        }
        // What a directory store wrote survives a restart.
        let reopened = try DirectoryObjectStore(root: parent)
        #expect(reopened.records(bucket: "bkt").map(\.name) == ["to"])
    }

    @Test("operation paths: encoded names, keywords as their own segments")
    func operationPaths() throws {
        func parse(_ path: String) throws -> GCSObjectOperation? {
            try GCSObjectOperation(path.split(separator: "/", omittingEmptySubsequences: false)[...])
        }
        #expect(
            try parse("a%2Fb/copyTo/b/x/o/c%20d") == .copy(source: "a/b", destinationBucket: "x", destination: "c d"))
        #expect(
            try parse("a/b/rewriteTo/b/x/o/c/d") == .rewrite(source: "a/b", destinationBucket: "x", destination: "c/d"))
        #expect(try parse("a%2Fb/compose") == .compose(destination: "a/b"))
        #expect(try parse("s/moveTo/o/d") == .move(source: "s", destination: "d"))
        #expect(try parse("compose") == nil)
        #expect(try parse("a/copyTo/b/x/o") == nil)
        #expect(try parse("a/compose/b") == nil)
    }

    @Test("CRC32C of a concatenation combines from the parts' CRC32Cs and lengths")
    func combineCRC32C() {
        for (first, second) in [(0, 0), (1, 0), (0, 1), (5, 7), (4096, 1), (100_000, 33_333)] {
            let a = testBytes(first, seed: 3)
            let b = testBytes(second, seed: 9)
            var ca = Checksums()
            var cb = Checksums()
            var whole = Checksums()
            a.withUnsafeBytes { ca.update($0) }
            b.withUnsafeBytes { cb.update($0) }
            (a + b).withUnsafeBytes { whole.update($0) }
            #expect(
                Checksums.combineCRC32C(ca.crc32c, cb.crc32c, secondLength: Int64(second)) == whole.crc32c,
                "\(first)+\(second)")
        }
    }
}
