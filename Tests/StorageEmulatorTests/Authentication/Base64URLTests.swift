import Testing

@testable import StorageEmulator

/// JWT parts decode only from their one canonical spelling.
@Suite("Base64url")
struct Base64URLTests {
    @Test("round trip for every length and byte")
    func roundTrip() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 251) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text[...]) == bytes)
        }
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
    }

    @Test(
        "non-canonical spellings are refused",
        arguments: ["A", "AAAAA", "AB", "AAB", "AA==", "+/8", "AA A", "AA\n", "é", "AA.A"])
    func refused(_ text: String) {
        #expect(Base64URL.decode(text[...]) == nil)
    }

    @Test("the canonical spellings of short inputs decode")
    func canonical() {
        #expect(Base64URL.decode("AA") == [0])
        #expect(Base64URL.decode("AAA") == [0, 0])
        #expect(Base64URL.decode("") == [])
    }
}
