import Foundation
import Synchronization

/// Keeps buckets and objects in memory.
package final class MemoryObjectStore: ObjectStore {
    private struct Stored {
        var record: ObjectRecord
        var bytes: Data
    }

    private struct State {
        var buckets: [String: BucketRecord] = [:]
        /// By bucket, then by name (see ``ObjectIndex``).
        var objects: [String: ObjectIndex<Stored>] = [:]
        var clock = GenerationClock()
    }

    private let state = Mutex(State())

    package init() {}

    package func createBucket(_ name: String) throws(StoreError) -> Bool {
        try NameRules.validateBucketName(name)
        return state.withLock { state in
            guard state.buckets[name] == nil else { return false }
            state.buckets[name] = BucketRecord(name: name, timeCreated: Date())
            state.objects[name] = [:]
            return true
        }
    }

    package func bucket(_ name: String) -> BucketRecord? {
        state.withLock { $0.buckets[name] }
    }

    package func makeStagingWriter(bucket: String) throws(StoreError) -> any StagingWriter {
        MemoryStagingWriter()
    }

    package func commit(
        _ writer: any StagingWriter, record: ObjectRecord, if condition: (ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord {
        try NameRules.validateObjectName(record.name)
        guard let writer = writer as? MemoryStagingWriter else { throw .io("A staging writer of another store.") }
        let bytes = writer.take()
        return try state.withLock { (state) throws(StoreError) -> ObjectRecord in
            guard state.buckets[record.bucket] != nil else { throw .notFound("The bucket does not exist.") }
            // Under the same lock as the replacement: nothing can commit in between.
            guard condition(state.objects[record.bucket]?[ObjectKey(record.name)]?.record) else {
                throw .conditionNotMet
            }
            var record = record
            let now = Date()
            record.generation = state.clock.next(now: now)
            record.metageneration = 1
            record.timeCreated = now
            record.updated = now
            state.objects[record.bucket, default: [:]][ObjectKey(record.name)] = Stored(record: record, bytes: bytes)
            return record
        }
    }

    package func record(bucket: String, name: String) -> ObjectRecord? {
        state.withLock { $0.objects[bucket]?[ObjectKey(name)]?.record }
    }

    package func scan(bucket: String, from start: ObjectKey, _ visit: (ObjectRecord) -> ScanStep) {
        state.withLock { state in
            state.objects[bucket]?.walk(from: start) { _, stored in visit(stored.record) }
        }
    }

    package func updateRecord(
        bucket: String, name: String, _ change: (inout ObjectRecord) throws -> Void
    ) throws -> ObjectRecord? {
        try state.withLock { state in
            guard var stored = state.objects[bucket]?[ObjectKey(name)] else { return nil }
            try change(&stored.record)
            state.objects[bucket]?[ObjectKey(name)] = stored
            return stored.record
        }
    }

    package func delete(
        bucket: String, name: String, generation: Int64?, if condition: (ObjectRecord) -> Bool
    ) throws(StoreError) -> Bool {
        try state.withLock { (state) throws(StoreError) -> Bool in
            guard let stored = state.objects[bucket]?[ObjectKey(name)] else { return false }
            if let generation, generation != stored.record.generation { return false }
            guard condition(stored.record) else { throw .conditionNotMet }
            state.objects[bucket]?[ObjectKey(name)] = nil
            return true
        }
    }

    package func openReader(_ record: ObjectRecord) throws(StoreError) -> any ObjectReader {
        let bytes = try state.withLock { (state) throws(StoreError) -> Data in
            guard let stored = state.objects[record.bucket]?[ObjectKey(record.name)],
                stored.record.generation == record.generation
            else { throw .notFound("No such object.") }
            return stored.bytes
        }
        return MemoryObjectReader(bytes: bytes)
    }
}

/// Staged bytes in memory.
final class MemoryStagingWriter: StagingWriter {
    private let bytes = Mutex(Data())

    var size: Int64 { bytes.withLock { Int64($0.count) } }

    func write(_ buffer: UnsafeRawBufferPointer) throws(StoreError) {
        bytes.withLock { $0.append(contentsOf: buffer) }
    }

    func truncate(to size: Int64) throws(StoreError) {
        bytes.withLock { data in
            if Int64(data.count) > size { data.removeSubrange(Int(size)..<data.count) }
        }
    }

    func discard() {
        bytes.withLock { $0 = Data() }
    }

    /// Moves the bytes out.
    func take() -> Data {
        bytes.withLock { data in
            let taken = data
            data = Data()
            return taken
        }
    }
}

/// Reads an immutable copy-on-write snapshot of an object's bytes.
struct MemoryObjectReader: ObjectReader {
    let bytes: Data

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int {
        guard offset < Int64(bytes.count), offset >= 0 else { return 0 }
        let start = bytes.startIndex + Int(offset)
        let count = min(buffer.count, bytes.endIndex - start)
        bytes.copyBytes(to: buffer, from: start..<start + count)
        return count
    }

    func close() {}
}
