import Testing

@testable import HTTP1

/// Decodes `pieces` fed one after another, keeping undecoded bytes between pieces as a reader would.
private func decode(
    _ pieces: [[UInt8]],
    limits: ChunkedBodyDecoder.Limits = .init()
) throws -> (body: [UInt8], complete: Bool, rest: [UInt8]) {
    var decoder = ChunkedBodyDecoder(limits: limits)
    var body: [UInt8] = []
    var pending: [UInt8] = []
    for piece in pieces {
        pending += piece
        while !pending.isEmpty && !decoder.isComplete {
            let (used, data) = try pending.withUnsafeBytes { bytes in try decoder.decode(bytes) }
            body += pending[data]
            pending.removeFirst(used)
            if used == 0 { break }
        }
    }
    return (body, decoder.isComplete, pending)
}

@Suite("Chunked body coding")
struct ChunkedBodyTests {
    static let wire = Array(
        "5;name=value;x=\"q\"\r\nhello\r\n1 ; ext\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\nNEXT".utf8
    )
    static let body = Array("hello 0123456789".utf8)

    @Test func decodesWholeInputAndLeavesWhatFollows() throws {
        let result = try decode([Self.wire])
        #expect(result.body == Self.body)
        #expect(result.complete)
        #expect(result.rest == Array("NEXT".utf8))
    }

    @Test func decodesAcrossEverySplit() throws {
        for split in 0...Self.wire.count {
            let result = try decode([Array(Self.wire[0..<split]), Array(Self.wire[split...])])
            #expect(result.body == Self.body, "split at \(split)")
            #expect(result.rest == Array("NEXT".utf8))
        }
        let bytewise = try decode(Self.wire.map { [$0] })
        #expect(bytewise.body == Self.body)
        #expect(bytewise.complete)
    }

    @Test func decodesAcrossRandomThreeWaySplits() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let cuts = [
                Int.random(in: 0...Self.wire.count, using: &generator),
                Int.random(in: 0...Self.wire.count, using: &generator),
            ].sorted()
            let pieces = [
                Array(Self.wire[..<cuts[0]]), Array(Self.wire[cuts[0]..<cuts[1]]), Array(Self.wire[cuts[1]...]),
            ]
            #expect(try decode(pieces).body == Self.body)
        }
    }

    @Test func callersMayReadChunkDataThemselves() throws {
        var decoder = ChunkedBodyDecoder()
        let framing = Array("1a\r\n".utf8)
        let used = try framing.withUnsafeBytes { try decoder.decode($0, maxDataBytes: 0) }
        #expect(used.consumed == 4)
        #expect(used.data.isEmpty)
        #expect(decoder.dataRemainingInChunk == 26)
        decoder.consumeData(20)
        #expect(decoder.dataRemainingInChunk == 6)
        decoder.consumeData(6)
        #expect(decoder.dataRemainingInChunk == 0)
        let end = Array("\r\n0\r\n\r\n".utf8)
        _ = try end.withUnsafeBytes { try decoder.decode($0) }
        #expect(decoder.isComplete)
    }

    @Test func incompleteInputIsNotComplete() throws {
        let result = try decode([Array("5\r\nhel".utf8)])
        #expect(result.body == Array("hel".utf8))
        #expect(!result.complete)
        #expect(try decode([Array("0\r\n\r".utf8)]).complete == false)
    }

    @Test(arguments: [
        ("\r\n", HTTP1Error.invalidChunkSize),
        ("g\r\n", HTTP1Error.invalidChunkSize),
        ("-1\r\n", HTTP1Error.invalidChunkSize),
        ("+1\r\n", HTTP1Error.invalidChunkSize),
        ("0x5\r\n", HTTP1Error.invalidChunkSize),
        ("5 5\r\nhello\r\n", HTTP1Error.invalidChunkSize),
        ("8000000000000000\r\n", HTTP1Error.invalidChunkSize),
        ("FFFFFFFFFFFFFFFFF\r\n", HTTP1Error.invalidChunkSize),
        ("5\nhello\r\n", HTTP1Error.invalidLineEnding),
        ("5;a\nhello\r\n", HTTP1Error.invalidLineEnding),
        ("5\r\nhelloX\r\n", HTTP1Error.invalidChunkFraming),
        ("5\r\nhello\rX", HTTP1Error.invalidChunkFraming),
        ("5\r\nhello\n", HTTP1Error.invalidChunkFraming),
        ("0\r\nX: y\n\r\n", HTTP1Error.invalidLineEnding),
        ("0\r\n\n", HTTP1Error.invalidLineEnding),
        ("0\r\n\rX", HTTP1Error.invalidLineEnding),
        ("5;\u{0}\r\nhello\r\n", HTTP1Error.invalidChunkSize),
    ])
    func rejectsMalformedFraming(text: String, error: HTTP1Error) {
        #expect(throws: error) { try decode([Array(text.utf8)]) }
    }

    @Test func maxChunkSizeIsAccepted() throws {
        var decoder = ChunkedBodyDecoder()
        let line = Array("7fffffffffffffff\r\n".utf8)
        _ = try line.withUnsafeBytes { try decoder.decode($0) }
        #expect(decoder.dataRemainingInChunk == Int64.max)
    }

    @Test func enforcesLineAndTrailerLimits() {
        let limits = ChunkedBodyDecoder.Limits(maxLineBytes: 16, maxTrailerBytes: 10)
        #expect(throws: HTTP1Error.chunkLineTooLong) {
            try decode([Array(("5;" + String(repeating: "x", count: 20) + "\r\n").utf8)], limits: limits)
        }
        #expect(throws: HTTP1Error.chunkLineTooLong) {
            try decode([Array((String(repeating: "0", count: 40) + "1\r\n").utf8)], limits: limits)
        }
        #expect(throws: HTTP1Error.trailersTooLarge) {
            try decode([Array("0\r\nX-Long-Trailer: value\r\n\r\n".utf8)], limits: limits)
        }
        #expect(throws: Never.self) { try decode([Array("0\r\nX: 1\r\n\r\n".utf8)], limits: limits) }
    }

    @Test func encoderRoundTripsThroughTheDecoder() throws {
        var wire: [UInt8] = []
        let pieces = [Array("abc".utf8), [], Array(repeating: 0x41, count: 300)]
        for piece in pieces { piece.withUnsafeBytes { ChunkedBodyEncoder.appendChunk($0, to: &wire) } }
        try ChunkedBodyEncoder.appendLastChunk(trailers: ["X-Goog-Hash": "crc32c=AAAAAA=="], to: &wire)
        #expect(wire.starts(with: Array("3\r\nabc\r\n12c\r\n".utf8)))
        #expect(wire.suffix(31) == Array("0\r\nX-Goog-Hash: crc32c=AAAAAA==\r\n\r\n".utf8).suffix(31))
        let result = try decode([wire])
        #expect(result.body == pieces.flatMap { $0 })
        #expect(result.complete)
        #expect(ChunkedBodyEncoder.lastChunk == Array("0\r\n\r\n".utf8))
        #expect(ChunkedBodyEncoder.chunkHeader(length: 262_144) == Array("40000\r\n".utf8))
    }
}

@Suite("HTTP head serializer")
struct HTTPHeadSerializerTests {
    @Test func requestHeadsRoundTrip() throws {
        let head = HTTPRequestHead(
            method: "POST", target: "/v0/b/b/o?name=a%20b",
            headers: ["Host": "127.0.0.1:9199", "X-Goog-Upload-Command": "upload, finalize", "Content-Length": "0"])
        var wire: [UInt8] = []
        try HTTPHeadSerializer.append(head, to: &wire)
        #expect(
            String(decoding: wire, as: UTF8.self).hasPrefix(
                "POST /v0/b/b/o?name=a%20b HTTP/1.1\r\nHost: 127.0.0.1:9199\r\n"))
        var parser = HTTPHeadParser()
        let (parsed, used) = try #require(try wire.withUnsafeBytes { try parser.parseRequest($0) })
        #expect(used == wire.count)
        #expect(parsed.method == head.method)
        #expect(parsed.target == head.target)
        #expect(parsed.headers.fields.map(\.name) == head.headers.fields.map(\.name))
        #expect(parsed.headers.fields.map(\.value) == head.headers.fields.map(\.value))
    }

    @Test func responseHeadsCarryReasonPhrases() throws {
        for (status, reason) in [
            (200, "OK"), (308, "Permanent Redirect"), (431, "Request Header Fields Too Large"),
            (499, "Client Closed Request"), (599, "Server Error"),
        ] {
            var wire: [UInt8] = []
            try HTTPHeadSerializer.append(HTTPResponseHead(status: status, headers: ["Content-Length": "0"]), to: &wire)
            #expect(
                String(decoding: wire, as: UTF8.self) == "HTTP/1.1 \(status) \(reason)\r\nContent-Length: 0\r\n\r\n")
            var parser = HTTPHeadParser()
            let parsed = try #require(try wire.withUnsafeBytes { try parser.parseResponse($0) })
            #expect(parsed.head.status == status)
            #expect(parsed.head.reason == reason)
        }
    }

    @Test func refusesFieldsThatWouldSplitTheMessage() {
        var wire: [UInt8] = []
        #expect(throws: HTTP1Error.invalidFieldValue) {
            try HTTPHeadSerializer.append(
                HTTPResponseHead(status: 200, headers: ["X": "a\r\nSet-Cookie: b"]), to: &wire)
        }
        #expect(throws: HTTP1Error.invalidFieldName) {
            try HTTPHeadSerializer.append(HTTPResponseHead(status: 200, headers: ["X Y": "a"]), to: &wire)
        }
        #expect(throws: HTTP1Error.invalidStatus) {
            try HTTPHeadSerializer.append(HTTPResponseHead(status: 42), to: &wire)
        }
        #expect(throws: HTTP1Error.invalidStartLine) {
            try HTTPHeadSerializer.append(HTTPRequestHead(method: "GET", target: "/a b"), to: &wire)
        }
    }
}
