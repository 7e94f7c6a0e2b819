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
        fields.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        fields.append((name, value))
    }

    /// Removes every field of this name.
    package mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// Every value of the named field, in order.
    package func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }

    /// The first value of the named field.
    package subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    package func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}
