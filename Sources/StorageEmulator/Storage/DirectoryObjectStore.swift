package import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps buckets and objects in a directory, one file per object plus a JSON
/// metadata file beside it.
///
/// Layout: `<root>/b-<bucket>/bucket.json`, `<root>/b-<bucket>/o-<name>` and
/// `o-<name>.json` (see ``SafeFileName``), staging files `.tmp-<random>` in the
/// bucket's directory. Bytes are streamed into a staging file and `rename`d into
/// place, so a reader never sees part of an object; an ordered index of the metadata
/// is kept in memory (loaded at start) so listing reads no file and seeks to its page.
package final class DirectoryObjectStore: ObjectStore {
    private struct State {
        var buckets: [String: BucketRecord] = [:]
        /// By bucket, then by name (see ``ObjectIndex``).
        var objects: [String: ObjectIndex<ObjectRecord>] = [:]
        var clock = GenerationClock()
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

    private func objectFile(_ bucket: String, _ name: String) -> URL {
        bucketDirectory(bucket).appendingPathComponent(SafeFileName.object(name), isDirectory: false)
    }

    private func load() throws(StoreError) {
        let manager = FileManager.default
        let decoder = JSONDecoder()
        var loaded = State()
        let entries = (try? manager.contentsOfDirectory(atPath: root.path)) ?? []
        for entry in entries where entry.hasPrefix("b-") {
            let directory = root.appendingPathComponent(entry, isDirectory: true)
            guard let data = try? Data(contentsOf: directory.appendingPathComponent("bucket.json")),
                let bucket = try? decoder.decode(BucketRecord.self, from: data),
                SafeFileName.bucket(bucket.name) == entry
            else { continue }
            loaded.buckets[bucket.name] = bucket
            var objects = ObjectIndex<ObjectRecord>()
            for file in (try? manager.contentsOfDirectory(atPath: directory.path)) ?? [] {
                if file.hasPrefix(".tmp-") {
                    try? manager.removeItem(at: directory.appendingPathComponent(file))
                    continue
                }
                guard file.hasSuffix(".json"), file != "bucket.json",
                    let data = try? Data(contentsOf: directory.appendingPathComponent(file)),
                    let record = try? decoder.decode(ObjectRecord.self, from: data),
                    record.bucket == bucket.name, SafeFileName.object(record.name) + ".json" == file
                else { continue }
                objects[ObjectKey(record.name)] = record
                _ = loaded.clock.next(now: Date(timeIntervalSince1970: Double(record.generation) / 1_000_000))
            }
            loaded.objects[bucket.name] = objects
        }
        state.withLock { $0 = loaded }
    }

    package func createBucket(_ name: String) throws(StoreError) -> Bool {
        try NameRules.validateBucketName(name)
        return try state.withLock { (state) throws(StoreError) -> Bool in
            guard state.buckets[name] == nil else { return false }
            let record = BucketRecord(name: name, timeCreated: Date())
            let directory = bucketDirectory(name)
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try Self.writeAtomically(try JSONEncoder().encode(record), in: directory, as: "bucket.json")
            } catch {
                throw .io("Cannot create the bucket directory.")
            }
            state.buckets[name] = record
            state.objects[name] = [:]
            return true
        }
    }

    package func bucket(_ name: String) -> BucketRecord? {
        state.withLock { $0.buckets[name] }
    }

    package func makeStagingWriter(bucket: String) throws(StoreError) -> any StagingWriter {
        guard self.bucket(bucket) != nil else { throw .notFound("The bucket does not exist.") }
        let path = bucketDirectory(bucket).appendingPathComponent(".tmp-" + UUID().uuidString).path
        return try FileStagingWriter(path: path)
    }

    package func commit(
        _ writer: any StagingWriter, record: ObjectRecord, if condition: (ObjectRecord?) -> Bool
    ) throws(StoreError) -> ObjectRecord {
        try NameRules.validateObjectName(record.name)
        guard let writer = writer as? FileStagingWriter else { throw .io("A staging writer of another store.") }
        let stagedPath = try writer.close()
        let destination = objectFile(record.bucket, record.name)
        let directory = bucketDirectory(record.bucket)
        return try state.withLock { (state) throws(StoreError) -> ObjectRecord in
            guard state.buckets[record.bucket] != nil else {
                unlink(stagedPath)
                throw .notFound("The bucket does not exist.")
            }
            // Under the lock every commit, delete and update of this store takes, so the
            // check and the rename are one step for every thread of the process.
            guard condition(state.objects[record.bucket]?[ObjectKey(record.name)]) else {
                unlink(stagedPath)
                throw .conditionNotMet
            }
            var record = record
            let now = Date()
            record.generation = state.clock.next(now: now)
            record.metageneration = 1
            record.timeCreated = now
            record.updated = now
            do {
                let json = try JSONEncoder().encode(record)
                guard rename(stagedPath, destination.path) == 0 else {
                    unlink(stagedPath)
                    throw StoreError.io("Cannot move the object into place.")
                }
                try Self.writeAtomically(json, in: directory, as: destination.lastPathComponent + ".json")
            } catch let error as StoreError {
                throw error
            } catch {
                throw .io("Cannot write the object's metadata.")
            }
            state.objects[record.bucket, default: [:]][ObjectKey(record.name)] = record
            return record
        }
    }

    package func record(bucket: String, name: String) -> ObjectRecord? {
        state.withLock { $0.objects[bucket]?[ObjectKey(name)] }
    }

    package func scan(bucket: String, from start: ObjectKey, _ visit: (ObjectRecord) -> ScanStep) {
        state.withLock { state in
            state.objects[bucket]?.walk(from: start) { _, record in visit(record) }
        }
    }

    package func updateRecord(
        bucket: String, name: String, _ change: (inout ObjectRecord) throws -> Void
    ) throws -> ObjectRecord? {
        let directory = bucketDirectory(bucket)
        let fileName = SafeFileName.object(name) + ".json"
        return try state.withLock { state in
            guard var record = state.objects[bucket]?[ObjectKey(name)] else { return nil }
            try change(&record)
            try Self.writeAtomically(try JSONEncoder().encode(record), in: directory, as: fileName)
            state.objects[bucket]?[ObjectKey(name)] = record
            return record
        }
    }

    package func delete(
        bucket: String, name: String, generation: Int64?, if condition: (ObjectRecord) -> Bool
    ) throws(StoreError) -> Bool {
        let file = objectFile(bucket, name)
        return try state.withLock { (state) throws(StoreError) -> Bool in
            guard let record = state.objects[bucket]?[ObjectKey(name)] else { return false }
            if let generation, generation != record.generation { return false }
            guard condition(record) else { throw .conditionNotMet }
            unlink(file.path + ".json")
            unlink(file.path)
            state.objects[bucket]?[ObjectKey(name)] = nil
            return true
        }
    }

    package func openReader(_ record: ObjectRecord) throws(StoreError) -> any ObjectReader {
        let path = objectFile(record.bucket, record.name).path
        // Opened under the lock so the file is the version the index names: a
        // commit renaming a newer file into place cannot slip in between.
        let descriptor = try state.withLock { (state) throws(StoreError) -> Int32 in
            guard let current = state.objects[record.bucket]?[ObjectKey(record.name)],
                current.generation == record.generation
            else { throw .notFound("No such object.") }
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .io("Cannot open the object's file.") }
            return descriptor
        }
        return FileObjectReader(descriptor: descriptor)
    }

    /// Writes `data` to a temporary file in `directory` and renames it to `name`.
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
            guard rename(path, directory.appendingPathComponent(name).path) == 0 else {
                throw StoreError.io("Cannot rename a file into place.")
            }
        } catch {
            writer.discard()
            throw error
        }
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
                descriptor = systemOpen(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
                guard descriptor >= 0 else { throw .io("Cannot reopen a staging file.") }
            }
            return descriptor
        }

        mutating func releaseDescriptor() {
            if descriptor >= 0 {
                _ = closeDescriptor(descriptor)
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
        let descriptor = systemOpen(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw .io("Cannot create a staging file.") }
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
        try state.withLock { (state) throws(StoreError) in
            let descriptor = try state.open(path)
            guard let base = bytes.baseAddress else { return }
            var written = 0
            while written < bytes.count {
                let result = pwrite(
                    descriptor, base + written, bytes.count - written, off_t(state.size) + off_t(written))
                if result < 0 {
                    if errno == EINTR { continue }
                    throw .io("Cannot write a staging file.")
                }
                written += result
            }
            state.size += Int64(bytes.count)
        }
    }

    func truncate(to size: Int64) throws(StoreError) {
        try state.withLock { (state) throws(StoreError) in
            guard !state.finished, size < state.size else { return }
            let descriptor = try state.open(path)
            guard ftruncate(descriptor, off_t(size)) == 0 else { throw .io("Cannot truncate a staging file.") }
            state.size = size
        }
    }

    func relinquish() {
        state.withLock { $0.releaseDescriptor() }
    }

    /// Closes the file and returns its path, for the caller to rename.
    func close() throws(StoreError) -> String {
        try state.withLock { (state) throws(StoreError) -> String in
            guard !state.finished else { throw .io("The staging file is closed.") }
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
        if unlinks { unlink(path) }
    }

    deinit {
        let unlinks = state.withLock { state -> Bool in
            state.releaseDescriptor()
            return !state.finished
        }
        if unlinks && removesFileWhenAbandoned { unlink(path) }
    }
}

/// `open(2)`, named apart from the state's method.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
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
            while true {
                let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
                if count >= 0 { return count }
                if errno != EINTR { throw .io("Cannot read an object's file.") }
            }
        }
    }

    func close() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 {
                _ = closeDescriptor(descriptor)
                descriptor = -1
            }
        }
    }

    deinit { close() }
}

/// `close(2)`, named apart from the methods called `close`.
private func closeDescriptor(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}
