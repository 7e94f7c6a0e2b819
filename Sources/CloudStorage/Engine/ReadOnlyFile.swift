import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            let reason = code == ENOENT ? "does not exist" : "cannot be opened"
            throw Self.error(.unreadableFile, "The file at \(path) \(reason).", errno: code)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw Self.error(.unreadableFile, "The file at \(path) cannot be examined.", errno: code)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            // Opened for uploads and for credentials files alike: the message says what the path is, not why.
            let what = (info.st_mode & S_IFMT) == S_IFDIR ? "a directory" : "a FIFO, socket or device"
            throw StorageError(.unreadableFile, "The path \(path) is \(what), not a regular file.")
        }
        self.descriptor = fd
        self.identity = Identity(info)
    }

    deinit {
        close(descriptor)
    }

    /// Reads up to `count` bytes at `offset` into `buffer`, retrying on EINTR.
    ///
    /// - Returns: The number of bytes read; fewer than asked only at end of file.
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws(StorageError) -> Int {
        var done = 0
        while done < count {
            let n = pread(descriptor, buffer + done, count - done, off_t(offset) + off_t(done))
            if n > 0 {
                done += n
            } else if n == 0 {
                break
            } else if errno != EINTR {
                throw Self.readError(path: path, errno: errno)
            }
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

    /// The error for a read of the file at `path` that failed with `errno`.
    static func readError(path: String, errno code: Int32) -> StorageError {
        error(.unreadableFile, "Reading \(path) failed.", errno: code)
    }

    /// Checks that the file is still the one opened, with the same size and
    /// modification time, and still at its path.
    ///
    /// - Throws: ``StorageErrorCode/fileChanged`` saying what changed.
    func checkUnchanged() throws(StorageError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw Self.error(.unreadableFile, "The file at \(path) cannot be examined.", errno: errno)
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
        var current = stat()
        guard stat(path, &current) == 0 else {
            throw StorageError(.fileChanged, "The file at \(path) disappeared while it was being uploaded.")
        }
        let atPath = Identity(current)
        if atPath.device != identity.device || atPath.inode != identity.inode {
            throw StorageError(.fileChanged, "The file at \(path) was replaced while it was being uploaded.")
        }
    }

    private static func error(_ code: StorageErrorCode, _ message: String, errno code32: Int32) -> StorageError {
        let posix = POSIXError(POSIXErrorCode(rawValue: code32) ?? .EIO)
        return StorageError(code, message + " (\(String(cString: strerror(code32))))", underlyingError: posix)
    }
}

extension ReadOnlyFile.Identity {
    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Darwin)
        modificationSeconds = Int64(info.st_mtimespec.tv_sec)
        modificationNanoseconds = Int64(info.st_mtimespec.tv_nsec)
        #else
        modificationSeconds = Int64(info.st_mtim.tv_sec)
        modificationNanoseconds = Int64(info.st_mtim.tv_nsec)
        #endif
    }
}
