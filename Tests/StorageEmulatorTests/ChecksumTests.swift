import Foundation
import Testing

@testable import StorageEmulator

@Suite("Checksums")
struct ChecksumTests {
    static let vectors: [(String, String)] = [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
        (
            "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
            "57edf4a22be3c955ac49da2e2107b67a"
        ),
    ]

    @Test("MD5 matches the RFC 1321 test suite", arguments: vectors)
    func md5Vectors(input: String, expected: String) {
        let hex = MD5.digest(input.utf8).map { String(format: "%02x", $0) }.joined()
        #expect(hex == expected)
    }

    @Test("MD5 fed in uneven pieces equals MD5 in one go, across block boundaries")
    func md5Streaming() {
        let bytes = testBytes(10_000)
        let whole = MD5.digest(bytes)
        for pieceSize in [1, 3, 55, 56, 63, 64, 65, 127, 1000] {
            var md5 = MD5()
            var index = 0
            while index < bytes.count {
                let end = min(bytes.count, index + pieceSize)
                md5.update(bytes[index..<end])
                index = end
            }
            #expect(md5.finalize() == whole, "piece size \(pieceSize)")
        }
    }

    @Test("MD5 of lengths around the padding boundary (55, 56, 64 bytes)")
    func md5PaddingBoundaries() {
        // Known digests of "a" repeated.
        #expect(
            MD5.digest(Array(repeating: UInt8(ascii: "a"), count: 55)).map { String(format: "%02x", $0) }.joined()
                == "ef1772b6dff9a122358552954ad0df65")
        #expect(
            MD5.digest(Array(repeating: UInt8(ascii: "a"), count: 56)).map { String(format: "%02x", $0) }.joined()
                == "3b0c8ac703f828b04c6c197006d17218")
        #expect(
            MD5.digest(Array(repeating: UInt8(ascii: "a"), count: 64)).map { String(format: "%02x", $0) }.joined()
                == "014842d480b571495a4a0363793f7367")
    }

    @Test("CRC32C check value and big-endian base64")
    func crc32c() {
        var checksums = Checksums()
        Array("123456789".utf8).withUnsafeBytes { checksums.update($0) }
        #expect(checksums.crc32c == 0xE306_9283)
        #expect(ChecksumEncoding.base64(crc32c: 0xE306_9283) == "4waSgw==")
        #expect(ChecksumEncoding.crc32c(base64: "4waSgw==") == 0xE306_9283)
        #expect(ChecksumEncoding.crc32c(base64: "nope") == nil)
    }

    @Test("x-goog-hash values are parsed from one or several fields")
    func googHash() {
        let parsed = ChecksumEncoding.googHash(["crc32c=4waSgw==,md5=XrY7u+Ae7tCTyyK7j1rNww=="])
        #expect(parsed.crc32c == "4waSgw==")
        #expect(parsed.md5 == "XrY7u+Ae7tCTyyK7j1rNww==")
        let split = ChecksumEncoding.googHash(["md5=AAAA", "crc32c=BBBB"])
        #expect(split.crc32c == "BBBB" && split.md5 == "AAAA")
    }
}
