import CloudStorage
import Dispatch
import Foundation
import Synchronization

/// Starts `cp`'s file uploads so that a rerun of the same command after a crash continues
/// where the server stopped: a recorded session is resumed, and a new upload's session is
/// recorded as soon as the server opens it (``UploadSessionRecords``).
///
/// A record outlives the process on purpose when the process dies (`kill -9`, a crash) or the
/// retries run out (the network may come back). It is removed once the upload ends in any
/// other way: stored, cancelled (Ctrl-C deletes the server's session), or failed for good
/// (the file changed, the session expired, a checksum or precondition failed...).
final class ResumableUploads: Sendable {
    private let records: UploadSessionRecords
    private let storage: Storage
    /// The ``UploadSessionRecords/Key/endpoint`` of every upload here.
    private let endpoint: String
    /// The bookkeeping of each upload whose record is not settled yet, which ``settle()`` waits
    /// for. An entry goes once its bookkeeping ends, so that a tree of many files holds only
    /// the uploads still in flight, not every upload it started.
    private let bookkeeping = Mutex(Bookkeeping())
    /// Whether the directory's refusal was already said.
    private let warned = Mutex(false)

    /// - Parameters:
    ///   - records: Where the sessions are recorded.
    ///   - connection: The server and bucket the uploads go to.
    init(records: UploadSessionRecords, connection: StorageOptions.Connection) {
        self.records = records
        self.storage = connection.storage
        if let directory = connection.emulatorDirectory {
            // The built-in emulator may listen on another port next time: its directory is what stays.
            endpoint = "built-in emulator \(directory.standardizedFileURL.path)"
        } else {
            let base = connection.endpoint.baseURL
            endpoint = (connection.endpoint == .firebase(base) ? "firebase " : "gcs ") + base.absoluteString
        }
    }

    private func key(_ file: URL, _ reference: StorageReference) -> UploadSessionRecords.Key {
        UploadSessionRecords.Key(
            endpoint: endpoint, bucket: reference.bucket, objectPath: reference.fullPath,
            sourcePath: file.standardizedFileURL.path)
    }

    /// Starts the upload of `file` to `reference`: resumes its recorded session when there is one
    /// that the server and the file still allow, else starts a new upload.
    ///
    /// Returns once the upload runs: a resumed one after the server said how much it holds
    /// (said on standard error), or ended (its outcome is the task's). A resumption the file or
    /// the server refuses is said in one line, its record removed, and a new upload started.
    ///
    /// - Parameter fresh: Starts a new upload of the file.
    func start(
        _ file: URL, to reference: StorageReference, fresh: @Sendable () -> StorageUploadTask
    ) async -> StorageUploadTask {
        let key = key(file, reference)
        let records = records
        if let session = await Self.blocking({ records.load(key) }) {
            do {
                let task = try storage.resumeUpload(session, from: file)
                switch await Self.firstProgress(of: task) {
                case .running(let committed):
                    report(
                        "resuming the upload of \(file.path) from byte \(committed) of \(session.source.size)"
                            + " (recorded in \(records.directory.path))")
                    follow(task, key, recordsSession: false)
                    return task
                case .ended(let error?) where error.code == .fileChanged || error.code == .uploadSessionExpired:
                    report("not resuming the recorded upload of \(file.path): \(error.message) Starting again.")
                    await Self.blocking { records.remove(key) }
                case .ended:
                    follow(task, key, recordsSession: false)
                    return task
                }
            } catch {
                report("not resuming the recorded upload of \(file.path): \(error.message) Starting again.")
                await Self.blocking { records.remove(key) }
            }
        }
        let task = fresh()
        follow(task, key, recordsSession: true)
        return task
    }

    /// Waits until the record of every upload that ended is written or removed as its outcome says.
    ///
    /// An upload still running is not waited for: the command gave up on it (a signal's grace
    /// period ran out), and its record stays for a rerun to try.
    func settle() async {
        let unsettled = bookkeeping.withLock { $0.entries.values }
        for (upload, records) in unsettled where upload.snapshot.status.isTerminal {
            await records.value
        }
    }

    /// The uploads whose records are not settled yet, by upload.
    private struct Bookkeeping {
        var entries: [ObjectIdentifier: (upload: StorageUploadTask, records: Task<Void, Never>)] = [:]
        /// Uploads whose bookkeeping ended before it was entered (a very short one).
        var endedEarly: Set<ObjectIdentifier> = []

        mutating func enter(_ upload: StorageUploadTask, _ records: Task<Void, Never>) {
            let id = ObjectIdentifier(upload)
            if endedEarly.remove(id) == nil { entries[id] = (upload, records) }
        }

        mutating func end(_ upload: StorageUploadTask) {
            let id = ObjectIdentifier(upload)
            if entries.removeValue(forKey: id) == nil { endedEarly.insert(id) }
        }
    }

    /// How a resumed upload began.
    private enum FirstProgress {
        /// It runs; the server had this many bytes (or, if it had none, the first ones sent).
        case running(Int64)
        /// It ended before any progress, with this error (nil: it succeeded).
        case ended(StorageError?)
    }

    private static func firstProgress(of task: StorageUploadTask) async -> FirstProgress {
        await withTaskCancellationHandler {
            for await snapshot in task.snapshots {
                if snapshot.status.isTerminal { return .ended(snapshot.error) }
                if snapshot.progress.completedUnitCount > 0 { return .running(snapshot.progress.completedUnitCount) }
            }
            do throws(StorageError) {
                _ = try await task.value
                return .ended(nil)
            } catch {
                return .ended(error)
            }
        } onCancel: {
            Task { await task.cancel() }
        }
    }

    /// Records the upload's session once the server opened it (when asked), then keeps or
    /// removes the record as the upload's outcome says.
    private func follow(_ task: StorageUploadTask, _ key: UploadSessionRecords.Key, recordsSession: Bool) {
        let records = records
        let bookkeeping = Task {
            if recordsSession, let session = await task.waitForResumableSession() {
                let saved = await Self.blocking { () -> Result<Void, UploadSessionRecords.Refusal> in
                    do throws(UploadSessionRecords.Refusal) {
                        return .success(try records.save(session, for: key))
                    } catch {
                        return .failure(error)
                    }
                }
                if case .failure(let error) = saved {
                    let first = self.warned.withLock { said in
                        defer { said = true }
                        return !said
                    }
                    if first {
                        report("warning: the upload cannot be resumed after a crash: \(error.message)")
                    }
                }
            }
            let outcome: StorageError?
            do throws(StorageError) {
                _ = try await task.value
                outcome = nil
            } catch {
                outcome = error
            }
            if !Self.keepsRecord(after: outcome) { await Self.blocking { records.remove(key) } }
            self.bookkeeping.withLock { $0.end(task) }
        }
        self.bookkeeping.withLock { $0.enter(task, bookkeeping) }
    }

    /// Runs `work` on a thread of Dispatch's, not the cooperative pool: records are written
    /// with `fsync`, and the state directory may be on a slow or network file system.
    private static func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: work()) }
        }
    }

    /// Whether a rerun may still resume after this outcome: only when the retries ran out (the
    /// server or the network may come back); every other end is final for the session.
    static func keepsRecord(after outcome: StorageError?) -> Bool {
        guard let outcome else { return false }
        return outcome.code == .retryLimitExceeded || outcome.code == .quotaExceeded
    }
}
