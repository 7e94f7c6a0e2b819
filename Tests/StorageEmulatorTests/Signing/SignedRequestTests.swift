import Foundation
import HTTP1
import NativeTLS
import Testing
import V4Signing

@testable import StorageEmulator

/// Signed requests on XML-API paths, through the application with a hand-moved clock.
@Suite("Emulator: V4-signed requests")
struct SignedRequestTests {
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]]) }.joined()
    }

    /// `path?query` of a URL for `emulator.test` signed at the clock's time, as a client library makes it.
    static func signedTarget(
        _ method: String, _ path: String, clock: TestClock, expires: Int64 = 60,
        headers: [(String, String)] = [], email: String = AuthFixture.email, host: String = "emulator.test"
    ) throws -> String {
        let timestamp = try #require(V4Timestamp(secondsSince1970: clock.seconds))
        let signedHeaders = (["host"] + headers.map { $0.0.lowercased() }).sorted().joined(separator: ";")
        let encodedPath = V4CanonicalRequest.encodedPath(path)
        let canonical = V4CanonicalRequest(
            method: method, encodedPath: encodedPath,
            query: V4CanonicalRequest.signingQuery(
                email: email, timestamp: timestamp, expiresInSeconds: expires, signedHeaders: signedHeaders),
            headers: [("host", host)] + headers)
        let stringToSign = V4CanonicalRequest.stringToSign(
            timestamp: timestamp, canonicalRequestHash: hex(try OpenSSLDigest.sha256(Array(canonical.text.utf8))))
        let signature = hex(try AuthFixture.key.signSHA256(Array(stringToSign.utf8)))
        return "\(encodedPath)?\(canonical.canonicalQuery)&X-Goog-Signature=\(signature)"
    }

    static func code(_ response: TestResponder) -> String? {
        let text = String(decoding: response.body, as: UTF8.self)
        guard let start = text.range(of: "<Code>"), let end = text.range(of: "</Code>") else { return nil }
        return String(text[start.upperBound..<end.lowerBound])
    }

    @Test("valid until the last second of its expiry by the emulator's clock, then 400 ExpiredToken in XML")
    func expiryByClock() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let put = try Self.signedTarget("PUT", "/bkt/a b.txt", clock: clock)
        #expect(harness.send("PUT", put, body: Array("data".utf8)).status == 200)
        let get = try Self.signedTarget("GET", "/bkt/a b.txt", clock: clock, expires: 60)
        clock.advance(59)
        let read = harness.send("GET", get)
        #expect(read.status == 200)
        #expect(read.body == Data("data".utf8))
        clock.advance(1)
        let expired = harness.send("GET", get)
        #expect(expired.status == 400)
        #expect(Self.code(expired) == "ExpiredToken")
        #expect(expired.headers["Content-Type"]?.hasPrefix("application/xml") == true)
    }

    @Test("a body whose SHA-256 is not the signed one is refused with 400 BadDigest and not stored")
    func signedPayload() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let hash = Self.hex(try OpenSSLDigest.sha256(Array("hello".utf8)))
        let headers = [("x-goog-content-sha256", hash)]
        let target = try Self.signedTarget("PUT", "/bkt/hashed", clock: clock, headers: headers)
        let fields = HTTPHeaders(dictionaryLiteral: ("x-goog-content-sha256", hash))
        let wrong = harness.send("PUT", target, headers: fields, body: Array("hellO".utf8))
        #expect(wrong.status == 400)
        #expect(Self.code(wrong) == "BadDigest")
        #expect(harness.store.record(bucket: "bkt", name: "hashed") == nil)
        #expect(harness.send("PUT", target, headers: fields, body: Array("hello".utf8)).status == 200)
        #expect(harness.store.record(bucket: "bkt", name: "hashed")?.size == 5)
    }

    @Test("a signed POST opens a session that takes chunks after the URL has expired; the session id authorizes")
    func resumableSession() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let resumable = [("x-goog-resumable", "start")]
        let post = try Self.signedTarget("POST", "/bkt/big.bin", clock: clock, expires: 10, headers: resumable)
        let started = harness.send("POST", post, headers: ["x-goog-resumable": "start"])
        #expect(started.status == 201)
        let location = try #require(started.headers["Location"])
        #expect(location.hasPrefix("http://emulator.test/bkt/big.bin?X-Goog-Algorithm="))
        let target = String(location.dropFirst("http://emulator.test".count))
        #expect(target.contains("&upload_id="))
        // Without the signed header the start is refused (it is signed, so the signature fails).
        #expect(harness.send("POST", post).status == 403)
        clock.advance(3600)
        let chunk = [UInt8](repeating: 7, count: 262_144)
        let first = harness.send("PUT", target, headers: ["Content-Range": "bytes 0-262143/*"], body: chunk)
        #expect(first.status == 308)
        let last = harness.send(
            "PUT", target, headers: ["Content-Range": "bytes 262144-262146/262147"], body: [1, 2, 3])
        #expect(last.status == 200)
        #expect(harness.store.record(bucket: "bkt", name: "big.bin")?.size == 262_147)
    }

    @Test("what a signed URL cannot do: the bucket itself, other methods, POST without x-goog-resumable")
    func unsupported() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let bucket = harness.send("GET", try Self.signedTarget("GET", "/bkt", clock: clock))
        #expect(bucket.status == 400)
        #expect(Self.code(bucket) == "InvalidRequest")
        #expect(harness.send("PATCH", try Self.signedTarget("PATCH", "/bkt/o", clock: clock)).status == 405)
        let post = harness.send("POST", try Self.signedTarget("POST", "/bkt/o", clock: clock))
        #expect(post.status == 400)
        #expect(harness.send("DELETE", try Self.signedTarget("DELETE", "/bkt/none", clock: clock)).status == 404)
    }

    @Test("virtual-hosted: a Host of <bucket>.localhost names the bucket, the path the object")
    func virtualHosted() throws {
        let clock = TestClock()
        let harness = try AuthFixture.harness(clock)
        let host: HTTPHeaders = ["Host": "bkt.localhost:9000"]
        let put = try Self.signedTarget("PUT", "/dir/v.txt", clock: clock, host: "bkt.localhost")
        #expect(harness.send("PUT", put, headers: host, body: Array("virtual".utf8)).status == 200)
        #expect(harness.store.record(bucket: "bkt", name: "dir/v.txt")?.size == 7)
        let get = try Self.signedTarget("GET", "/dir/v.txt", clock: clock, host: "bkt.localhost")
        #expect(harness.send("GET", get, headers: host).body == Data("virtual".utf8))
        // The host is signed: the same URL reaching another host name fails.
        #expect(harness.send("GET", get, headers: ["Host": "bkt.example:9000"]).status == 403)
        #expect(EmulatorApplication.virtualHostedBucket("emulator.test") == nil)
        #expect(EmulatorApplication.virtualHostedBucket(".localhost") == nil)
        #expect(EmulatorApplication.virtualHostedBucket("localhost:80") == nil)
        #expect(EmulatorApplication.virtualHostedBucket("A.LocalHost") == "a")
    }

    @Test("an emulator without authentication knows no account: every signature is refused with 403")
    func noAuthentication() throws {
        let clock = TestClock()
        let harness = try Harness { $0.now = { clock.now } }
        let refused = harness.send("GET", try Self.signedTarget("GET", "/bkt/o", clock: clock))
        #expect(refused.status == 403)
        #expect(Self.code(refused) == "SignatureDoesNotMatch")
    }
}
