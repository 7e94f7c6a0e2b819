/// An object name as a dictionary key, compared and hashed by its UTF-8 bytes.
///
/// Swift's `String` equality, hashing and `hasPrefix` follow Unicode canonical
/// equivalence, so `café` spelled with a precomposed é (NFC) and with e plus a
/// combining accent (NFD) would be one key. Cloud Storage compares names byte by
/// byte: they are two objects. Stores key their indexes with this instead.
package struct ObjectKey: Hashable, Comparable, Sendable {
    /// The name's UTF-8 bytes.
    package let bytes: [UInt8]

    /// The key of an object name.
    package init(_ name: String) {
        bytes = Array(name.utf8)
    }

    /// The key of a name given as UTF-8 bytes.
    package init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Byte order, as GCS lists names.
    package static func < (lhs: ObjectKey, rhs: ObjectKey) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
