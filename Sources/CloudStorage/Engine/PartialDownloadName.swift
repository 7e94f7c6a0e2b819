import Foundation

/// The names of the temporary files a file download writes before renaming them over their
/// target: `.NAME.XXXXXXXX.download` beside `NAME` (hidden, in the same directory so the rename
/// is atomic), `XXXXXXXX` eight upper-case hexadecimal digits.
///
/// A download takes the lowest of a few numbered names (`00000000`, `00000001`, …) that no
/// other download of the target holds, so that the next download finds a dead one's file by
/// trying those names, without listing the directory; when every numbered name is in use, a
/// random one. One pattern serves whoever must recognise such a file: the next download of the
/// same target (``FileDownloadDestination``), and the walk of a directory to upload, which never
/// takes one for a file of the user's (``LocalDirectoryTree``).
enum PartialDownloadName {
    private static let suffix = ".download"
    private static let digits = 8
    /// How many downloads of one target at once get numbered names.
    static let numberedCount = 8

    /// The numbered names for partial downloads of `name`, lowest first.
    static func numbered(for name: String) -> [String] {
        (0..<numberedCount).map { number in
            let hex = String(number, radix: 16, uppercase: true)
            return ".\(name).\(String(repeating: "0", count: digits - hex.count))\(hex)\(suffix)"
        }
    }

    /// A random name for a partial download of `name`.
    static func random(for name: String) -> String {
        ".\(name).\(UUID().uuidString.prefix(digits))\(suffix)"
    }

    /// Whether `fileName` has the pattern of a partial download, of any target.
    static func isPartial(_ fileName: String) -> Bool {
        let bytes = Array(fileName.utf8)
        // "." NAME "." DIGITS ".download", NAME not empty.
        let tail = digits + suffix.utf8.count
        guard bytes.count > 2 + tail, bytes[0] == UInt8(ascii: "."), fileName.hasSuffix(suffix) else { return false }
        let dot = bytes.count - tail - 1
        return bytes[dot] == UInt8(ascii: ".")
            && bytes[(dot + 1)..<(dot + 1 + digits)].allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains($0)
            }
    }
}
