import Foundation
import Synchronization
import SystemCalls

/// Where a download's bytes go: memory, or a temporary file renamed into
/// place once the download is complete and verified.
///
/// ``write(_:at:)`` and ``reset()`` run on the transport's thread (never the
/// cooperative pool), one call at a time, bytes in order; a destination that
/// ``writesAtAnyOffset`` also takes the writes of several slices at once, each
/// slice's in order.
protocol DownloadDestination: Sendable {
    /// Discards everything written (the download starts over).
    func reset() throws(StorageError)
    /// Writes `bytes` at `offset`, which is the number of bytes written so far.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError)
    /// Discards whatever was written and any temporary file; idempotent.
    func discard() async
    /// Whether ``reset()`` can take back what was written, so that a download whose
    /// object changed can start over; a stream cannot recall bytes already handed on.
    var isRewindable: Bool { get }
    /// Whether the destination wants the object's metadata from each answer's head (``received(_:)``).
    var wantsMetadata: Bool { get }
    /// Whether ``write(_:at:)`` takes any offset, from several threads at once (positioned
    /// writes), so that the slices of a sliced download can write side by side.
    var writesAtAnyOffset: Bool { get }
    /// Takes the object's metadata, read from the head of an answer about to deliver bytes
    /// (every answer's, resumptions' too), on the transport's thread.
    func received(_ metadata: StorageMetadata)
}

extension DownloadDestination {
    var isRewindable: Bool { true }
    var wantsMetadata: Bool { false }
    var writesAtAnyOffset: Bool { false }
    func received(_ metadata: StorageMetadata) {}
}

/// Collects a download in memory.
final class MemoryDownloadDestination: DownloadDestination {
    private let data = Mutex(Data())

    func reset() throws(StorageError) {
        data.withLock { $0.removeAll() }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        data.withLock { data in
            data.removeSubrange(Int(offset)...)
            data.append(contentsOf: bytes)
        }
    }

    func discard() async {
        data.withLock { $0 = Data() }
    }

    /// The bytes, handed over once the download is complete.
    func take() -> Data {
        data.withLock { data in
            defer { data = Data() }
            return data
        }
    }
}

/// Streams a download into a temporary file beside the target, so the target
/// only ever holds a complete, verified object.
///
/// The target's directory is opened once and every name is used inside it: with a
/// `confinement` (the directory of a recursive download), it is reached from there one name at
/// a time, made when missing, and a symbolic link on the way is refused rather than followed,
/// so an object's file can never be written outside that directory. The temporary file
/// (``PartialDownloadName``) is locked (`flock`) from its creation until it is renamed or
/// removed, so a download can tell a partial file of the same target whose process died
/// (unlocked: removed) from one another download is writing (locked: left alone). The file
/// replaced keeps its permission bits, as `cp` keeps them; a new file gets `0666` less the umask.
final class FileDownloadDestination: DownloadDestination {
    let target: URL
    /// The directory the target must stay inside, walked without following links; nil opens
    /// the target's directory as named.
    let confinement: URL?

    /// The open directory and temporary file, between ``create()`` and ``commit()`` or ``discard()``.
    private struct Opened: Sendable {
        var directory: Int32
        var file: Int32
        /// The temporary file's name in `directory`.
        var temporary: String
    }

    private let opened = Mutex<Opened?>(nil)

    init(target: URL, confinement: URL? = nil) {
        self.target = target
        self.confinement = confinement
    }

    /// Opens the target's directory, removes the partial files dead downloads of the target
    /// left there, and creates the temporary file, locked; off the cooperative pool.
    func create() async throws(StorageError) {
        let (target, confinement) = (target, confinement)
        let made = try await BlockingIO.run { () throws(StorageError) -> Opened in
            let directory = try DownloadDirectory.open(of: target, confinedTo: confinement)
            do throws(StorageError) {
                let name = target.lastPathComponent
                Self.removeStalePartials(of: name, in: directory)
                let (file, temporary) = try Self.createTemporary(for: name, in: directory, target: target)
                return Opened(directory: directory, file: file, temporary: temporary)
            } catch {
                try? SystemCall.close(directory)
                throw error
            }
        }
        opened.withLock { $0 = made }
    }

    /// Creates and locks a temporary file for `name` in `directory`, with the mode of the file it
    /// will replace when there is one.
    ///
    /// - Returns: Its descriptor and name.
    private static func createTemporary(
        for name: String, in directory: Int32, target: URL
    ) throws(StorageError) -> (Int32, String) {
        // Created no wider than the file replaced (the umask narrows it), then given its exact bits.
        let kept = (try? SystemCall.status(name, in: directory)).flatMap {
            $0.kind == .regular ? $0.permissions & 0o777 : nil
        }
        var failure = SystemCallError("openat", errno: Errno.exists)
        // The lowest numbered name free (another download may be writing under the others), then
        // random ones; a name lost to a cleaner's removal (below) passes to the next.
        let names = PartialDownloadName.numbered(for: name) + (0..<3).map { _ in PartialDownloadName.random(for: name) }
        for temporary in names {
            let fd: Int32
            do throws(SystemCallError) {
                fd = try SystemCall.open(
                    temporary, in: directory, [.writeOnly, .create, .exclusive, .noFollow, .closeOnExec],
                    mode: kept ?? 0o666)
            } catch {
                // Another download's file has the name: the next one. Anything else is final.
                failure = error
                if error.errno == Errno.exists { continue }
                break
            }
            do throws(SystemCallError) {
                // A download that removes stale partial files may have locked this one between its
                // creation and this lock, and removed it: then its name is gone, and another is made.
                guard try lockAndCheckName(fd, temporary, in: directory) else { continue }
                if let kept { try SystemCall.setPermissions(fd, kept) }
                return (fd, temporary)
            } catch {
                failure = error
                try? SystemCall.unlink(temporary, in: directory)
                try? SystemCall.close(fd)
                break
            }
        }
        throw StorageError(
            .unwritableFile, "Cannot create a file next to \(target.path) for the download (\(failure)).")
    }

    /// Locks the new file `fd`, and checks that `name` still names it.
    ///
    /// - Returns: True with the lock held; false with `fd` closed, when `name` is gone.
    /// - Throws: What the lock or `fstat` threw (`fd` stays open).
    private static func lockAndCheckName(
        _ fd: Int32, _ name: String, in directory: Int32
    ) throws(SystemCallError) -> Bool {
        _ = try SystemCall.lockExclusively(fd, waiting: true)
        let own = try SystemCall.status(fd)
        if let named = try? SystemCall.status(name, in: directory), named.device == own.device,
            named.inode == own.inode
        {
            return true
        }
        try? SystemCall.close(fd)
        return false
    }

    /// Removes the partial files of `name` that downloads which died left in `directory` under
    /// its numbered names: regular files of this user that no download holds locked. Anything
    /// that cannot be examined, or changes meanwhile, is left alone. A few `openat` calls, not a
    /// listing of the directory, which a copy of many files into one directory would repeat
    /// for every file.
    private static func removeStalePartials(of name: String, in directory: Int32) {
        let user = SystemCall.effectiveUserID()
        for candidate in PartialDownloadName.numbered(for: name) {
            guard
                let fd = try? SystemCall.open(
                    candidate, in: directory, [.readOnly, .noFollow, .nonBlocking, .closeOnExec])
            else { continue }
            defer { try? SystemCall.close(fd) }
            // Locked: its writer is alive. Unlocked, and still under that name: its writer is gone.
            guard let own = try? SystemCall.status(fd), own.kind == .regular, own.owner == user,
                (try? SystemCall.lockExclusively(fd, waiting: false)) == true,
                let named = try? SystemCall.status(candidate, in: directory),
                named.device == own.device, named.inode == own.inode
            else { continue }
            try? SystemCall.unlink(candidate, in: directory)
        }
    }

    func reset() throws(StorageError) {
        let fd = opened.withLock { $0?.file ?? -1 }
        do throws(SystemCallError) {
            guard fd >= 0 else { throw SystemCallError("ftruncate", errno: Errno.badDescriptor) }
            try SystemCall.truncate(fd, to: 0)
        } catch {
            throw StorageError(.unwritableFile, "Cannot truncate the download's temporary file (errno \(error.errno)).")
        }
    }

    /// `pwrite` at any offset: the slices of a sliced download write side by side.
    var writesAtAnyOffset: Bool { true }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        let fd = opened.withLock { $0?.file ?? -1 }
        guard fd >= 0 else { throw .cancelled() }
        do throws(SystemCallError) {
            try SystemCall.writeAll(fd, bytes, at: offset)
        } catch {
            throw StorageError(.unwritableFile, "Cannot write the downloaded bytes to disk (errno \(error.errno)).")
        }
    }

    /// Flushes the temporary file and renames it over the target.
    func commit() async throws(StorageError) {
        let taken = opened.withLock { opened in
            defer { opened = nil }
            return opened
        }
        let target = target
        // Runs even when the task is cancelled by now: the descriptors are this call's to close.
        let failure = await BlockingIO.runToCompletion { () -> SystemCallError? in
            guard let taken else { return SystemCallError("fsync", errno: Errno.badDescriptor) }
            // The lock goes with the file's descriptor, once the name is the target's or gone.
            defer {
                try? SystemCall.close(taken.file)
                try? SystemCall.close(taken.directory)
            }
            do throws(SystemCallError) {
                try SystemCall.sync(taken.file)
                try SystemCall.rename(taken.temporary, to: target.lastPathComponent, in: taken.directory)
                return nil
            } catch {
                try? SystemCall.unlink(taken.temporary, in: taken.directory)
                return error
            }
        }
        if let failure {
            throw StorageError(
                .unwritableFile, "Cannot move the download into place at \(target.path) (errno \(failure.errno)).")
        }
    }

    func discard() async {
        let taken = opened.withLock { opened in
            defer { opened = nil }
            return opened
        }
        guard let taken else { return }
        await BlockingIO.runToCompletion {
            try? SystemCall.unlink(taken.temporary, in: taken.directory)
            try? SystemCall.close(taken.file)
            try? SystemCall.close(taken.directory)
        }
    }
}
