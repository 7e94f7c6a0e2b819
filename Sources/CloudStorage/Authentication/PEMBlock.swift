import Foundation

/// The DER bytes of a PEM block (`-----BEGIN <label>-----`, base64, `-----END <label>-----`).
struct PEMBlock: Equatable {
    /// The label, such as `PRIVATE KEY`.
    let label: String
    /// The decoded body.
    let bytes: [UInt8]

    /// The first block in `text` whose label is one of `labels`, or nil when there is none
    /// or its body is not base64.
    static func derBytes(in text: String, labels: [String]) -> PEMBlock? {
        for label in labels {
            guard let begin = text.range(of: "-----BEGIN \(label)-----"),
                let end = text.range(of: "-----END \(label)-----", range: begin.upperBound..<text.endIndex)
            else { continue }
            let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
            guard let data = Data(base64Encoded: String(body)) else { return nil }
            return PEMBlock(label: label, bytes: Array(data))
        }
        return nil
    }
}

/// Just enough DER to unwrap a PKCS #8 `PrivateKeyInfo` holding an RSA key, for platforms
/// whose crypto takes PKCS #1 only (the Security framework).
enum PKCS8 {
    /// The object identifier rsaEncryption, 1.2.840.113549.1.1.1, as DER content bytes.
    private static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]

    /// The PKCS #1 `RSAPrivateKey` inside a PKCS #8 `PrivateKeyInfo`, or nil when `der` is
    /// not one or holds another kind of key.
    ///
    /// `PrivateKeyInfo ::= SEQUENCE { version INTEGER, algorithm SEQUENCE { OID, params },
    /// privateKey OCTET STRING, ... }`.
    static func rsaPrivateKey(in der: [UInt8]) -> [UInt8]? {
        var outer = DERReader(der[...])
        guard var info = outer.read(tag: 0x30), outer.isAtEnd,
            info.read(tag: 0x02) != nil,
            var algorithm = info.read(tag: 0x30),
            let oid = algorithm.read(tag: 0x06), oid.remaining.elementsEqual(rsaEncryption),
            let key = info.read(tag: 0x04)
        else { return nil }
        return Array(key.remaining)
    }
}

/// Reads DER tag-length-value items from a byte slice, refusing anything malformed.
struct DERReader {
    private(set) var remaining: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) {
        remaining = bytes
    }

    var isAtEnd: Bool { remaining.isEmpty }

    /// The next item's content if its tag is `tag`, advancing past it; nil (without
    /// advancing) for another tag or a malformed length.
    mutating func read(tag: UInt8) -> DERReader? {
        var cursor = remaining
        guard cursor.popFirst() == tag, let first = cursor.popFirst() else { return nil }
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            // Definite lengths of at most 4 bytes: keys are far smaller, and this bounds the arithmetic.
            guard (1...4).contains(count), cursor.count >= count else { return nil }
            for _ in 0..<count { length = length << 8 | Int(cursor.removeFirst()) }
        }
        guard length <= cursor.count else { return nil }
        let content = cursor.prefix(length)
        remaining = cursor.dropFirst(length)
        return DERReader(content)
    }
}
