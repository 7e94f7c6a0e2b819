import Foundation

/// HTTP header fields in order, with case-insensitive look-up.
package struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    package private(set) var fields: [(name: String, value: String)] = []

    package init() {}

    package init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// Appends a field.
    package mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field of this name with one field.
    package mutating func set(_ name: String, _ value: String) {
        fields.removeAll { Self.namesMatch($0.name, name) }
        fields.append((name, value))
    }

    /// Removes every field of this name.
    package mutating func remove(_ name: String) {
        fields.removeAll { Self.namesMatch($0.name, name) }
    }

    /// Every value of the named field, in order.
    package func values(_ name: String) -> [String] {
        fields.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    /// The first value of the named field.
    package subscript(name: String) -> String? {
        fields.first { Self.namesMatch($0.name, name) }?.value
    }

    /// Whether two field names are equal ignoring ASCII case (names are tokens, RFC 9110 §5.1).
    ///
    /// Byte-wise rather than Foundation's `caseInsensitiveCompare`, which goes through
    /// locale-aware CFString comparison on Linux: it was several percent of every request.
    package static func namesMatch(_ first: String, _ second: String) -> Bool {
        var first = first
        var second = second
        return first.withUTF8 { a in
            second.withUTF8 { b in
                guard a.count == b.count else { return false }
                for index in 0..<a.count where a[index] != b[index] {
                    // Setting 0x20 maps A–Z onto a–z; only letters may differ that way.
                    let lower = a[index] | 0x20
                    guard lower == b[index] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else {
                        return false
                    }
                }
                return true
            }
        }
    }

    package func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}
