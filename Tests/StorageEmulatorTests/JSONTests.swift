import Foundation
import Testing

@testable import StorageEmulator

@Suite("JSON answers")
struct JSONTests {
    @Test("Keys are sorted by their bytes, nested values keep their shapes, and the result parses back")
    func shapesAndOrder() throws {
        let object: [String: Any] = [
            "size": "42",
            "Zed": 1,
            "alpha": true,
            "kind": "storage#object",
            "items": [["name": "a/b"], ["name": "c"]] as [Any],
            "prefixes": ["x/", "y/"],
            "metadata": ["k": "v"],
            "nothing": NSNull(),
            "code": Int64(-499),
            "ok": false,
        ]
        let text = String(decoding: JSON.encode(object), as: UTF8.self)
        #expect(
            text
                == #"{"Zed":1,"alpha":true,"code":-499,"items":[{"name":"a/b"},{"name":"c"}],"kind":"storage#object","#
                + #""metadata":{"k":"v"},"nothing":null,"ok":false,"prefixes":["x/","y/"],"size":"42"}"#)
        let parsed = try #require(try JSONSerialization.jsonObject(with: JSON.encode(object)) as? [String: Any])
        #expect(parsed["size"] as? String == "42")
        #expect((parsed["items"] as? [[String: Any]])?.count == 2)
    }

    @Test("Strings are escaped as JSON requires, and non-ASCII text passes through as UTF-8")
    func escaping() throws {
        let tricky = "quote \" backslash \\ newline \n return \r tab \t bell \u{07} nul \u{00} slash / é 🚀"
        let data = JSON.encode(["name": tricky])
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#"quote \" backslash \\ newline \n return \r tab \t bell \u0007 nul \u0000 slash / é 🚀"#))
        let parsed = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(parsed["name"] as? String == tricky)
    }
}

@Suite("Timestamps")
struct TimestampTests {
    @Test("RFC 3339 in UTC with milliseconds, zero-padded")
    func format() {
        #expect(Timestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1_763_716_503.5)) == "2025-11-21T09:15:03.500Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: 951_782_400.25)) == "2000-02-29T00:00:00.250Z")
    }
}
