import Testing

@testable import HTTP1

private func framing(_ fields: [(String, String)], version: HTTPVersion = .http11) throws -> HTTPBodyFraming {
    var headers = HTTPHeaders()
    for (name, value) in fields { headers.add(name, value) }
    return try HTTPBodyFraming.request(HTTPRequestHead(method: "PUT", target: "/", version: version, headers: headers))
}

@Suite("HTTP body framing")
struct HTTPBodyFramingTests {
    @Test func requestFraming() throws {
        #expect(try framing([]) == .length(0))
        #expect(try framing([("Content-Length", "42")]) == .length(42))
        #expect(try framing([("Content-Length", "0042")]) == .length(42))
        #expect(try framing([("Content-Length", "9223372036854775807")]) == .length(Int64.max))
        #expect(try framing([("Transfer-Encoding", "Chunked")]) == .chunked)
        // Identical repeated values collapse (RFC 9110 §8.6).
        #expect(try framing([("Content-Length", "5"), ("content-length", "5")]) == .length(5))
        #expect(try framing([("Content-Length", "5, 5")]) == .length(5))
    }

    @Test(arguments: [
        "", " ", "-1", "+1", "1 2", "0x10", "1.0", "5, 6", "5,", "9223372036854775808", "99999999999999999999",
        "١٢",
    ])
    func invalidContentLengthsAreRejected(value: String) {
        #expect(throws: HTTP1Error.invalidContentLength) { try framing([("Content-Length", value)]) }
    }

    @Test func smugglingShapesAreRejected() {
        #expect(throws: HTTP1Error.invalidContentLength) {
            try framing([("Content-Length", "5"), ("Content-Length", "6")])
        }
        #expect(throws: HTTP1Error.conflictingFraming) {
            try framing([("Content-Length", "5"), ("Transfer-Encoding", "chunked")])
        }
        #expect(throws: HTTP1Error.conflictingFraming) {
            try framing([("Transfer-Encoding", "chunked"), ("Content-Length", "0")])
        }
        #expect(throws: HTTP1Error.invalidTransferEncoding) {
            try framing([("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")])
        }
        #expect(throws: HTTP1Error.invalidTransferEncoding) { try framing([("Transfer-Encoding", "")]) }
        #expect(throws: HTTP1Error.unsupportedTransferCoding) { try framing([("Transfer-Encoding", "gzip, chunked")]) }
        #expect(throws: HTTP1Error.unsupportedTransferCoding) { try framing([("Transfer-Encoding", "chunked, gzip")]) }
        #expect(throws: HTTP1Error.unsupportedTransferCoding) { try framing([("Transfer-Encoding", "xchunked")]) }
        #expect(throws: HTTP1Error.invalidTransferEncoding) {
            try framing([("Transfer-Encoding", "chunked")], version: .http10)
        }
    }

    @Test func responseFraming() throws {
        func framing(_ status: Int, _ fields: HTTPHeaders, method: String = "GET") throws -> HTTPBodyFraming {
            try HTTPBodyFraming.response(HTTPResponseHead(status: status, headers: fields), requestMethod: method)
        }
        #expect(try framing(200, ["Content-Length": "7"]) == .length(7))
        #expect(try framing(200, ["Content-Length": "7"], method: "HEAD") == .length(0))
        #expect(try framing(204, [:]) == .length(0))
        #expect(try framing(304, ["Content-Length": "7"]) == .length(0))
        #expect(try framing(100, [:]) == .length(0))
        #expect(try framing(200, [:]) == .untilClose)
        #expect(try framing(200, ["Transfer-Encoding": "chunked", "Content-Length": "7"]) == .chunked)
        #expect(try framing(200, ["Transfer-Encoding": "gzip"]) == .untilClose)
        #expect(throws: HTTP1Error.invalidContentLength) { try framing(200, ["Content-Length": "7, 8"]) }
    }
}
