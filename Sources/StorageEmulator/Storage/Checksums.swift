import CCloudStorage
package import Foundation

/// The running CRC32C and MD5 of a body, fed while it streams.
package struct Checksums: Sendable {
    package private(set) var crc32c: UInt32 = 0
    package private(set) var md5 = MD5()
    package private(set) var count: Int64 = 0

    package init() {}

    /// Feeds bytes to both checksums.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        crc32c = cs_crc32c_update(crc32c, base, bytes.count)
        md5.update(bytes)
        count += Int64(bytes.count)
    }

    /// The MD5 digest so far.
    package var md5Digest: Data { Data(md5.finalize()) }
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
                let trimmed = item.trimmingCharacters(in: .whitespaces)
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
