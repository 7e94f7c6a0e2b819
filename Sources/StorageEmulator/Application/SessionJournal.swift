import CloudStorageWire
import Foundation
import SystemCalls

/// Keeps the resumable upload sessions of a directory-backed emulator on disk, so that they
/// survive the process dying at any instant (`kill -9`) and carry on when an emulator starts
/// again on the same directory.
///
/// Layout, in `<root>/.upload-sessions/`: `<id>.json`, the session's ``PersistedSession``
/// (written atomically, once, before the session's URL is handed out), and `<id>.data`, the
/// bytes received (created first, appended in place; renamed into the bucket when the session
/// finalizes). The committed offset is never written down: on load it is the data file's
/// length rounded down to the 256 KiB granularity, and the checksums are recomputed from those
/// bytes, so a crash between writing bytes and anything else can only make the emulator report
/// fewer bytes than it acknowledged before, never more than it has. (Bytes the kernel accepted
/// survive the process; a power cut is another matter: records are `fsync`ed, and the data file
/// when the session finalizes, but not each chunk.)
///
/// A session ends by removing its record (finalize: after the rename; cancel, expiry,
/// eviction: before deleting the data), so a data file without a record, a record without a
/// data file, an expired, unreadable or inconsistent record are all removed on load.
final class SessionJournal: Sendable {
    /// A session restored from disk.
    struct Restored {
        let record: PersistedSession
        let writer: FileStagingWriter
        let checksums: Checksums
    }

    /// The name of the sessions' directory inside the store's root (not `b-…`, so the store ignores it).
    static let directoryName = ".upload-sessions"

    let directory: URL

    /// Opens (creating if needed) the sessions' directory of a store rooted at `root`.
    ///
    /// The directory's file names are session ids, which are capabilities: it is the owner's
    /// alone (0700, an existing one made so; its files are 0600, as every staging file is).
    ///
    /// - Throws: ``StoreError`` when the directory cannot be created or made private.
    init(root: URL) throws(StoreError) {
        directory = root.appendingPathComponent(Self.directoryName, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try SystemCall.setPermissions(directory.path, 0o700)
        } catch {
            throw .io("Cannot create the upload sessions' directory.")
        }
    }

    private func path(_ id: String, _ suffix: String) -> String {
        directory.appendingPathComponent(id + suffix, isDirectory: false).path
    }

    /// Creates the data file of a new session.
    ///
    /// - Throws: ``StoreError`` for an id that ``SessionTable/isWellFormedID(_:)`` refuses, or when the file cannot be created.
    func makeWriter(id: String) throws(StoreError) -> FileStagingWriter {
        guard SessionTable.isWellFormedID(id) else { throw .invalidName("Not an upload session id.") }
        return try FileStagingWriter(path: path(id, ".data"), removesFileWhenAbandoned: false)
    }

    /// Writes a new session's record; the session may be announced once this returns.
    func save(_ record: PersistedSession) throws(StoreError) {
        guard SessionTable.isWellFormedID(record.id) else { throw .invalidName("Not an upload session id.") }
        let json: Data
        do {
            json = try JSONEncoder().encode(record)
        } catch {
            throw .io("Cannot encode an upload session.")
        }
        try DirectoryObjectStore.writeAtomically(json, in: directory, as: record.id + ".json")
    }

    /// Forgets a session: afterwards it will not be restored, whatever happens to its data file.
    func remove(id: String) {
        guard SessionTable.isWellFormedID(id) else { return }
        SystemCall.removeIfPresent(path(id, ".json"))
    }

    /// Reads every session, removing what cannot be resumed.
    ///
    /// - Parameters:
    ///   - isExpired: Whether a session created at this date has expired.
    ///   - log: Told, without session ids (they are capabilities), about each file ignored.
    /// - Returns: The sessions to resume, each with its bytes' checksums and a writer positioned after them.
    func load(isExpired: (Date) -> Bool, log: (String) -> Void) -> [Restored] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var records: Set<String> = []
        var data: Set<String> = []
        for file in files {
            if file.hasSuffix(".json"), SessionTable.isWellFormedID(String(file.dropLast(5))) {
                records.insert(String(file.dropLast(5)))
            } else if file.hasSuffix(".data"), SessionTable.isWellFormedID(String(file.dropLast(5))) {
                data.insert(String(file.dropLast(5)))
            } else if file.hasPrefix(".tmp-") {
                // A record being written when the process died.
                SystemCall.removeIfPresent(directory.appendingPathComponent(file).path)
            } else {
                log("Ignoring an unexpected file in the upload sessions' directory.")
            }
        }
        var restored: [Restored] = []
        for id in records.sorted() {
            let label = "upload session \(id.prefix(8))…"
            guard let record = decode(id) else {
                log("Discarding \(label): its record is unreadable or inconsistent.")
                discard(id)
                continue
            }
            if isExpired(record.created) {
                discard(id)
                continue
            }
            guard data.contains(id) else {
                // Finalized (the file was renamed into place) or cancelled just before the record went.
                log("Discarding \(label): its bytes are gone.")
                discard(id)
                continue
            }
            switch reopen(record) {
            case .success(let session):
                restored.append(session)
            case .failure(let error):
                log("Discarding \(label): \(error.description)")
                discard(id)
            }
        }
        for id in data.subtracting(records) {
            // Created just before the process died, before its record: never announced.
            SystemCall.removeIfPresent(path(id, ".data"))
        }
        return restored
    }

    private func discard(_ id: String) {
        SystemCall.removeIfPresent(path(id, ".json"))
        SystemCall.removeIfPresent(path(id, ".data"))
    }

    /// The record, if it parses and could have been written by ``save(_:)``.
    private func decode(_ id: String) -> PersistedSession? {
        // Records are small; a huge one is not ours.
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path(id, ".json")),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let size = attributes[.size] as? NSNumber, size.int64Value <= 4 * 1024 * 1024,
            let json = FileManager.default.contents(atPath: path(id, ".json")),
            let record = try? JSONDecoder().decode(PersistedSession.self, from: json)
        else { return nil }
        guard record.version == PersistedSession.currentVersion, record.id == id,
            (try? NameRules.validateBucketName(record.bucket)) != nil,
            (try? NameRules.validateObjectName(record.name)) != nil,
            record.declaredSize.map({ (0...RequestNumber.maxObjectSize).contains($0) }) ?? true
        else { return nil }
        return record
    }

    /// Opens the data file, cuts it to the committed offset and hashes what stays.
    private func reopen(_ record: PersistedSession) -> Result<Restored, StoreError> {
        let dataPath = path(record.id, ".data")
        // No symbolic links: the file is truncated below.
        guard let descriptor = try? SystemCall.open(dataPath, [.readWrite, .closeOnExec, .noFollow]) else {
            return .failure(.io("its bytes cannot be opened."))
        }
        defer { try? SystemCall.close(descriptor) }
        guard let status = try? SystemCall.status(descriptor), status.kind == .regular else {
            return .failure(.io("its bytes are not a regular file."))
        }
        let length = status.size
        // Only whole units were ever acknowledged (the last, shorter one only by finalizing,
        // which removes the record); a partial unit is the tail of a write the crash cut short.
        var committed = length - length % ProtocolLimits.chunkGranularity
        if let declared = record.declaredSize {
            guard length <= declared else { return .failure(.io("it holds more bytes than were declared.")) }
            committed = min(committed, declared)
        }
        guard committed <= RequestNumber.maxObjectSize else { return .failure(.io("it is too large.")) }
        if committed < length {
            guard (try? SystemCall.truncate(descriptor, to: committed)) != nil else {
                return .failure(.io("its bytes cannot be truncated."))
            }
        }
        var checksums = Checksums(computingMD5: record.computesMD5)
        var buffer = [UInt8](repeating: 0, count: 1024 * 1024)
        var offset: Int64 = 0
        while offset < committed {
            let wanted = Int(min(Int64(buffer.count), committed - offset))
            let count = buffer.withUnsafeMutableBytes { raw in
                try? SystemCall.read(
                    descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<wanted]), at: offset)
            }
            guard let count, count > 0 else { return .failure(.io("its bytes cannot be read.")) }
            buffer.withUnsafeBytes { raw in checksums.update(UnsafeRawBufferPointer(rebasing: raw[0..<count])) }
            offset += Int64(count)
        }
        let writer = FileStagingWriter(existing: dataPath, size: committed)
        return .success(Restored(record: record, writer: writer, checksums: checksums))
    }
}
