import Foundation
import Synchronization

/// Keeps buckets and objects in memory.
package final class MemoryObjectStore: ObjectStore {
    private struct Stored: StoredVersion {
        var record: ObjectRecord
        var bytes: Data
    }

    private struct State {
        var buckets = BucketTable()
        /// By bucket, then by name (see ``ObjectIndex``): each name's live and noncurrent versions.
        var objects: [String: ObjectIndex<ObjectVersions<Stored>>] = [:]
        var clock = GenerationClock()

        /// Takes the live version of `key` away: a versioned bucket keeps it as noncurrent.
        mutating func retire(bucket: String, _ key: ObjectKey, now: Date) {
            let versioned = buckets[bucket]?.versioning == true
            objects[bucket]?.updateVersions(key) { versions in
                guard var stored = versions.live else { return }
                versions.live = nil
                guard versioned else { return }
                stored.record.timeDeleted = now
                versions.keep(stored)
            }
        }

        /// Installs a new live version of `record`'s object (replacing, and perhaps keeping, the old one).
        mutating func install(_ record: ObjectRecord, bytes: Data, now: Date) -> ObjectRecord {
            var record = record
            record.generation = clock.next(now: now)
            record.metageneration = 1
            record.timeCreated = now
            record.updated = now
            record.timeDeleted = nil
            let key = ObjectKey(record.name)
            retire(bucket: record.bucket, key, now: now)
            objects[record.bucket, default: [:]].updateVersions(key) { $0.live = Stored(record: record, bytes: bytes) }
            return record
        }

        /// Where a generation is: live (nil index) or at an index of the noncurrent list.
        func locate(bucket: String, _ key: ObjectKey, generation: Int64) -> (stored: Stored, index: Int?)? {
            objects[bucket]?[key]?.locate(generation: generation).map { (stored: $0.version, index: $0.index) }
        }

        /// The live version of a name.
        func live(bucket: String, _ key: ObjectKey) -> Stored? {
            objects[bucket]?[key]?.live
        }
    }

    private let state = Mutex(State())

    package init() {}

    package func createBucket(_ name: String) throws(StoreError) -> Bool {
        return try state.withLock { (state) throws(StoreError) -> Bool in
            guard try state.buckets.create(name) else { return false }
            state.objects[name] = [:]
            return true
        }
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
        try state.withLock { (state) throws(StoreError) -> Bool in
            // A name stays in the index while any version of it, live or noncurrent, is kept.
            let isEmpty = (state.objects[name]?.count ?? 0) == 0
            guard try state.buckets.delete(name, if: condition, isEmpty: isEmpty) else { return false }
            state.objects[name] = nil
            return true
        }
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
            guard condition(state.live(bucket: record.bucket, ObjectKey(record.name))?.record) else {
                throw .conditionNotMet
            }
            return state.install(record, bytes: bytes, now: Date())
        }
    }

    package func record(bucket: String, name: String) -> ObjectRecord? {
        state.withLock { $0.live(bucket: bucket, ObjectKey(name))?.record }
    }

    package func record(bucket: String, name: String, generation: Int64) -> ObjectRecord? {
        state.withLock { $0.locate(bucket: bucket, ObjectKey(name), generation: generation)?.stored.record }
    }

    package func scan(
        bucket: String, from start: ObjectKey, versions: ScanVersions, _ visit: (ObjectRecord) -> ScanStep
    ) {
        state.withLock { state in state.objects[bucket]?.scan(from: start, versions: versions, visit) }
    }

    package func updateRecord(
        bucket: String, name: String, generation: Int64?, _ change: (inout ObjectRecord) throws -> Void
    ) throws -> ObjectRecord? {
        try state.withLock { state in
            try state.objects[bucket]?.updateVersions(ObjectKey(name)) { versions in
                try versions.updateRecord(generation: generation, change, save: { _ in })
            }
        }
    }

    package func delete(
        bucket: String, name: String, generation: Int64?, if condition: (ObjectRecord) -> Bool
    ) throws(StoreError) -> Bool {
        let key = ObjectKey(name)
        return try state.withLock { (state) throws(StoreError) -> Bool in
            guard let generation else {
                guard let live = state.live(bucket: bucket, key) else { return false }
                guard condition(live.record) else { throw .conditionNotMet }
                state.retire(bucket: bucket, key, now: Date())
                return true
            }
            guard let (stored, index) = state.locate(bucket: bucket, key, generation: generation) else { return false }
            guard condition(stored.record) else { throw .conditionNotMet }
            state.objects[bucket]?.updateVersions(key) { versions in
                if let index { versions.removeNoncurrent(at: index) } else { versions.live = nil }
            }
            return true
        }
    }

    package func move(
        bucket: String, from source: String, to destination: String,
        if condition: (_ source: ObjectRecord, _ destination: ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord? {
        try NameRules.validateObjectName(destination)
        return try state.withLock { (state) throws(StoreError) -> ObjectRecord? in
            guard let moving = state.live(bucket: bucket, ObjectKey(source)) else { return nil }
            guard condition(moving.record, state.live(bucket: bucket, ObjectKey(destination))?.record) else {
                throw .conditionNotMet
            }
            let now = Date()
            state.retire(bucket: bucket, ObjectKey(source), now: now)
            var record = moving.record
            record.name = destination
            return state.install(record, bytes: moving.bytes, now: now)
        }
    }

    package func openReader(_ record: ObjectRecord) throws(StoreError) -> any ObjectReader {
        let bytes = try state.withLock { (state) throws(StoreError) -> Data in
            guard
                let (stored, _) = state.locate(
                    bucket: record.bucket, ObjectKey(record.name), generation: record.generation)
            else { throw .notFound("No such object.") }
            return stored.bytes
        }
        return MemoryObjectReader(bytes: bytes)
    }
}

/// Staged bytes in memory, as runs of bytes written (sorted, apart from each other): a write far
/// past the end (a multipart upload's part placed at its place) costs its own bytes, never the
/// gap before it, which reads as zeros.
final class MemoryStagingWriter: StagingWriter {
    /// Bytes written from `start` on.
    private struct Run {
        var start: Int64
        var bytes: Data
        var end: Int64 { start + Int64(bytes.count) }
    }

    /// Sorted by start; no two overlap or touch.
    private let runs = Mutex<[Run]>([])

    var size: Int64 { runs.withLock { $0.last?.end ?? 0 } }

    /// The bytes kept, gaps left out (for tests: what the writer costs).
    var bytesHeld: Int64 { runs.withLock { $0.reduce(0) { $0 + Int64($1.bytes.count) } } }

    func write(_ buffer: UnsafeRawBufferPointer) throws(StoreError) {
        runs.withLock { runs in Self.write(buffer, at: runs.last?.end ?? 0, into: &runs) }
    }

    func truncate(to size: Int64) throws(StoreError) {
        runs.withLock { runs in
            runs.removeAll { $0.start >= size }
            if let last = runs.last, last.end > size {
                runs[runs.count - 1].bytes = last.bytes.prefix(Int(size - last.start))
            }
        }
    }

    func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        runs.withLock { runs in Self.write(buffer, at: offset, into: &runs) }
    }

    /// Writes into the run that reaches `offset` (or a new one), then merges the runs it reaches.
    private static func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64, into runs: inout [Run]) {
        var index = runs.lastIndex { $0.start <= offset } ?? -1
        if index >= 0, offset <= runs[index].end {
            let start = Int(offset - runs[index].start)
            let inside = min(buffer.count, runs[index].bytes.count - start)
            runs[index].bytes.withUnsafeMutableBytes { whole in
                UnsafeMutableRawBufferPointer(rebasing: whole[start..<start + inside])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[..<inside]))
            }
            runs[index].bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[inside...]))
        } else {
            index += 1
            runs.insert(Run(start: offset, bytes: Data(buffer)), at: index)
        }
        // Later runs this one now reaches: their bytes past its end join it (this write is the newer).
        while index + 1 < runs.count, runs[index + 1].start <= runs[index].end {
            let next = runs.remove(at: index + 1)
            if next.end > runs[index].end {
                runs[index].bytes.append(next.bytes.suffix(Int(next.end - runs[index].end)))
            }
        }
    }

    /// The bytes in `range`, gaps as zeros.
    private func bytes(in range: Range<Int64>) -> Data {
        runs.withLock { runs in
            var data = Data()
            var position = range.lowerBound
            for run in runs where run.end > position && run.start < range.upperBound {
                if run.start > position { data.append(Data(count: Int(run.start - position))) }
                let from = Int(max(position, run.start) - run.start)
                let to = Int(min(range.upperBound, run.end) - run.start)
                data.append(run.bytes[run.bytes.startIndex + from..<run.bytes.startIndex + to])
                position = min(range.upperBound, run.end)
            }
            if position < range.upperBound { data.append(Data(count: Int(range.upperBound - position))) }
            return data
        }
    }

    func append(contentsOf other: any StagingWriter, range: Range<Int64>) throws(StoreError) {
        guard let other = other as? MemoryStagingWriter, other !== self else {
            throw .io("A staging writer of another store.")
        }
        guard range.lowerBound >= 0, range.upperBound <= other.size else {
            throw .io("A staged range past the staged bytes.")
        }
        let staged = other.bytes(in: range)
        runs.withLock { runs in
            staged.withUnsafeBytes { Self.write($0, at: runs.last?.end ?? 0, into: &runs) }
        }
    }

    func discard() {
        runs.withLock { $0 = [] }
    }

    /// Moves the bytes out (a gap, which no commit leaves, as zeros).
    func take() -> Data {
        let taken = runs.withLock { runs -> [Run] in
            defer { runs = [] }
            return runs
        }
        if taken.count == 1, taken[0].start == 0 { return taken[0].bytes }
        var whole = Data(count: Int(taken.last?.end ?? 0))
        for run in taken {
            whole.replaceSubrange(Int(run.start)..<Int(run.end), with: run.bytes)
        }
        return whole
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
