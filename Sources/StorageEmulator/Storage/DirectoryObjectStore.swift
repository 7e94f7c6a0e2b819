package import Foundation
import Synchronization
import SystemCalls

/// Keeps buckets and objects in a directory, one file per version's bytes plus a JSON
/// record per version.
///
/// Layout: `<root>/b-<bucket>/bucket.json`; each version's bytes in `g<generation>-o-<name>`
/// (see ``SafeFileName``), named by generation so new bytes never replace a version's; the
/// live version's record in `o-<name>.json`, a noncurrent version's (versioned buckets) in
/// `g<generation>-o-<name>.json`; staging files `.tmp-<random>` in the bucket's directory.
///
/// A write commits in one atomic step, the rename of the new live record over the old one:
/// the bytes go first (staged, `fsync`ed, renamed to their generation's name), then in a
/// versioned bucket the replaced version's noncurrent record, then the live record (written
/// to a temporary file, `fsync`ed, renamed, the directory `fsync`ed); only then are the
/// replaced bytes removed (unversioned buckets). Whenever the process dies (`kill -9`, a
/// power cut after the `fsync`s), a record therefore names bytes that are whole, and each
/// object is its old version or its new one. Loading keeps what the records name and
/// removes everything else: bytes no record names, temporaries, a noncurrent record of the
/// version that is still live (a write or delete that had not committed), records whose
/// bytes are missing or of another size. An ordered index of the records is kept in memory
/// (loaded at start) so listing reads no file and seeks to its page.
package final class DirectoryObjectStore: ObjectStore {
    private struct State {
        var buckets = BucketTable()
        /// By bucket, then by name (see ``ObjectIndex``): each name's live and noncurrent versions.
        var objects: [String: ObjectIndex<ObjectVersions<ObjectRecord>>] = [:]
        var clock = GenerationClock()

        /// A generation's record, live or noncurrent (with its index in the noncurrent list).
        func locate(bucket: String, _ key: ObjectKey, generation: Int64) -> (record: ObjectRecord, index: Int?)? {
            objects[bucket]?[key]?.locate(generation: generation).map { (record: $0.version, index: $0.index) }
        }

        /// The live version of a name.
        func live(bucket: String, _ key: ObjectKey) -> ObjectRecord? {
            objects[bucket]?[key]?.live
        }
    }

    /// The root directory.
    package let root: URL
    private let state = Mutex(State())

    /// Opens (creating if needed) a store in `root`, loading what is there.
    package init(root: URL) throws(StoreError) {
        self.root = root.standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: self.root, withIntermediateDirectories: true)
        } catch {
            throw .io("Cannot create the storage directory.")
        }
        try load()
    }

    private func bucketDirectory(_ bucket: String) -> URL {
        root.appendingPathComponent(SafeFileName.bucket(bucket), isDirectory: true)
    }

    /// The file name of a version's bytes, live or noncurrent: named by its generation.
    private static func bytesName(_ record: ObjectRecord) -> String {
        SafeFileName.version(record.name, generation: record.generation)
    }

    /// The file name of a version's record: the live version's by the object's name (renaming a
    /// new one over it is the commit of a write), a noncurrent one's by its generation.
    private static func recordName(_ record: ObjectRecord) -> String {
        (record.timeDeleted == nil ? SafeFileName.object(record.name) : bytesName(record)) + ".json"
    }

    /// The path of a version's bytes.
    private func bytesPath(_ record: ObjectRecord) -> String {
        bucketDirectory(record.bucket).appendingPathComponent(Self.bytesName(record), isDirectory: false).path
    }

    /// The path of a version's record.
    private func recordPath(_ record: ObjectRecord) -> String {
        bucketDirectory(record.bucket).appendingPathComponent(Self.recordName(record), isDirectory: false).path
    }

    private func load() throws(StoreError) {
        let decoder = JSONDecoder()
        var loaded = State()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        for entry in entries where entry.hasPrefix("b-") {
            let directory = root.appendingPathComponent(entry, isDirectory: true)
            guard let data = try? Data(contentsOf: directory.appendingPathComponent("bucket.json")),
                let bucket = try? decoder.decode(BucketRecord.self, from: data),
                SafeFileName.bucket(bucket.name) == entry
            else { continue }
            loaded.buckets.load(bucket)
            var objects = ObjectIndex<ObjectVersions<ObjectRecord>>()
            for record in loadVersions(of: bucket.name, in: directory) {
                objects.updateVersions(ObjectKey(record.name)) { versions in
                    if record.timeDeleted == nil { versions.live = record } else { versions.keep(record) }
                }
                _ = loaded.clock.next(now: Date(timeIntervalSince1970: Double(record.generation) / 1_000_000))
            }
            loaded.objects[bucket.name] = objects
        }
        state.withLock { $0 = loaded }
    }

    /// The versions a bucket's directory holds whole, removing every file none of them names.
    ///
    /// A record counts when it is the one its file name says and its bytes are there with its
    /// size; a noncurrent record of the generation that is still live is what a write or delete
    /// wrote before its commit, and goes.
    private func loadVersions(of bucket: String, in directory: URL) -> [ObjectRecord] {
        let decoder = JSONDecoder()
        var records: [ObjectRecord] = []
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        where file.hasSuffix(".json") && file != "bucket.json" {
            guard let data = try? Data(contentsOf: directory.appendingPathComponent(file)),
                let record = try? decoder.decode(ObjectRecord.self, from: data),
                record.bucket == bucket, Self.recordName(record) == file
            else { continue }
            if record.timeDeleted == nil { adoptLegacyBytes(record) }
            guard (try? SystemCall.status(path: bytesPath(record), followingLinks: false))?.size == record.size else {
                continue
            }
            records.append(record)
        }
        let live = Set(records.lazy.filter { $0.timeDeleted == nil }.map(\.generation))
        records.removeAll { $0.timeDeleted != nil && live.contains($0.generation) }
        var named: Set<String> = ["bucket.json"]
        for record in records {
            named.insert(Self.recordName(record))
            named.insert(Self.bytesName(record))
        }
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        where !named.contains(file) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(file))
        }
        return records
    }

    /// Gives a live version's bytes kept under the object's name (the layout before bytes were
    /// named by generation) their generation's name, when they are the record's size.
    private func adoptLegacyBytes(_ record: ObjectRecord) {
        let legacy = bucketDirectory(record.bucket).appendingPathComponent(SafeFileName.object(record.name)).path
        guard (try? SystemCall.status(path: bytesPath(record), followingLinks: false)) == nil,
            (try? SystemCall.status(path: legacy, followingLinks: false))?.size == record.size
        else { return }
        try? SystemCall.rename(legacy, to: bytesPath(record))
    }

    package func createBucket(_ name: String) throws(StoreError) -> Bool {
        let directory = bucketDirectory(name)
        return try state.withLock { (state) throws(StoreError) -> Bool in
            let created = try state.buckets.create(name) { (record) throws(StoreError) in
                do {
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    try Self.writeAtomically(try JSONEncoder().encode(record), in: directory, as: "bucket.json")
                } catch {
                    throw .io("Cannot create the bucket directory.")
                }
            }
            if created { state.objects[name] = [:] }
            return created
        }
    }

    package func bucket(_ name: String) -> BucketRecord? {
        state.withLock { $0.buckets[name] }
    }

    package func buckets() -> [BucketRecord] {
        state.withLock { $0.buckets.sorted }
    }

    package func updateBucket(_ name: String, _ change: (inout BucketRecord) throws -> Void) throws -> BucketRecord? {
        let directory = bucketDirectory(name)
        return try state.withLock { state in
            try state.buckets.update(name, change) { bucket in
                try Self.writeAtomically(try JSONEncoder().encode(bucket), in: directory, as: "bucket.json")
            }
        }
    }

    package func deleteBucket(_ name: String, if condition: (BucketRecord) -> Bool) throws(StoreError) -> Bool {
        let directory = bucketDirectory(name)
        return try state.withLock { (state) throws(StoreError) -> Bool in
            // A name stays in the index while any version of it, live or noncurrent, is kept.
            let isEmpty = (state.objects[name]?.count ?? 0) == 0
            let deleted = try state.buckets.delete(name, if: condition, isEmpty: isEmpty) { () throws(StoreError) in
                // The bucket's record first: a crash after it leaves a directory that loading skips.
                do throws(SystemCallError) {
                    try SystemCall.unlink(directory.appendingPathComponent("bucket.json").path)
                } catch  where error.errno == Errno.noSuchFile {
                    // Deleted already by an earlier attempt that failed later.
                } catch {
                    throw .io("Cannot delete the bucket's record.")
                }
                // Whatever is left are staging files of uploads in flight, which cannot commit any more.
                try? FileManager.default.removeItem(at: directory)
            }
            if deleted { state.objects[name] = nil }
            return deleted
        }
    }

    package func makeStagingWriter(bucket: String) throws(StoreError) -> any StagingWriter {
        guard self.bucket(bucket) != nil else { throw .notFound("The bucket does not exist.") }
        let path = bucketDirectory(bucket).appendingPathComponent(".tmp-" + UUID().uuidString).path
        return try FileStagingWriter(path: path)
    }

    /// Writes the noncurrent record of the live version of `key` when the bucket is versioned,
    /// leaving the live record and the bytes (already named by generation) as they are.
    ///
    /// - Returns: The noncurrent record written, for the caller to add to the index once the
    ///   whole change is on disk (or to remove with ``removeRecord(_:)`` if it fails); nil when
    ///   nothing is kept. Until the caller's change commits, loading drops it (its version is live).
    private func keepNoncurrent(
        _ state: State, bucket: String, _ key: ObjectKey, now: Date
    ) throws(StoreError)
        -> ObjectRecord?
    {
        guard state.buckets[bucket]?.versioning == true, var record = state.live(bucket: bucket, key) else {
            return nil
        }
        record.timeDeleted = now
        try writeRecord(record)
        return record
    }

    /// Writes a version's record atomically and durably.
    private func writeRecord(_ record: ObjectRecord) throws(StoreError) {
        try Self.writeAtomically(
            try Self.encode(record), in: bucketDirectory(record.bucket), as: Self.recordName(record))
    }

    /// Removes a version's record only (its bytes stay: another record names them).
    private func removeRecord(_ record: ObjectRecord) {
        SystemCall.removeIfPresent(recordPath(record))
    }

    /// Removes a version's files, its record first: a crash between leaves bytes no record
    /// names, which loading removes, never a record without its bytes.
    private func forget(_ record: ObjectRecord) {
        SystemCall.removeIfPresent(recordPath(record))
        SystemCall.removeIfPresent(bytesPath(record))
    }

    private static func encode(_ record: ObjectRecord) throws(StoreError) -> Data {
        do {
            return try JSONEncoder().encode(record)
        } catch {
            throw .io("Cannot encode an object's metadata.")
        }
    }

    /// Makes the bytes at `stagedPath` (on stable storage already) the new live version of
    /// `record`'s object and indexes it, keeping the version it replaces as noncurrent in a
    /// versioned bucket, removing its bytes otherwise. Called under the lock.
    ///
    /// The bytes get their generation's name first, a name no record holds; the commit is the
    /// rename of the new live record over the old one (see the type's discussion).
    private func install(
        _ state: inout State, stagedPath: String, record: ObjectRecord, now: Date
    ) throws(StoreError)
        -> ObjectRecord
    {
        var record = record
        record.generation = state.clock.next(now: now)
        record.metageneration = 1
        record.timeCreated = now
        record.updated = now
        record.timeDeleted = nil
        let key = ObjectKey(record.name)
        let replaced = state.live(bucket: record.bucket, key)
        guard (try? SystemCall.rename(stagedPath, to: bytesPath(record))) != nil else {
            throw StoreError.io("Cannot move the object into place.")
        }
        let kept: ObjectRecord?
        do throws(StoreError) {
            kept = try keepNoncurrent(state, bucket: record.bucket, key, now: now)
            do throws(StoreError) {
                try writeRecord(record)
            } catch {
                if let kept { removeRecord(kept) }
                throw error
            }
        } catch {
            SystemCall.removeIfPresent(bytesPath(record))
            throw error
        }
        if let replaced, kept == nil { SystemCall.removeIfPresent(bytesPath(replaced)) }
        state.objects[record.bucket, default: [:]].updateVersions(key) { versions in
            if let kept { versions.keep(kept) }
            versions.live = record
        }
        return record
    }

    package func commit(
        _ writer: any StagingWriter, record: ObjectRecord, if condition: (ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord {
        try NameRules.validateObjectName(record.name)
        guard let writer = writer as? FileStagingWriter else { throw .io("A staging writer of another store.") }
        let stagedPath = try writer.close()
        return try state.withLock { (state) throws(StoreError) -> ObjectRecord in
            guard state.buckets[record.bucket] != nil else {
                SystemCall.removeIfPresent(stagedPath)
                throw .notFound("The bucket does not exist.")
            }
            // Under the lock every commit, delete and update of this store takes, so the
            // check and the rename are one step for every thread of the process.
            guard condition(state.live(bucket: record.bucket, ObjectKey(record.name))) else {
                SystemCall.removeIfPresent(stagedPath)
                throw .conditionNotMet
            }
            do throws(StoreError) {
                return try install(&state, stagedPath: stagedPath, record: record, now: Date())
            } catch {
                SystemCall.removeIfPresent(stagedPath)
                throw error
            }
        }
    }

    package func record(bucket: String, name: String) -> ObjectRecord? {
        state.withLock { $0.live(bucket: bucket, ObjectKey(name)) }
    }

    package func record(bucket: String, name: String, generation: Int64) -> ObjectRecord? {
        state.withLock { $0.locate(bucket: bucket, ObjectKey(name), generation: generation)?.record }
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
                // On disk first: a failed write changes nothing.
                try versions.updateRecord(generation: generation, change) { record in try writeRecord(record) }
            }
        }
    }

    package func delete(
        bucket: String, name: String, generation: Int64?, if condition: (ObjectRecord) -> Bool
    ) throws(StoreError) -> Bool {
        let key = ObjectKey(name)
        return try state.withLock { (state) throws(StoreError) -> Bool in
            guard let target = generation ?? state.live(bucket: bucket, key)?.generation,
                let (record, index) = state.locate(bucket: bucket, key, generation: target)
            else { return false }
            guard condition(record) else { throw .conditionNotMet }
            if let index {
                forget(record)
                state.objects[bucket]?.updateVersions(key) { $0.removeNoncurrent(at: index) }
                return true
            }
            // Only a delete of the live version without a generation keeps it, as GCS does: its
            // noncurrent record first, then the live record goes (the commit), the bytes stay.
            let kept = generation == nil ? try keepNoncurrent(state, bucket: bucket, key, now: Date()) : nil
            if kept == nil { forget(record) } else { removeRecord(record) }
            state.objects[bucket]?.updateVersions(key) { versions in
                if let kept { versions.keep(kept) }
                versions.live = nil
            }
            return true
        }
    }

    package func move(
        bucket: String, from source: String, to destination: String,
        if condition: (_ source: ObjectRecord, _ destination: ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord? {
        try NameRules.validateObjectName(destination)
        let directory = bucketDirectory(bucket)
        return try state.withLock { (state) throws(StoreError) -> ObjectRecord? in
            let sourceKey = ObjectKey(source)
            guard let moving = state.live(bucket: bucket, sourceKey) else { return nil }
            guard condition(moving, state.live(bucket: bucket, ObjectKey(destination))) else { throw .conditionNotMet }
            let now = Date()
            let keptSource = try keepNoncurrent(state, bucket: bucket, sourceKey, now: now)
            // A second name for the bytes, for the destination to be renamed from: the source's
            // own files stay whole until the destination is in place.
            let staged = directory.appendingPathComponent(".tmp-" + UUID().uuidString).path
            guard (try? SystemCall.link(bytesPath(moving), to: staged)) != nil else {
                if let keptSource { removeRecord(keptSource) }
                throw .io("Cannot move the object.")
            }
            var record = moving
            record.name = destination
            let moved: ObjectRecord
            do throws(StoreError) {
                moved = try install(&state, stagedPath: staged, record: record, now: now)
            } catch {
                SystemCall.removeIfPresent(staged)
                if let keptSource { removeRecord(keptSource) }
                throw error
            }
            // The source's live record goes; its bytes stay when its noncurrent record names them.
            if keptSource == nil { forget(moving) } else { removeRecord(moving) }
            state.objects[bucket]?.updateVersions(sourceKey) { versions in
                if let keptSource { versions.keep(keptSource) }
                versions.live = nil
            }
            return moved
        }
    }

    package func openReader(_ record: ObjectRecord) throws(StoreError) -> any ObjectReader {
        // Opened under the lock so the file is the version the index names: a
        // commit renaming a newer file into place cannot slip in between.
        let descriptor = try state.withLock { (state) throws(StoreError) -> Int32 in
            guard
                let (current, _) = state.locate(
                    bucket: record.bucket, ObjectKey(record.name), generation: record.generation)
            else { throw .notFound("No such object.") }
            guard let descriptor = try? SystemCall.open(bytesPath(current), [.readOnly, .closeOnExec]) else {
                throw .io("Cannot open the object's file.")
            }
            return descriptor
        }
        return FileObjectReader(descriptor: descriptor)
    }

    /// Writes `data` to a temporary file in `directory`, `fsync`s it, renames it to `name` and
    /// `fsync`s the directory: once this returns, the file is whole under its name for good.
    static func writeAtomically(_ data: Data, in directory: URL, as name: String) throws(StoreError) {
        let temporary = directory.appendingPathComponent(".tmp-" + UUID().uuidString).path
        let writer = try FileStagingWriter(path: temporary)
        do throws(StoreError) {
            var failure: StoreError?
            data.withUnsafeBytes { raw in
                do throws(StoreError) { try writer.write(raw) } catch { failure = error }
            }
            if let failure { throw failure }
            let path = try writer.close()
            guard (try? SystemCall.rename(path, to: directory.appendingPathComponent(name).path)) != nil else {
                SystemCall.removeIfPresent(path)
                throw StoreError.io("Cannot rename a file into place.")
            }
            try sync(directory.path)
        } catch {
            writer.discard()
            throw error
        }
    }

    /// `fsync`s the file or directory at `path`.
    static func sync(_ path: String) throws(StoreError) {
        guard let descriptor = try? SystemCall.open(path, [.readOnly, .closeOnExec]) else {
            throw .io("Cannot open a file to write it to disk.")
        }
        defer { try? SystemCall.close(descriptor) }
        guard (try? SystemCall.sync(descriptor)) != nil else { throw .io("Cannot write a file to disk.") }
    }
}

/// A staging file, written with `pwrite(2)`.
///
/// The descriptor is opened when the file is created and by the first write or
/// truncate after ``relinquish()``, so an idle upload session holds none.
final class FileStagingWriter: StagingWriter {
    private struct State {
        /// -1 while relinquished or once closed.
        var descriptor: Int32
        var size: Int64 = 0
        /// Closed for a commit, or discarded: the file is no longer this writer's to write.
        var finished = false

        /// The descriptor, reopening the file after a ``relinquish()``.
        mutating func open(_ path: String) throws(StoreError) -> Int32 {
            guard !finished else { throw .io("The staging file is closed.") }
            if descriptor < 0 {
                guard let reopened = try? SystemCall.open(path, [.writeOnly, .closeOnExec, .noFollow]) else {
                    throw .io("Cannot reopen a staging file.")
                }
                descriptor = reopened
            }
            return descriptor
        }

        mutating func releaseDescriptor() {
            if descriptor >= 0 {
                try? SystemCall.close(descriptor)
                descriptor = -1
            }
        }
    }

    private let path: String
    private let state: Mutex<State>
    /// Whether the file goes when the writer is released unfinished. Files of persisted upload
    /// sessions stay: a session ends only by being finalized or cancelled, and they must
    /// outlive the process that wrote them.
    private let removesFileWhenAbandoned: Bool

    /// Creates the file, which must not exist yet.
    init(path: String, removesFileWhenAbandoned: Bool = true) throws(StoreError) {
        let flags: SystemCall.OpenFlags = [.writeOnly, .create, .exclusive, .closeOnExec, .noFollow]
        guard let descriptor = try? SystemCall.open(path, flags, mode: 0o600) else {
            throw .io("Cannot create a staging file.")
        }
        self.path = path
        self.removesFileWhenAbandoned = removesFileWhenAbandoned
        state = Mutex(State(descriptor: descriptor))
    }

    /// Takes over an existing staging file of `size` bytes (a persisted session's), appending after them.
    ///
    /// Holds no descriptor until the first write or truncate, and never removes the file on release.
    init(existing path: String, size: Int64) {
        self.path = path
        removesFileWhenAbandoned = false
        state = Mutex(State(descriptor: -1, size: size))
    }

    var size: Int64 { state.withLock { $0.size } }

    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        try write(bytes, at: nil)
    }

    func truncate(to size: Int64) throws(StoreError) {
        try state.withLock { (state) throws(StoreError) in
            guard !state.finished, size < state.size else { return }
            let descriptor = try state.open(path)
            guard (try? SystemCall.truncate(descriptor, to: size)) != nil else {
                throw .io("Cannot truncate a staging file.")
            }
            state.size = size
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        try write(bytes, at: Optional(offset))
    }

    /// Writes at `offset`, or after the last byte when nil (read under the same lock).
    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64?) throws(StoreError) {
        try state.withLock { (state) throws(StoreError) in
            let descriptor = try state.open(path)
            let start = offset ?? state.size
            guard (try? SystemCall.writeAll(descriptor, bytes, at: start)) != nil else {
                throw .io("Cannot write a staging file.")
            }
            state.size = max(state.size, start + Int64(bytes.count))
        }
    }

    func append(contentsOf other: any StagingWriter, range: Range<Int64>) throws(StoreError) {
        guard let other = other as? FileStagingWriter, other !== self else {
            throw .io("A staging writer of another store.")
        }
        guard range.lowerBound >= 0, range.upperBound <= other.size else {
            throw .io("A staged range past the staged bytes.")
        }
        guard let source = try? SystemCall.open(other.path, [.readOnly, .closeOnExec, .noFollow]) else {
            throw .io("Cannot read a staging file.")
        }
        defer { try? SystemCall.close(source) }
        try state.withLock { (state) throws(StoreError) in
            let descriptor = try state.open(path)
            guard
                (try? SystemCall.copy(
                    Int64(range.count), from: source, at: range.lowerBound, to: descriptor, at: state.size)) != nil
            else { throw .io("Cannot copy a staging file.") }
            state.size += Int64(range.count)
        }
    }

    func relinquish() {
        state.withLock { $0.releaseDescriptor() }
    }

    /// Writes the file to stable storage (`fsync`), closes it and returns its path, for the
    /// caller to rename: what is renamed into place is whole even after a power cut.
    func close() throws(StoreError) -> String {
        try state.withLock { (state) throws(StoreError) -> String in
            let descriptor = try state.open(path)
            guard (try? SystemCall.sync(descriptor)) != nil else { throw .io("Cannot write a staging file to disk.") }
            state.releaseDescriptor()
            state.finished = true
            return path
        }
    }

    func discard() {
        let unlinks = state.withLock { state -> Bool in
            state.releaseDescriptor()
            // After close() the file belongs to the caller (renamed into place): leave it.
            defer { state.finished = true }
            return !state.finished
        }
        if unlinks { SystemCall.removeIfPresent(path) }
    }

    deinit {
        let unlinks = state.withLock { state -> Bool in
            state.releaseDescriptor()
            return !state.finished
        }
        if unlinks && removesFileWhenAbandoned { SystemCall.removeIfPresent(path) }
    }
}

/// Reads an open file with `pread`, so it keeps reading the version it opened
/// even after a newer one is renamed over it.
final class FileObjectReader: ObjectReader {
    private let descriptor: Mutex<Int32>

    init(descriptor: Int32) {
        self.descriptor = Mutex(descriptor)
    }

    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int {
        try descriptor.withLock { (descriptor) throws(StoreError) -> Int in
            guard descriptor >= 0 else { throw .io("The object reader is closed.") }
            guard let count = try? SystemCall.read(descriptor, into: buffer, at: offset) else {
                throw .io("Cannot read an object's file.")
            }
            return count
        }
    }

    func close() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 {
                try? SystemCall.close(descriptor)
                descriptor = -1
            }
        }
    }

    deinit { close() }
}
