import NativeTLS
import Testing

@testable import StorageEmulator

@Suite("Streaming SHA-256")
struct SHA256StreamTests {
    @Test("known answers: empty, abc, and the two-block message of FIPS 180-4")
    func knownAnswers() {
        func digest(_ text: String) -> String {
            var stream = SHA256Stream()
            Array(text.utf8).withUnsafeBytes { stream.update($0) }
            return stream.hexDigest()
        }
        #expect(digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test("any length fed in any pieces matches OpenSSL's one-shot digest")
    func matchesOpenSSL() throws {
        var state: UInt64 = 42
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33)
        }
        for length in Array(0...130) + [1000, 4095, 65_536, 100_001] {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            var stream = SHA256Stream()
            var offset = 0
            while offset < length {
                let piece = min(length - offset, 1 + next() % 97)
                bytes[offset..<offset + piece].withUnsafeBytes { stream.update($0) }
                offset += piece
            }
            let expected = try OpenSSLDigest.sha256(bytes).map { byte in
                let digits = Array("0123456789abcdef")
                return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
            }.joined()
            #expect(stream.hexDigest() == expected, "length \(length)")
        }
    }
}
