import CCRC32C
package import Foundation
import HTTP1

/// The running CRC32C and MD5 of a body, fed while it streams.
package struct Checksums: Sendable {
    package private(set) var crc32c: UInt32 = 0
    /// Nil when MD5 is not computed.
    package private(set) var md5: MD5?
    package private(set) var count: Int64 = 0

    /// - Parameter computingMD5: Whether to hash MD5 too (it costs several times what CRC32C does).
    package init(computingMD5: Bool = true) {
        md5 = computingMD5 ? MD5() : nil
    }

    /// Feeds bytes to both checksums.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        crc32c = cs_crc32c_update(crc32c, base, bytes.count)
        md5?.update(bytes)
        count += Int64(bytes.count)
    }

    /// The MD5 digest so far; nil when MD5 is not computed.
    package var md5Digest: Data? { md5.map { Data($0.finalize()) } }
}

extension Checksums {
    /// The CRC32C of two byte strings one after the other, from their CRC32Cs and the second's
    /// length, without the bytes (zlib's `crc32_combine`, for the Castagnoli polynomial): what
    /// a composite object's checksum is made of.
    ///
    /// Through CCRC32C's `cs_crc32c_combine` (x^(8n) modulo the polynomial, from a table of
    /// powers), the SDK's own combine.
    package static func combineCRC32C(_ first: UInt32, _ second: UInt32, secondLength: Int64) -> UInt32 {
        cs_crc32c_combine(first, second, UInt64(max(0, secondLength)))
    }
}

/// The wire encodings of checksums.
package enum ChecksumEncoding {
    /// Base64 of the big-endian CRC32C, as GCS reports and `x-goog-hash` carries it.
    package static func base64(crc32c: UInt32) -> String {
        let bytes: [UInt8] = [
            UInt8(truncatingIfNeeded: crc32c >> 24), UInt8(truncatingIfNeeded: crc32c >> 16),
            UInt8(truncatingIfNeeded: crc32c >> 8), UInt8(truncatingIfNeeded: crc32c),
        ]
        return Data(bytes).base64EncodedString()
    }

    /// Parses a base64 big-endian CRC32C.
    package static func crc32c(base64 text: String) -> UInt32? {
        guard let data = Data(base64Encoded: text), data.count == 4 else { return nil }
        return data.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// The `crc32c=…` and `md5=…` values of `x-goog-hash` header fields (either may be missing).
    package static func googHash(_ values: [String]) -> (crc32c: String?, md5: String?) {
        var crc: String?
        var md5: String?
        for value in values {
            for item in value.split(separator: ",") {
                let trimmed = item.trimmingHTTPWhitespace()
                if trimmed.hasPrefix("crc32c=") {
                    crc = String(trimmed.dropFirst("crc32c=".count))
                } else if trimmed.hasPrefix("md5=") {
                    md5 = String(trimmed.dropFirst("md5=".count))
                }
            }
        }
        return (crc, md5)
    }
}
