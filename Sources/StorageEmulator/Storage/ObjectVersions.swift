/// A version of an object as a store keeps it: its record, and whatever else the store holds
/// beside it (its bytes, in memory).
protocol StoredVersion {
    /// The version's metadata.
    var record: ObjectRecord { get set }
}

extension ObjectRecord: StoredVersion {
    /// The record itself: stores that keep bytes elsewhere index bare records.
    var record: ObjectRecord {
        get { self }
        set { self = newValue }
    }
}

/// What a store keeps of one object name: its live version, if any, and its noncurrent ones
/// (a versioned bucket's replaced and deleted versions), by generation.
///
/// Stores index these by name (``ObjectIndex``), so a scan of versions walks each name's
/// versions where they are, in the order Cloud Storage lists them, and never sorts a bucket.
struct ObjectVersions<Version: StoredVersion> {
    /// The live version.
    var live: Version?
    /// The noncurrent versions, oldest (lowest generation) first.
    private(set) var noncurrent: [Version] = []

    /// Whether nothing is kept of the name: the index drops it.
    var isEmpty: Bool { live == nil && noncurrent.isEmpty }

    /// A generation, live (no index) or noncurrent (its index in ``noncurrent``); nil if not kept.
    func locate(generation: Int64) -> (version: Version, index: Int?)? {
        if let live, live.record.generation == generation { return (live, nil) }
        let index = Self.firstIndex(in: noncurrent) { $0 >= generation }
        guard index < noncurrent.count, noncurrent[index].record.generation == generation else { return nil }
        return (noncurrent[index], index)
    }

    /// Keeps a noncurrent version, in generation order.
    mutating func keep(_ version: Version) {
        noncurrent.insert(version, at: Self.firstIndex(in: noncurrent) { $0 > version.record.generation })
    }

    /// Removes the noncurrent version at `index`.
    mutating func removeNoncurrent(at index: Int) {
        noncurrent.remove(at: index)
    }

    /// Changes the record of the live version, or of `generation` when given; nil if it is not
    /// kept. A throw of `change` (or of `save`, which gets the changed record first) changes nothing.
    mutating func updateRecord(
        generation: Int64?, _ change: (inout ObjectRecord) throws -> Void, save: (ObjectRecord) throws -> Void
    ) throws -> ObjectRecord? {
        guard let generation = generation ?? live?.record.generation,
            let (version, index) = locate(generation: generation)
        else { return nil }
        var record = version.record
        try change(&record)
        try save(record)
        if let index { noncurrent[index].record = record } else { live?.record = record }
        return record
    }

    /// Visits these versions for a scan and says how the scan goes on: the live one, or (`all`)
    /// the noncurrent ones and then the live one, only those after `after` when given.
    func visit(all: Bool, after: Int64?, _ visit: (ObjectRecord) -> ScanStep) -> ScanStep {
        guard all else { return live.map { visit($0.record) } ?? .next }
        let first = after.map { after in Self.firstIndex(in: noncurrent) { $0 > after } } ?? 0
        for version in noncurrent[first...] {
            let step = visit(version.record)
            if step != .next { return step }
        }
        guard let live, after.map({ $0 < live.record.generation }) ?? true else { return .next }
        return visit(live.record)
    }

    /// The index of the first of `versions` (in generation order) whose generation `isPast`
    /// holds for (and for every later one).
    private static func firstIndex(in versions: [Version], where isPast: (Int64) -> Bool) -> Int {
        var low = 0
        var high = versions.count
        while low < high {
            let middle = (low + high) / 2
            if isPast(versions[middle].record.generation) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

extension ObjectVersions: Sendable where Version: Sendable {}

extension ObjectIndex {
    /// Scans the versions of the names from the first at or after `start`, as
    /// ``ObjectStore/scan(bucket:from:versions:_:)`` does.
    func scan<Version>(from start: ObjectKey, versions: ScanVersions, _ visit: (ObjectRecord) -> ScanStep)
    where Value == ObjectVersions<Version> {
        walk(from: start) { key, entry in
            switch versions {
            case .live: entry.visit(all: false, after: nil, visit)
            // Only the start's own name resumes after a generation.
            case .all(let after): entry.visit(all: true, after: key == start ? after : nil, visit)
            }
        }
    }

    /// Changes what is kept of a name in place; a name left with no version is dropped.
    mutating func updateVersions<Version, Result, Failure: Error>(
        _ key: ObjectKey, _ change: (inout ObjectVersions<Version>) throws(Failure) -> Result
    ) throws(Failure) -> Result where Value == ObjectVersions<Version> {
        try update(key) { (value) throws(Failure) -> Result in
            var versions = value ?? ObjectVersions()
            // Held once while it changes.
            value = nil
            defer { value = versions.isEmpty ? nil : versions }
            return try change(&versions)
        }
    }
}
