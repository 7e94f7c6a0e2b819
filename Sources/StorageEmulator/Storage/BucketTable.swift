import Foundation

/// The buckets of a store, one table for every kind of store: each keeps it in its own state,
/// under its own lock, and makes a change durable its own way (`persist`, called before the
/// table changes, so a failure leaves the table as it was).
struct BucketTable: Sendable {
    private var records: [String: BucketRecord] = [:]

    /// The bucket named `name`, if there is one.
    subscript(name: String) -> BucketRecord? { records[name] }

    /// Every bucket, in the order listings give names.
    var sorted: [BucketRecord] { records.values.sorted { NameRules.precedes($0.name, $1.name) } }

    /// Adds a bucket read back from storage.
    mutating func load(_ record: BucketRecord) {
        records[record.name] = record
    }

    /// Creates bucket `name`; false, changing nothing, when the name is taken.
    ///
    /// - Throws: ``StoreError`` when the name breaks Cloud Storage's bucket-name rules, or what
    ///   `persist` throws; the bucket then does not exist.
    mutating func create(
        _ name: String, persist: (BucketRecord) throws(StoreError) -> Void = { _ in }
    ) throws(StoreError) -> Bool {
        try NameRules.validateBucketName(name)
        guard records[name] == nil else { return false }
        let record = BucketRecord(name: name, timeCreated: Date())
        try persist(record)
        records[name] = record
        return true
    }

    /// Changes bucket `name` with `change`; nil when there is none.
    ///
    /// - Throws: What `change` or `persist` throws; the bucket is then unchanged.
    mutating func update(
        _ name: String, _ change: (inout BucketRecord) throws -> Void,
        persist: (BucketRecord) throws -> Void = { _ in }
    ) throws -> BucketRecord? {
        guard var record = records[name] else { return nil }
        try change(&record)
        try persist(record)
        records[name] = record
        return record
    }

    /// Deletes bucket `name` when `condition` holds and it holds no object; false when there
    /// is none.
    ///
    /// - Parameter isEmpty: Whether the bucket holds no object, live or noncurrent.
    /// - Throws: ``StoreError/conditionNotMet``, ``StoreError/bucketNotEmpty``, or what
    ///   `persist` throws; the bucket then stays.
    mutating func delete(
        _ name: String, if condition: (BucketRecord) -> Bool, isEmpty: Bool,
        persist: () throws(StoreError) -> Void = {}
    ) throws(StoreError) -> Bool {
        guard let record = records[name] else { return false }
        guard condition(record) else { throw .conditionNotMet }
        guard isEmpty else { throw .bucketNotEmpty }
        try persist()
        records[name] = nil
        return true
    }
}
