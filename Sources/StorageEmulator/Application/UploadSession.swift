import CloudStorageWire
import Foundation
import Synchronization

/// A resumable upload in progress (GCS session or Firebase v0 upload URL).
///
/// Requests for one session are serialised by its lock, held for the whole
/// request (handlers run on their own threads, so blocking is fine): the
/// committed size is what has been written to the staging writer, always a
/// multiple of 256 KiB until the session is finalised.
final class UploadSession: BoundedUpload {
    enum Phase {
        case active
        case finalized(ObjectRecord)
        /// Cancelled, expired or evicted while another request waited for the lock: it must not write.
        case cancelled
    }

    struct State {
        var writer: any StagingWriter
        var checksums: Checksums
        var phase = Phase.active

        var committed: Int64 { checksums.count }
    }

    /// What each request to a session needs: fixed by what authorized the session's start,
    /// whatever URL later reaches it (a query parameter cannot change it).
    enum Access: String, Codable, Sendable {
        /// Started through a V4 signed URL: the signature authorized the start, and the
        /// session URL alone authorizes the rest (its holder has no credentials), as on Cloud Storage.
        case signedURL
        /// Started through the JSON API: the session URL is a capability, but with issued
        /// tokens required every request needs a live one, as the start did.
        case gcs
        /// Started through Firebase v0: every command needs Firebase credentials, as the start did.
        case firebase
    }

    let id: String
    let bucket: String
    let name: String
    let attributes: ObjectAttributes
    let expected: ExpectedHashes
    /// The total size the client announced at the start, if it did.
    let declaredSize: Int64?
    /// The preconditions of the start request, checked again when the session finalizes.
    let preconditions: ObjectPreconditions
    /// What each request to the session needs.
    let access: Access
    let state: Mutex<State>
    /// Where the session's record lives on disk (directory backing), to be removed when it ends.
    let journal: SessionJournal?

    init(
        id: String, bucket: String, name: String, attributes: ObjectAttributes, expected: ExpectedHashes,
        declaredSize: Int64?, preconditions: ObjectPreconditions = ObjectPreconditions(), access: Access,
        writer: any StagingWriter, computingMD5: Bool, journal: SessionJournal? = nil
    ) {
        self.preconditions = preconditions
        self.access = access
        self.id = id
        self.bucket = bucket
        self.name = name
        self.attributes = attributes
        self.expected = expected
        self.declaredSize = declaredSize
        self.journal = journal
        state = Mutex(State(writer: writer, checksums: Checksums(computingMD5: computingMD5)))
    }

    /// A session restored from its journal, with the bytes its staging file already holds.
    init(restoring restored: SessionJournal.Restored, journal: SessionJournal) {
        let record = restored.record
        id = record.id
        bucket = record.bucket
        name = record.name
        attributes = record.attributes
        expected = record.expected
        declaredSize = record.declaredSize
        preconditions = record.preconditions
        access = record.access
        self.journal = journal
        state = Mutex(State(writer: restored.writer, checksums: restored.checksums))
    }

    /// What the journal records for this session.
    func persistedRecord(created: Date) -> PersistedSession {
        PersistedSession(
            id: id, bucket: bucket, name: name, attributes: attributes, expected: expected,
            declaredSize: declaredSize, preconditions: preconditions, access: access,
            computesMD5: state.withLock { $0.checksums.md5 != nil }, created: created)
    }

    /// Reads a request body that starts at `start` into the session.
    ///
    /// Bytes below the committed size are read and ignored; the rest is
    /// committed in 256 KiB units as they arrive, and the tail when the body
    /// ends. If reading fails (a fault, a broken connection) the units already
    /// committed stay and the partial unit is dropped, as GCS does.
    ///
    /// - Returns: The number of body bytes read.
    static func receive(_ body: BodyReader, start: Int64, into state: inout State) throws -> Int64 {
        let granularity = Int(ProtocolLimits.chunkGranularity)
        var skip = max(0, state.committed - start)
        var pending = [UInt8]()
        pending.reserveCapacity(granularity)
        var chunk = [UInt8](repeating: 0, count: granularity)
        var total: Int64 = 0
        while true {
            let count = try chunk.withUnsafeMutableBytes { try body.read(into: $0) }
            if count == 0 { break }
            total += Int64(count)
            var used = 0
            if skip > 0 {
                used = Int(min(skip, Int64(count)))
                skip -= Int64(used)
            }
            while used < count {
                let take = min(count - used, granularity - pending.count)
                pending.append(contentsOf: chunk[used..<used + take])
                used += take
                if pending.count == granularity {
                    try commit(pending, into: &state)
                    pending.removeAll(keepingCapacity: true)
                }
            }
        }
        try commit(pending, into: &state)
        return total
    }

    private static func commit(_ bytes: [UInt8], into state: inout State) throws {
        guard !bytes.isEmpty else { return }
        try bytes.withUnsafeBytes { raw in
            try state.writer.write(raw)
            state.checksums.update(raw)
        }
    }

    /// Puts the session back as it was before a request that is being rejected.
    static func rollBack(_ state: inout State, to snapshot: Checksums) {
        if (try? state.writer.truncate(to: snapshot.count)) != nil {
            state.checksums = snapshot
        }
    }

    /// Runs one request on the session, serialised with the session's other requests.
    ///
    /// Afterwards the staging writer lets go of its file descriptor, so that a session
    /// nobody is sending to holds none (abandoned sessions would otherwise exhaust them).
    func withRequest<Result>(_ body: (inout State) throws -> Result) throws -> Result {
        try state.withLock { state in
            defer { state.writer.relinquish() }
            return try body(&state)
        }
    }

    /// Throws away the staged bytes of an unfinished session (idempotent), waiting for a
    /// request in progress on it to end first.
    func cancel() {
        state.withLock { state in cancel(&state) }
    }

    /// Cancels the session unless a request holds it: for expiry and eviction, which must
    /// not wait behind an upload in progress.
    ///
    /// - Returns: Whether the session was idle (and is now cancelled, or was already over).
    func cancelIfIdle() -> Bool {
        state.withLockIfAvailable { state in cancel(&state) } != nil
    }

    private func cancel(_ state: inout State) {
        if case .active = state.phase {
            // The record first: a crash in between leaves bytes without a record, which a restart deletes.
            journal?.remove(id: id)
            state.writer.discard()
            state.phase = .cancelled
        }
    }

    /// Lets go of a persisted session without ending it, waiting for a request in progress:
    /// its record and bytes stay on disk for the next emulator on the directory. A session
    /// kept only in memory is cancelled instead.
    func detach() {
        state.withLock { state in
            guard journal != nil else { return cancel(&state) }
            if case .active = state.phase {
                state.writer.relinquish()
                state.phase = .cancelled
            }
        }
    }

    /// Verifies the checksums and the preconditions (against the object stored now, as GCS
    /// does: another writer may have replaced it since the session started), and commits the object.
    func finalize(
        _ state: inout State, store: any ObjectStore, extra: ExpectedHashes,
        beforeStoreWrite: (@Sendable () -> Void)? = nil
    ) throws -> ObjectRecord {
        try expected.verify(state.checksums)
        try extra.verify(state.checksums)
        var record = ObjectRecord(bucket: bucket, name: name)
        record.size = state.committed
        record.crc32c = state.checksums.crc32c
        record.md5 = state.checksums.md5Digest
        record.attributes = attributes
        beforeStoreWrite?()
        let committed: ObjectRecord
        do throws(StoreError) {
            // The binding check: the store evaluates the conditions as it replaces the object.
            committed = try store.commit(state.writer, record: record, if: preconditions.holds)
        } catch {
            // A failed condition consumed the staged bytes: the session is over.
            if error.kind == .conditionNotMet { cancel(&state) }
            throw error
        }
        // After the rename: a crash in between leaves a record without bytes, which a restart deletes.
        journal?.remove(id: id)
        state.phase = .finalized(committed)
        return committed
    }
}
