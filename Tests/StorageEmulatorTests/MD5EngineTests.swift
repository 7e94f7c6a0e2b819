import Foundation
import NativeTLS
import Testing

@testable import StorageEmulator

/// ``MD5`` computes with OpenSSL when it loads and with ``PortableMD5`` otherwise: both must
/// give the same digests, however the bytes are split, and a snapshot must not change when
/// the value it was taken from goes on.
@Suite("MD5 engines")
struct MD5EngineTests {
    static func hex(_ digest: [UInt8]) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    static func openSSL(_ pieces: [ArraySlice<UInt8>]) throws -> [UInt8] {
        let context = try OpenSSLDigest.Context(.md5)
        for piece in pieces { piece.withUnsafeBytes { context.update($0) } }
        return try context.finalize()
    }

    static func portable(_ pieces: [ArraySlice<UInt8>]) -> [UInt8] {
        var md5 = PortableMD5()
        for piece in pieces { piece.withUnsafeBytes { md5.update($0) } }
        return md5.finalize()
    }

    @Test(arguments: ChecksumTests.vectors)
    func bothEnginesMatchRFC1321(input: String, expected: String) throws {
        try #require(TLSLibrary.isAvailable, "the OpenSSL engine needs OpenSSL 3")
        let bytes = Array(input.utf8)
        #expect(Self.hex(try Self.openSSL([bytes[...]])) == expected)
        #expect(Self.hex(Self.portable([bytes[...]])) == expected)
    }

    @Test func bothEnginesAgreeOnRandomBytesInRandomSplits() throws {
        try #require(TLSLibrary.isAvailable, "the OpenSSL engine needs OpenSSL 3")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let count = Int.random(in: 0...20_000, using: &generator)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var pieces: [ArraySlice<UInt8>] = []
            var index = 0
            while index < count {
                let end = min(count, index + Int.random(in: 0...300, using: &generator))
                pieces.append(bytes[index..<end])
                index = end
            }
            let whole = Self.portable([bytes[...]])
            #expect(try Self.openSSL(pieces) == whole, "\(count) bytes in \(pieces.count) pieces")
            #expect(Self.portable(pieces) == whole, "\(count) bytes in \(pieces.count) pieces")
        }
    }

    @Test func aSnapshotStaysAsItWasWhenTheOriginalGoesOn() {
        var md5 = MD5()
        md5.update(Array("message ".utf8))
        let snapshot = md5
        md5.update(Array("digest".utf8))
        #expect(Self.hex(md5.finalize()) == "f96b697d7cb7938d525a2f31aaf161d0")
        // finalize leaves the state alone, and the snapshot never saw "digest".
        #expect(Self.hex(md5.finalize()) == "f96b697d7cb7938d525a2f31aaf161d0")
        #expect(snapshot.finalize() == MD5.digest(Array("message ".utf8)))
        var restored = snapshot
        restored.update(Array("digest".utf8))
        #expect(restored.finalize() == md5.finalize())
    }
}
