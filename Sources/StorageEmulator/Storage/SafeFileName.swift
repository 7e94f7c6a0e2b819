/// Maps object and bucket names to file names that stay inside their directory.
///
/// Every byte outside `[A-Za-z0-9_~-]` becomes `%XX`, so the result contains
/// no `/`, no `.` (hence never `.` or `..`, never a hidden file), no NUL and no
/// control or non-ASCII bytes; because `%` itself is encoded, the mapping is
/// one-to-one. A name whose encoding would exceed `maximumLength` (file systems
/// allow 255 bytes; GCS names reach 1024 bytes) is replaced by the hex MD5 of
/// the name, with a different prefix so the two forms can never collide; the
/// real name lives in the metadata file either way. Versions' bytes add a
/// `g<generation>-` prefix (at most 21 more bytes).
package enum SafeFileName {
    /// The longest file name produced.
    package static let maximumLength = 200

    /// The file name an object's name maps to (its live version's record is this plus `.json`).
    package static func object(_ name: String) -> String {
        let encoded = "o-" + percentEncode(name)
        if encoded.utf8.count <= maximumLength { return encoded }
        return "h-" + MD5.digest(name.utf8).map { hex($0) }.joined()
    }

    /// The file name of one version's bytes, live or noncurrent (a noncurrent version's record
    /// is this plus `.json`; the live version's is ``object(_:)`` plus `.json`).
    ///
    /// The `g<generation>-` prefix keeps it apart from every object's own name (`o-…`, `h-…`).
    package static func version(_ name: String, generation: Int64) -> String {
        "g\(generation)-" + object(name)
    }

    /// The directory name of a bucket.
    package static func bucket(_ name: String) -> String {
        "b-" + percentEncode(name)
    }

    /// Whether `fileName` could have come from ``object(_:)`` or ``bucket(_:)``.
    package static func isSafe(_ fileName: String) -> Bool {
        let bytes = Array(fileName.utf8)
        return !bytes.isEmpty && bytes.count <= maximumLength + 26
            && bytes.allSatisfy { isUnreserved($0) || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: ".") }
            && bytes.first != UInt8(ascii: ".")
    }

    static func percentEncode(_ name: String) -> String {
        var result = ""
        result.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            if isUnreserved(byte) {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += "%" + hex(byte).uppercased()
            }
        }
        return result
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~") || byte == UInt8(ascii: "-")
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }
}
