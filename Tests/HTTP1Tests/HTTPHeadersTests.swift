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
