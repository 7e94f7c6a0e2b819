import Foundation
import Synchronization

/// Stores nothing: uploads succeed (with the size and checksums the caller
/// computed while streaming) and their bytes are only counted; every object
/// then reads as not found. Buckets are remembered. For throughput benchmarks.
///
/// A sink for measuring clients, it hashes only what clients verify: CRC32C
/// (and the size), not MD5, which costs several times more per byte and would
/// otherwise dominate the machine the benchmark shares with the client.
/// Objects report no `md5Hash` (as Cloud Storage does for composite objects);
/// an upload that declares an MD5 to check gets `400`.
package final class DiscardObjectStore: ObjectStore {
    private struct State {
        var buckets = BucketTable()
        var clock = GenerationClock()
        var bytesDiscarded: Int64 = 0
        var objectsDiscarded = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Bytes committed and thrown away so far.
    package var bytesDiscarded: Int64 { state.withLock { $0.bytesDiscarded } }
    /// Objects committed and thrown away so far.
    package var objectsDiscarded: Int { state.withLock { $0.objectsDiscarded } }

    package func createBucket(_ name: String) throws(StoreError) -> Bool {
        return try state.withLock { (state) throws(StoreError) -> Bool in try state.buckets.create(name) }
    }

    package func bucket(_ name: String) -> BucketRecord? {
        state.withLock { $0.buckets[name] }
    }

    package func buckets() -> [BucketRecord] {
        state.withLock { $0.buckets.sorted }
    }

    package func updateBucket(_ name: String, _ change: (inout BucketRecord) throws -> Void) throws -> BucketRecord? {
        try state.withLock { state in try state.buckets.update(name, change) }
    }

    package func deleteBucket(_ name: String, if condition: (BucketRecord) -> Bool) throws(StoreError) -> Bool {
        // Nothing is kept, so a bucket is always empty.
        try state.withLock { (state) throws(StoreError) -> Bool in
            try state.buckets.delete(name, if: condition, isEmpty: true)
        }
    }

    package var computesMD5: Bool { false }

    package func makeStagingWriter(bucket: String) throws(StoreError) -> any StagingWriter {
        CountingStagingWriter()
    }

    package func commit(
        _ writer: any StagingWriter, record: ObjectRecord, if condition: (ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord {
        try NameRules.validateObjectName(record.name)
        let size = writer.size
        writer.discard()
        return try state.withLock { (state) throws(StoreError) -> ObjectRecord in
            guard state.buckets[record.bucket] != nil else { throw .notFound("The bucket does not exist.") }
            // Nothing is ever kept, so the condition is asked about a missing object.
            guard condition(nil) else { throw .conditionNotMet }
            var record = record
            let now = Date()
            record.generation = state.clock.next(now: now)
            record.metageneration = 1
            record.timeCreated = now
            record.updated = now
            state.bytesDiscarded += size
            state.objectsDiscarded += 1
            return record
        }
    }

    package func record(bucket: String, name: String) -> ObjectRecord? { nil }

    package func record(bucket: String, name: String, generation: Int64) -> ObjectRecord? { nil }

    package func scan(
        bucket: String, from start: ObjectKey, versions: ScanVersions, _ visit: (ObjectRecord) -> ScanStep
    ) {}

    package func updateRecord(
        bucket: String, name: String, generation: Int64?, _ change: (inout ObjectRecord) throws -> Void
    ) throws -> ObjectRecord? { nil }

    package func delete(
        bucket: String, name: String, generation: Int64?, if condition: (ObjectRecord) -> Bool
    ) throws(StoreError) -> Bool { false }

    package func move(
        bucket: String, from source: String, to destination: String,
        if condition: (_ source: ObjectRecord, _ destination: ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord? { nil }

    package func openReader(_ record: ObjectRecord) throws(StoreError) -> any ObjectReader {
        throw .notFound("No such object.")
    }
}

/// Counts bytes and keeps none.
final class CountingStagingWriter: StagingWriter {
    private let count = Mutex<Int64>(0)

    var size: Int64 { count.withLock { $0 } }

    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        count.withLock { $0 += Int64(bytes.count) }
    }

    func truncate(to size: Int64) throws(StoreError) {
        count.withLock { $0 = min($0, size) }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        count.withLock { $0 = max($0, offset + Int64(bytes.count)) }
    }

    func append(contentsOf other: any StagingWriter, range: Range<Int64>) throws(StoreError) {
        guard other is CountingStagingWriter, other as AnyObject !== self, range.upperBound <= other.size else {
            throw .io("A staging writer of another store.")
        }
        count.withLock { $0 += Int64(range.count) }
    }

    func discard() {}
}
