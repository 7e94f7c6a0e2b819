import Testing

@testable import HTTP1

/// Parses `text` as one request, feeding it whole.
private func request(_ text: String, limits: HTTPHeadLimits = .init()) throws -> (HTTPRequestHead, Int)? {
    var parser = HTTPHeadParser(limits: limits)
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBytes { buffer in try parser.parseRequest(buffer) }
}

private func response(_ text: String) throws -> (HTTPResponseHead, Int)? {
    var parser = HTTPHeadParser()
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBytes { buffer in try parser.parseResponse(buffer) }
}

@Suite("HTTP head parser")
struct HTTPHeadParserTests {
    static let upload =
        "PUT /upload/storage/v1/b/b/o?uploadType=resumable&name=a%2Fb HTTP/1.1\r\n"
        + "Host: 127.0.0.1:4443\r\ncontent-length:  12 \r\nX-Goog-Hash:\tcrc32c=AAAAAA==\t\r\nX-Empty:\r\n\r\n"

    @Test func parsesARequestHeadAndReportsItsLength() throws {
        let (head, used) = try #require(try request(Self.upload + "body bytes.."))
        #expect(head.method == "PUT")
        #expect(head.target == "/upload/storage/v1/b/b/o?uploadType=resumable&name=a%2Fb")
        #expect(head.version == .http11)
        #expect(head.headers["Content-Length"] == "12")
        #expect(head.headers["x-goog-hash"] == "crc32c=AAAAAA==")
        #expect(head.headers["X-Empty"] == "")
        #expect(head.headers.fields.count == 4)
        #expect(used == Self.upload.utf8.count)
    }

    @Test func everySplitOfTheHeadGivesTheSameResult() throws {
        let bytes = Array(Self.upload.utf8)
        var parser = HTTPHeadParser()
        var result: (HTTPRequestHead, Int)?
        // One byte at a time: nil until the last byte, and the buffer only grows.
        for count in 1...bytes.count {
            let prefix = Array(bytes[0..<count])
            result = try prefix.withUnsafeBytes { try parser.parseRequest($0) }
            if count < bytes.count { #expect(result == nil, "complete after \(count) bytes") }
        }
        let (head, used) = try #require(result)
        #expect(used == bytes.count)
        #expect(head.headers["Host"] == "127.0.0.1:4443")
        // Two pieces split anywhere.
        for split in 1..<bytes.count {
            var parser = HTTPHeadParser()
            let first = Array(bytes[0..<split])
            #expect(try first.withUnsafeBytes { try parser.parseRequest($0) } == nil)
            let whole = try bytes.withUnsafeBytes { try parser.parseRequest($0) }
            #expect(whole?.consumed == bytes.count)
            #expect(whole?.head.headers.fields.count == 4)
        }
    }

    @Test func skipsEmptyLinesBeforeTheRequestLine() throws {
        let (head, used) = try #require(try request("\r\n\r\nGET / HTTP/1.0\r\n\r\n"))
        #expect(head.method == "GET")
        #expect(head.version == .http10)
        #expect(used == 22)
    }

    @Test func parsesStatusLines() throws {
        let (ok, used) = try #require(try response("HTTP/1.1 308 Resume Incomplete\r\nRange: bytes=0-9\r\n\r\nxyz"))
        #expect(ok.status == 308)
        #expect(ok.reason == "Resume Incomplete")
        #expect(ok.headers["range"] == "bytes=0-9")
        #expect(used == 52)
        let (bare, _) = try #require(try response("HTTP/1.0 200\r\n\r\n"))
        #expect(bare.status == 200)
        #expect(bare.reason == "")
        #expect(bare.version == .http10)
        #expect(throws: HTTP1Error.invalidStatus) { try response("HTTP/1.1 2x0 OK\r\n\r\n") }
        #expect(throws: HTTP1Error.notHTTP) { try response("SSH-2.0") }
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\nHost: h\r\n\r\n", HTTP1Error.invalidLineEnding),
        ("GET / HTTP/1.1\r\nHost: h\n\r\n", HTTP1Error.invalidLineEnding),
        ("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", HTTP1Error.obsoleteLineFolding),
        ("GET / HTTP/1.1\r\n\tA: b\r\n\r\n", HTTP1Error.obsoleteLineFolding),
        ("GET / HTTP/1.1\r\nA : b\r\n\r\n", HTTP1Error.invalidFieldName),
        ("GET / HTTP/1.1\r\n: b\r\n\r\n", HTTP1Error.invalidFieldName),
        ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", HTTP1Error.invalidFieldName),
        ("GET / HTTP/1.1\r\nA: b\u{0}c\r\n\r\n", HTTP1Error.invalidFieldValue),
        ("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", HTTP1Error.invalidFieldValue),
        ("GET / HTTP/1.1\r\nA: b\u{7F}\r\n\r\n", HTTP1Error.invalidFieldValue),
        ("GET  / HTTP/1.1\r\n\r\n", HTTP1Error.invalidStartLine),
        ("GET / HTTP/1.1 \r\n\r\n", HTTP1Error.invalidStartLine),
        ("GET /a b HTTP/1.1\r\n\r\n", HTTP1Error.invalidStartLine),
        ("GET / http/1.1\r\n\r\n", HTTP1Error.invalidStartLine),
        ("GET /\r\n\r\n", HTTP1Error.invalidStartLine),
        ("G(T / HTTP/1.1\r\n\r\n", HTTP1Error.invalidStartLine),
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", HTTP1Error.unsupportedVersion),
        ("GET / HTTP/3.0\r\n\r\n", HTTP1Error.unsupportedVersion),
        ("\u{16}\u{3}\u{1}", HTTP1Error.notHTTP),
        (" GET / HTTP/1.1\r\n\r\n", HTTP1Error.notHTTP),
    ])
    func rejectsMalformedRequestHeads(text: String, error: HTTP1Error) {
        #expect(throws: error) { try request(text) }
    }

    @Test func enforcesTheLimits() throws {
        let limits = HTTPHeadLimits(maxHeadBytes: 100, maxFields: 3)
        let fields3 = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        #expect(try request(fields3, limits: limits)?.0.headers.fields.count == 3)
        #expect(throws: HTTP1Error.tooManyFields) {
            try request("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", limits: limits)
        }
        // Exactly at the limit is fine; one more byte is not, even before the head ends.
        let exact = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 100 - 23) + "\r\n\r\n"
        #expect(exact.utf8.count == 100)
        #expect(try request(exact, limits: limits) != nil)
        #expect(throws: HTTP1Error.headTooLarge) {
            try request("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 78) + "\r\n\r\n", limits: limits)
        }
        #expect(throws: HTTP1Error.headTooLarge) {
            try request("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 200), limits: limits)
        }
        #expect(throws: HTTP1Error.headTooLarge) { try request(String(repeating: "A", count: 70_000)) }
    }

    @Test func keepsObsTextValuesByteForByte() throws {
        var bytes = Array("GET / HTTP/1.1\r\nX: caf".utf8) + [0xE9] + Array("\r\nY: é\r\n\r\n".utf8)
        var parser = HTTPHeadParser()
        let (head, _) = try #require(try bytes.withUnsafeBytes { try parser.parseRequest($0) })
        #expect(head.headers["X"] == "café")
        #expect(head.headers["Y"] == "é")
        bytes = []
    }

    @Test func keepAliveRules() throws {
        #expect(try #require(try request("GET / HTTP/1.1\r\n\r\n")).0.wantsKeepAlive)
        #expect(
            try #require(try request("GET / HTTP/1.1\r\nConnection: Keep-Alive, CLOSE\r\n\r\n")).0.wantsKeepAlive
                == false)
        #expect(try #require(try request("GET / HTTP/1.0\r\n\r\n")).0.wantsKeepAlive == false)
        #expect(try #require(try request("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")).0.wantsKeepAlive)
    }
}
