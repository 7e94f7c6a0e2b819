/// A bucket's objects by name: found by name at once, and walked in name order (the UTF-8
/// bytes of the names, as Cloud Storage lists them) from any name on.
///
/// Stores keep one per bucket so that a listing seeks to where its page starts (a prefix, a
/// page token, the end of a collapsed common prefix) instead of sorting the whole bucket:
/// a page costs in proportion to what it visits, not to the bucket.
///
/// The values sit in a dictionary; the order is kept beside it as sorted blocks of at most
/// ``maxBlockCount`` keys (512). Finding the first key at or after a name costs two binary
/// searches, O(log n); inserting or removing a name moves the keys of one block at most.
/// A value type: mutate it in place (through its store's lock), never through a copy.
package struct ObjectIndex<Value>: ExpressibleByDictionaryLiteral {
    /// The most keys a block holds before it splits in two.
    let maxBlockCount: Int
    private var values: [ObjectKey: Value] = [:]
    /// Every key of `values` once, in order, in blocks that are never empty.
    private var blocks: [[ObjectKey]] = []

    /// An empty index.
    package init() {
        self.init(maxBlockCount: 512)
    }

    /// An empty index with blocks of at most `maxBlockCount` keys (tests use tiny ones).
    init(maxBlockCount: Int) {
        self.maxBlockCount = max(2, maxBlockCount)
    }

    /// An index of these entries; a key given twice keeps its last value.
    package init(dictionaryLiteral elements: (ObjectKey, Value)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }

    /// The number of objects.
    package var count: Int { values.count }

    /// The value of a name; setting nil removes the name.
    package subscript(key: ObjectKey) -> Value? {
        get { values[key] }
        set {
            if let newValue {
                if values.updateValue(newValue, forKey: key) == nil { insertKey(key) }
            } else if values.removeValue(forKey: key) != nil {
                removeKey(key)
            }
        }
    }

    /// Changes the value of a name in place, without copying it (nil when the name has none;
    /// leaving nil removes the name).
    package mutating func update<Result, Failure: Error>(
        _ key: ObjectKey, _ change: (inout Value?) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        // Taken out of the dictionary, the value is held once: `change` mutates it in place.
        var value = values.removeValue(forKey: key)
        let existed = value != nil
        defer {
            if let value {
                values[key] = value
                if !existed { insertKey(key) }
            } else if existed {
                removeKey(key)
            }
        }
        return try change(&value)
    }

    /// Visits the entries in name order from the first key at or after `start`, for as long as
    /// `visit` asks (see ``ScanStep``).
    ///
    /// A ``ScanStep/seek(_:)`` to a key that is not after the current one goes on with the next.
    package func walk(from start: ObjectKey, _ visit: (ObjectKey, Value) -> ScanStep) {
        var (block, offset) = position(atOrAfter: start)
        while block < blocks.count {
            let key = blocks[block][offset]
            let step = values[key].map { visit(key, $0) } ?? .next
            switch step {
            case .stop:
                return
            case .seek(let target) where key < target:
                (block, offset) = position(atOrAfter: target)
            case .next, .seek:
                offset += 1
                if offset == blocks[block].count {
                    block += 1
                    offset = 0
                }
            }
        }
    }

    /// Where the first key at or after `key` is; `(blocks.count, 0)` when every key is before it.
    private func position(atOrAfter key: ObjectKey) -> (block: Int, offset: Int) {
        // The first block whose last key is at or after `key`: it holds the answer.
        var low = 0
        var high = blocks.count
        while low < high {
            let middle = (low + high) / 2
            let last = blocks[middle][blocks[middle].count - 1]
            if last < key { low = middle + 1 } else { high = middle }
        }
        guard low < blocks.count else { return (blocks.count, 0) }
        return (low, Self.firstIndex(notBefore: key, in: blocks[low]))
    }

    /// The index of the first of the sorted `keys` at or after `key`.
    private static func firstIndex(notBefore key: ObjectKey, in keys: [ObjectKey]) -> Int {
        var low = 0
        var high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private mutating func insertKey(_ key: ObjectKey) {
        guard !blocks.isEmpty else {
            blocks = [[key]]
            return
        }
        var (block, offset) = position(atOrAfter: key)
        if block == blocks.count {
            // After every key: the end of the last block.
            block -= 1
            offset = blocks[block].count
        }
        blocks[block].insert(key, at: offset)
        if blocks[block].count > maxBlockCount {
            let half = blocks[block].count / 2
            let upper = Array(blocks[block][half...])
            blocks[block].removeSubrange(half...)
            blocks.insert(upper, at: block + 1)
        }
    }

    private mutating func removeKey(_ key: ObjectKey) {
        let (block, offset) = position(atOrAfter: key)
        guard block < blocks.count, blocks[block][offset] == key else { return }
        blocks[block].remove(at: offset)
        if blocks[block].isEmpty {
            blocks.remove(at: block)
        } else if block + 1 < blocks.count, blocks[block].count + blocks[block + 1].count <= maxBlockCount / 2 {
            // Neighbours that removals thinned out become one, so blocks stay few.
            blocks[block].append(contentsOf: blocks[block + 1])
            blocks.remove(at: block + 1)
        }
    }
}

extension ObjectIndex: Sendable where Value: Sendable {}
