import Foundation
import SystemCalls

/// An open, read-only file descriptor for an upload (or a credentials file), with the
/// identity the file had when it was opened, so any later change can be noticed.
///
/// Reads use `pread` at absolute offsets, so one descriptor serves any number
/// of requests and retries without seeking. All methods block: call them from
/// ``BlockingIO`` or a transport's own thread, never from Swift's cooperative
/// pool.
final class ReadOnlyFile: Sendable {
    /// What identifies a version of a file's contents cheaply.
    struct Identity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modificationSeconds: Int64
        var modificationNanoseconds: Int64
    }

    let path: String
    /// The identity captured when the file was opened.
    let identity: Identity
    /// The open descriptor, for `sendfile(2)` at absolute offsets. Valid while this
    /// object lives; never close it, never move its file position (use offsets).
    // Never reassigned; closed exactly once, in deinit, when no reader can remain.
    let descriptor: Int32

    var size: Int64 { identity.size }

    /// Opens a regular file for reading.
    ///
    /// - Throws: ``StorageErrorCode/unreadableFile`` naming the path when the
    ///   file is missing, is a directory or anything but a regular file, or
    ///   cannot be opened.
    init(path: String) throws(StorageError) {
        self.path = path
        // O_NONBLOCK: opening a FIFO would otherwise wait for a writer for ever (and a
        // device may block too); fstat below refuses anything but a regular file, whose
        // reads the flag does not affect.
        let fd: Int32
        do throws(SystemCallError) {
            fd = try SystemCall.open(path, [.readOnly, .closeOnExec, .nonBlocking])
        } catch {
            let reason = error.errno == Errno.noSuchFile ? "does not exist" : "cannot be opened"
            throw Self.error(.unreadableFile, "The file at \(path) \(reason).", error)
        }
        let info: SystemCall.FileStatus
        do throws(SystemCallError) {
            info = try SystemCall.status(fd)
        } catch {
            try? SystemCall.close(fd)
            throw Self.error(.unreadableFile, "The file at \(path) cannot be examined.", error)
        }
        guard info.kind == .regular else {
            try? SystemCall.close(fd)
            // Opened for uploads and for credentials files alike: the message says what the path is, not why.
            let what = info.kind == .directory ? "a directory" : "a FIFO, socket or device"
            throw StorageError(.unreadableFile, "The path \(path) is \(what), not a regular file.")
        }
        self.descriptor = fd
        self.identity = Identity(info)
    }

    deinit {
        try? SystemCall.close(descriptor)
    }

    /// Reads up to `count` bytes at `offset` into `buffer`, retrying on EINTR.
    ///
    /// - Returns: The number of bytes read; fewer than asked only at end of file.
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws(StorageError) -> Int {
        var done = 0
        while done < count {
            let rest = UnsafeMutableRawBufferPointer(start: buffer + done, count: count - done)
            let n: Int
            do throws(SystemCallError) {
                n = try SystemCall.read(descriptor, into: rest, at: offset + Int64(done))
            } catch {
                throw Self.readError(path: path, error)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads exactly `count` bytes at `offset`; a short read means the file
    /// shrank since it was opened.
    ///
    /// - Throws: ``StorageErrorCode/fileChanged`` on a short read,
    ///   ``StorageErrorCode/unreadableFile`` when the read fails.
    func readExactly(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws(StorageError) {
        let n = try read(into: buffer, count: count, at: offset)
        if n < count {
            throw shrankError(endingAt: offset + Int64(n))
        }
    }

    /// The error for a file found to end at `end`, before the bytes an upload still needs.
    func shrankError(endingAt end: Int64) -> StorageError {
        StorageError(
            .fileChanged,
            "The file at \(path) shrank while it was being uploaded (ended at byte \(end), expected \(identity.size) bytes)."
        )
    }

    /// The error for a read of the file at `path` that failed.
    static func readError(path: String, _ failure: SystemCallError) -> StorageError {
        error(.unreadableFile, "Reading \(path) failed.", failure)
    }

    /// Checks that the file is still the one opened, with the same size and
    /// modification time, and still at its path.
    ///
    /// - Throws: ``StorageErrorCode/fileChanged`` saying what changed.
    func checkUnchanged() throws(StorageError) {
        let info: SystemCall.FileStatus
        do throws(SystemCallError) {
            info = try SystemCall.status(descriptor)
        } catch {
            throw Self.error(.unreadableFile, "The file at \(path) cannot be examined.", error)
        }
        let now = Identity(info)
        if now.size != identity.size {
            throw StorageError(
                .fileChanged,
                "The file at \(path) changed size while it was being uploaded (\(identity.size) → \(now.size) bytes)."
            )
        }
        if now != identity {
            throw StorageError(.fileChanged, "The file at \(path) was modified while it was being uploaded.")
        }
        guard let current = try? SystemCall.status(path: path) else {
            throw StorageError(.fileChanged, "The file at \(path) disappeared while it was being uploaded.")
        }
        let atPath = Identity(current)
        if atPath.device != identity.device || atPath.inode != identity.inode {
            throw StorageError(.fileChanged, "The file at \(path) was replaced while it was being uploaded.")
        }
    }

    private static func error(_ code: StorageErrorCode, _ message: String, _ failure: SystemCallError) -> StorageError {
        let posix = POSIXError(POSIXErrorCode(rawValue: failure.errno) ?? .EIO)
        return StorageError(code, message + " (\(failure.reason))", underlyingError: posix)
    }
}

extension ReadOnlyFile.Identity {
    init(_ info: SystemCall.FileStatus) {
        device = info.device
        inode = info.inode
        size = info.size
        modificationSeconds = info.modificationSeconds
        modificationNanoseconds = info.modificationNanoseconds
    }
}
