import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// The XML API multipart upload routes, held to what Cloud Storage enforces.
@Suite("XML API multipart uploads")
struct XMLMultipartUploadTests {
    /// A harness whose parts may be as small as 4 bytes (Cloud Storage's 5 MiB, scaled down).
    static func harness() throws -> Harness {
        try Harness { $0.minimumPartSize = 4 }
    }

    /// Initiates an upload of `bkt/<name>` and returns its id.
    static func initiate(_ harness: Harness, _ name: String, headers: HTTPHeaders = [:]) throws -> String {
        let response = harness.send("POST", "/bkt/\(name)?uploads", headers: headers)
        #expect(response.status == 200)
        let body = String(decoding: response.body, as: UTF8.self)
        #expect(body.contains("<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"))
        let id = try #require(
            body.range(of: "<UploadId>").flatMap { open in
                body.range(of: "</UploadId>").map { String(body[open.upperBound..<$0.lowerBound]) }
            })
        return id
    }

    static func putPart(_ harness: Harness, _ name: String, _ id: String, _ number: Int, _ bytes: [UInt8]) -> String {
        let response = harness.send("PUT", "/bkt/\(name)?partNumber=\(number)&uploadId=\(id)", body: bytes)
        #expect(response.status == 200)
        #expect(response.headers["x-goog-hash"]?.contains("crc32c=\(crc32cBase64(bytes))") == true)
        return response.headers["ETag"] ?? ""
    }

    static func completion(_ parts: [(Int, String)]) -> [UInt8] {
        Array(
            ("<CompleteMultipartUpload>"
                + parts.map { "<Part><PartNumber>\($0)</PartNumber><ETag>\($1)</ETag></Part>" }.joined()
                + "</CompleteMultipartUpload>").utf8)
    }

    static func code(_ response: TestResponder) -> String {
        let body = String(decoding: response.body, as: UTF8.self)
        guard let open = body.range(of: "<Code>"), let close = body.range(of: "</Code>") else { return "" }
        return String(body[open.upperBound..<close.lowerBound])
    }

    @Test(
        "initiate, parts out of order, list, complete: one ordinary object with CRC32C, no MD5, the initiate's metadata"
    )
    func wholeUpload() throws {
        let harness = try Self.harness()
        let id = try Self.initiate(
            harness, "dir/big.bin",
            headers: ["Content-Type": "image/png", "x-goog-meta-Color": "blue", "Cache-Control": "no-cache"])
        let first = testBytes(10, seed: 1)
        let second = testBytes(7, seed: 2)
        let tag2 = Self.putPart(harness, "dir/big.bin", id, 2, second)
        let tag1 = Self.putPart(harness, "dir/big.bin", id, 1, first)
        #expect(tag1 != tag2)
        let listed = harness.send("GET", "/bkt/dir/big.bin?uploadId=\(id)")
        #expect(listed.status == 200)
        let listing = String(decoding: listed.body, as: UTF8.self)
        #expect(listing.contains("<PartNumber>1</PartNumber>") && listing.contains("<Size>7</Size>"))
        let uploads = String(decoding: harness.send("GET", "/bkt?uploads").body, as: UTF8.self)
        #expect(uploads.contains("<Key>dir/big.bin</Key><UploadId>\(id)</UploadId>"))
        #expect(harness.object("bkt", "dir/big.bin") == nil, "nothing is visible before Complete")

        let done = harness.send(
            "POST", "/bkt/dir/big.bin?uploadId=\(id)", body: Self.completion([(1, tag1), (2, tag2)]))
        #expect(done.status == 200)
        #expect(String(decoding: done.body, as: UTF8.self).contains("<CompleteMultipartUploadResult"))
        let whole = first + second
        #expect(harness.object("bkt", "dir/big.bin") == Data(whole))
        let record = try #require(harness.store.record(bucket: "bkt", name: "dir/big.bin"))
        #expect(record.crc32c == crc32c(whole))
        #expect(record.md5 == nil, "Cloud Storage gives objects from multipart uploads no MD5")
        #expect(record.attributes.contentType == "image/png")
        #expect(record.attributes.metadata == ["color": "blue"])
        #expect(record.attributes.cacheControl == "no-cache")
        #expect(harness.app.multipartUploadsInProgress == 0)
        #expect(Self.code(harness.send("GET", "/bkt/dir/big.bin?uploadId=\(id)")) == "NoSuchUpload")
    }

    @Test("part numbers 1 to 10000, the declared checksum, known uploads only, no preconditions")
    func partRules() throws {
        let harness = try Self.harness()
        let id = try Self.initiate(harness, "a")
        for number in ["0", "10001", "x", ""] {
            let response = harness.send("PUT", "/bkt/a?partNumber=\(number)&uploadId=\(id)", body: [1])
            #expect(response.status == 400 && Self.code(response) == "InvalidArgument", "part \(number)")
        }
        #expect(harness.send("PUT", "/bkt/a?partNumber=10000&uploadId=\(id)", body: [1]).status == 200)
        let bad = harness.send(
            "PUT", "/bkt/a?partNumber=1&uploadId=\(id)", headers: ["x-goog-hash": "crc32c=AAAAAA=="], body: [1, 2])
        #expect(bad.status == 400 && Self.code(bad) == "BadDigest")
        let unknown = harness.send("PUT", "/bkt/a?partNumber=1&uploadId=nope", body: [1])
        #expect(unknown.status == 404 && Self.code(unknown) == "NoSuchUpload")
        let otherObject = harness.send("PUT", "/bkt/b?partNumber=1&uploadId=\(id)", body: [1])
        #expect(otherObject.status == 404, "an upload id names its own object only")
        let conditional = harness.send("POST", "/bkt/c?uploads", headers: ["x-goog-if-generation-match": "0"])
        #expect(conditional.status == 501 && Self.code(conditional) == "NotImplemented")
    }

    @Test("Complete refuses parts out of order, unknown, with another ETag, too small, or a malformed document")
    func completeRules() throws {
        let harness = try Self.harness()
        let id = try Self.initiate(harness, "o")
        let tag1 = Self.putPart(harness, "o", id, 1, testBytes(8, seed: 1))
        let tag2 = Self.putPart(harness, "o", id, 2, testBytes(3, seed: 2))
        let tag3 = Self.putPart(harness, "o", id, 3, testBytes(8, seed: 3))
        let cases: [([UInt8], String)] = [
            (Self.completion([(2, tag2), (1, tag1)]), "InvalidPartOrder"),
            (Self.completion([(1, tag1), (1, tag1)]), "InvalidPartOrder"),
            (Self.completion([(1, tag1), (4, tag3)]), "InvalidPart"),
            (Self.completion([(1, tag2)]), "InvalidPart"),
            (Self.completion([(1, tag1), (2, tag2), (3, tag3)]), "EntityTooSmall"),
            (Array("<CompleteMultipartUpload></CompleteMultipartUpload>".utf8), "MalformedXML"),
            (Array("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>".utf8), "MalformedXML"),
        ]
        for (body, code) in cases {
            let response = harness.send("POST", "/bkt/o?uploadId=\(id)", body: body)
            #expect(response.status == 400 && Self.code(response) == code, "\(String(decoding: body, as: UTF8.self))")
            #expect(harness.object("bkt", "o") == nil)
        }
        // Parts may be skipped; every part but the last must be large enough.
        let done = harness.send("POST", "/bkt/o?uploadId=\(id)", body: Self.completion([(1, tag1), (3, tag3)]))
        #expect(done.status == 200)
        #expect(harness.object("bkt", "o") == Data(testBytes(8, seed: 1) + testBytes(8, seed: 3)))
        #expect(harness.app.multipartUploadsInProgress == 0, "unused parts go with the upload")
    }

    @Test("5 MiB is the default smallest part but the last")
    func defaultMinimumPartSize() throws {
        let harness = try Harness()
        let id = try Self.initiate(harness, "m")
        let tag1 = Self.putPart(harness, "m", id, 1, testBytes(1000))
        let tag2 = Self.putPart(harness, "m", id, 2, testBytes(10))
        let response = harness.send("POST", "/bkt/m?uploadId=\(id)", body: Self.completion([(1, tag1), (2, tag2)]))
        #expect(response.status == 400 && Self.code(response) == "EntityTooSmall")
        #expect(harness.send("POST", "/bkt/m?uploadId=\(id)", body: Self.completion([(1, tag1)])).status == 200)
    }

    @Test("Abort removes the upload and its parts; a second abort finds nothing")
    func abort() throws {
        let harness = try Self.harness()
        let id = try Self.initiate(harness, "gone")
        _ = Self.putPart(harness, "gone", id, 1, testBytes(5))
        #expect(harness.app.multipartUploadsInProgress == 1)
        #expect(harness.send("DELETE", "/bkt/gone?uploadId=\(id)").status == 204)
        #expect(harness.app.multipartUploadsInProgress == 0)
        let again = harness.send("DELETE", "/bkt/gone?uploadId=\(id)")
        #expect(again.status == 404 && Self.code(again) == "NoSuchUpload")
        #expect(!String(decoding: harness.send("GET", "/bkt?uploads").body, as: UTF8.self).contains("<Upload>"))
    }

    @Test("the routes need the JSON API's credentials, and answer XML errors")
    func credentials() throws {
        let harness = try Harness(token: "secret") { $0.minimumPartSize = 4 }
        let anonymous = harness.send("POST", "/bkt/x?uploads")
        #expect(anonymous.status == 401)
        #expect(anonymous.headers["Content-Type"]?.hasPrefix("application/xml") == true)
        #expect(harness.send("POST", "/bkt/x?uploads", headers: ["Authorization": "Bearer secret"]).status == 200)
    }
}

private func crc32c(_ bytes: [UInt8]) -> UInt32 {
    var checksums = Checksums(computingMD5: false)
    bytes.withUnsafeBytes { checksums.update($0) }
    return checksums.crc32c
}
