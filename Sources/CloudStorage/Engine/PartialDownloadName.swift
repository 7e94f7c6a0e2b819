import Foundation

/// The names of the temporary files a file download writes before renaming them over their
/// target: `.NAME.XXXXXXXX.download` beside `NAME` (hidden, in the same directory so the rename
/// is atomic; eight upper-case hexadecimal digits make two downloads' names differ).
///
/// One pattern serves whoever must recognise such a file: the next download of the same target
/// removes those a dead process left (``FileDownloadDestination``), and the walk of a directory
/// to upload never takes one for a file of the user's (``LocalDirectoryTree``).
enum PartialDownloadName {
    private static let suffix = ".download"
    private static let digits = 8

    /// A new name for a partial download of `name`.
    static func make(for name: String) -> String {
        ".\(name).\(UUID().uuidString.prefix(digits)).download"
    }

    /// Whether `fileName` has the pattern of a partial download, of any target.
    static func isPartial(_ fileName: String) -> Bool {
        target(of: fileName) != nil
    }

    /// Whether `fileName` is the name of a partial download of `name`.
    static func isPartial(_ fileName: String, of name: String) -> Bool {
        target(of: fileName) == name
    }

    /// The target's name a partial download's `fileName` stands for, or nil when it is no such name.
    private static func target(of fileName: String) -> String? {
        let bytes = Array(fileName.utf8)
        // "." NAME "." DIGITS ".download", NAME not empty.
        let tail = digits + suffix.utf8.count
        guard bytes.count > 2 + tail, bytes[0] == UInt8(ascii: "."), fileName.hasSuffix(suffix) else { return nil }
        let dot = bytes.count - tail - 1
        guard bytes[dot] == UInt8(ascii: "."),
            bytes[(dot + 1)..<(dot + 1 + digits)].allSatisfy({
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains($0)
            })
        else { return nil }
        return String(decoding: bytes[1..<dot], as: UTF8.self)
    }
}
