import Testing
import V4Signing

/// The calendar and percent-encoding the V4 signer and verifier share; the verifier runs them
/// on text strangers send.
@Suite("V4 signing primitives")
struct V4SigningPrimitivesTests {
    @Test(
        "timestamps format as YYYYMMDDTHHMMSSZ in UTC",
        arguments: [
            (1_549_011_600, "20190201T090000Z"), (0, "19700101T000000Z"), (-1, "19691231T235959Z"),
            (1_709_164_800, "20240229T000000Z"), (951_782_400, "20000229T000000Z"),
            (253_402_300_799, "99991231T235959Z"), (-62_135_596_800, "00010101T000000Z"),
        ] as [(Int64, String)])
    func format(_ pair: (Int64, String)) throws {
        let timestamp = try #require(V4Timestamp(secondsSince1970: pair.0))
        #expect(timestamp.text == pair.1)
        #expect(V4Timestamp(text: pair.1) == timestamp)
        #expect(timestamp.dateStamp == String(pair.1.prefix(8)))
    }

    @Test("formatting and parsing are inverse over the whole range")
    func roundTrip() throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let seconds = Int64(state >> 27 % 315_537_897_600) - 62_135_596_800
            let clamped = min(max(seconds, -62_135_596_800), 253_402_300_799)
            let timestamp = try #require(V4Timestamp(secondsSince1970: clamped))
            #expect(V4Timestamp(text: timestamp.text)?.secondsSince1970 == clamped)
        }
        #expect(V4Timestamp(secondsSince1970: 253_402_300_800) == nil)
        #expect(V4Timestamp(secondsSince1970: -62_135_596_801) == nil)
        #expect(V4Timestamp(secondsSince1970: .max) == nil)
        #expect(V4Timestamp(secondsSince1970: .min) == nil)
    }

    @Test(
        "impossible or malformed timestamps are refused",
        arguments: [
            "20190230T000000Z", "20190229T000000Z", "21000229T000000Z", "20191301T000000Z", "20190001T000000Z",
            "20190100T000000Z", "20190201T240000Z", "20190201T096000Z", "20190201T090060Z", "00000101T000000Z",
            "20190201T090000z", "20190201 090000Z", "+0190201T090000Z", "2019020T1090000Z", "20190201T090000",
            "20190201T090000ZZ", "", "２０１９0201T090000Z",
        ])
    func refused(_ text: String) {
        #expect(V4Timestamp(text: text) == nil)
    }

    @Test("percent-encoding keeps RFC 3986's unreserved bytes (and slashes in paths), escapes the rest")
    func percentEncoding() {
        #expect(V4PercentEncoding.encode("AZaz09-._~") == "AZaz09-._~")
        #expect(V4PercentEncoding.encode("a/b c+d&é") == "a%2Fb%20c%2Bd%26%C3%A9")
        #expect(V4PercentEncoding.encode("a/b c", keepingSlashes: true) == "a/b%20c")
        #expect(V4PercentEncoding.decode("a%2Fb%20c%2bd%C3%A9") == "a/b c+dé")
        for malformed in ["%", "%G1", "%4", "%C3", "%FF"] {
            #expect(V4PercentEncoding.decode(malformed) == nil, "\(malformed)")
        }
    }

    @Test("header values are trimmed and inner runs of spaces and tabs collapse; hosts lose their port")
    func canonicalValues() {
        #expect(V4CanonicalRequest.canonicalHeaderValue("\t a \t\t b  ") == "a b")
        #expect(V4CanonicalRequest.canonicalHeaderValue("") == "")
        #expect(V4CanonicalRequest.canonicalHost(authority: "Example.COM:8080") == "example.com")
        #expect(V4CanonicalRequest.canonicalHost(authority: "[::1]:4443") == "[::1]")
        #expect(V4CanonicalRequest.canonicalHost(authority: "[::1]") == "[::1]")
        #expect(V4CanonicalRequest.canonicalHost(authority: "127.0.0.1") == "127.0.0.1")
    }
}
