import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// Decompressive transcoding, as Cloud Storage serves objects stored with `Content-Encoding: gzip`.
@Suite("Decompressive transcoding")
struct TranscodingTests {
    static let original = Array((0..<5_000).map { "row \($0)\n" }.joined().utf8)
    static let stored: [UInt8] = (try? original.withUnsafeBytes { try GzipEncoder.encode($0) }) ?? []

    /// A harness holding `bkt/z`: `stored`, declared gzip, with `cacheControl` if given.
    func harness(cacheControl: String? = nil) throws -> Harness {
        let harness = try Harness()
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=z", body: Self.stored).status == 200)
        var patch: [String: Any] = ["contentEncoding": "gzip"]
        if let cacheControl { patch["cacheControl"] = cacheControl }
        #expect(harness.send("PATCH", "/storage/v1/b/bkt/o/z", json: patch).status == 200)
        return harness
    }

    static let storedHash: String = {
        var checksums = Checksums(computingMD5: false)
        stored.withUnsafeBytes { checksums.update($0) }
        return "crc32c=\(ChecksumEncoding.base64(crc32c: checksums.crc32c))"
    }()

    @Test(
        "without Accept-Encoding: gzip the bytes are decompressed, the Range ignored",
        arguments: [
            "/storage/v1/b/bkt/o/z?alt=media", "/download/storage/v1/b/bkt/o/z?alt=media", "/v0/b/bkt/o/z?alt=media",
        ])
    func transcodes(target: String) throws {
        let harness = try harness()
        for headers: HTTPHeaders in [[:], ["Range": "bytes=10-20"], ["Accept-Encoding": "gzip;q=0, identity"]] {
            let response = harness.send("GET", target, headers: headers)
            #expect(response.status == 200)
            #expect(response.body == Data(Self.original))
            #expect(response.announcedLength == nil, "no Content-Length: the length is not known beforehand")
            #expect(response.headers["Content-Encoding"] == nil)
            #expect(response.headers["Content-Range"] == nil)
            #expect(response.headers["x-goog-stored-content-encoding"] == "gzip")
            #expect(response.headers["x-goog-stored-content-length"] == String(Self.stored.count))
            #expect(
                response.headers["x-goog-hash"]?.hasPrefix(Self.storedHash) == true, "the hash is the stored bytes'")
        }
    }

    @Test("Accept-Encoding: gzip gets the stored bytes, and a Range over them")
    func acceptGzip() throws {
        let harness = try harness()
        var response = harness.send(
            "GET", "/storage/v1/b/bkt/o/z?alt=media", headers: ["Accept-Encoding": "gzip, deflate"])
        #expect(response.status == 200)
        #expect(response.body == Data(Self.stored))
        #expect(response.announcedLength == Int64(Self.stored.count))
        #expect(response.headers["Content-Encoding"] == "gzip")
        response = harness.send(
            "GET", "/storage/v1/b/bkt/o/z?alt=media", headers: ["Accept-Encoding": "gzip", "Range": "bytes=10-"])
        #expect(response.status == 206)
        #expect(response.body == Data(Self.stored[10...]))
        #expect(response.headers["Content-Range"] == "bytes 10-\(Self.stored.count - 1)/\(Self.stored.count)")
    }

    @Test("Cache-Control: no-transform serves the stored bytes to everyone")
    func noTransform() throws {
        let harness = try harness(cacheControl: "public, no-transform")
        let response = harness.send("GET", "/storage/v1/b/bkt/o/z?alt=media")
        #expect(response.body == Data(Self.stored))
        #expect(response.headers["Content-Encoding"] == "gzip")
        #expect(response.headers["x-goog-stored-content-encoding"] == "gzip")
    }

    @Test("an object stored plainly says identity")
    func identity() throws {
        let harness = try Harness()
        #expect(
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=media&name=p", body: [1, 2, 3]).status == 200)
        let response = harness.send("GET", "/storage/v1/b/bkt/o/p?alt=media")
        #expect(response.body == Data([1, 2, 3]))
        #expect(response.headers["x-goog-stored-content-encoding"] == "identity")
        #expect(response.headers["Content-Encoding"] == nil)
    }
}
