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

    /// The first key after this one in byte order (this one and a 0 byte): where a listing
    /// resumes after a name.
    package var successor: ObjectKey { ObjectKey(bytes: bytes + [0]) }

    /// The first key after every key that starts with this one, in byte order: where a listing
    /// resumes past a common prefix. Nil when no key can follow (this one is empty, or all 0xFF).
    package var prefixEnd: ObjectKey? {
        var end = bytes
        while let last = end.popLast() {
            if last < 0xFF { return ObjectKey(bytes: end + [last + 1]) }
        }
        return nil
    }

    /// Byte order, as GCS lists names.
    package static func < (lhs: ObjectKey, rhs: ObjectKey) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
