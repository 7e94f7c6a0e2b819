import Testing

@testable import HTTP1

@Suite("HTTP headers")
struct HTTPHeadersTests {
    @Test func lookUpIsCaseInsensitiveAndSetReplaces() {
        var headers: HTTPHeaders = ["Content-Type": "a", "X-Many": "1"]
        headers.add("x-many", "2")
        #expect(headers["content-type"] == "a")
        #expect(headers.values("X-MANY") == ["1", "2"])
        headers.set("X-Many", "3")
        #expect(headers.values("x-many") == ["3"])
        headers.remove("CONTENT-TYPE")
        #expect(headers["Content-Type"] == nil)
        #expect(headers.fields.count == 1)
    }
}

@Suite("HTTP field names")
struct HTTPFieldNameTests {
    @Test(
        "Names match ignoring ASCII case only",
        arguments: [
            ("Content-Length", "content-length", true),
            ("X-GOOG-HASH", "x-goog-hash", true),
            ("x-goog-hash", "x-goog-hash", true),
            ("Content-Length", "Content-Lengths", false),
            ("Content-Type", "Content-Typf", false),
            // '@' (0x40) and '`' (0x60) differ only in bit 0x20 but are not letters.
            ("a@b", "a`b", false),
            ("[", "{", false),
            ("", "", true),
            ("Ä", "ä", false),
        ])
    func namesMatch(first: String, second: String, match: Bool) {
        #expect(HTTPHeaders.namesMatch(first, second) == match)
        #expect(HTTPHeaders.namesMatch(second, first) == match)
    }
}
