import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `cp` checks about its source before it opens it or starts anything.
///
/// Only regular files (or symbolic links to them) can be uploaded: opening a
/// FIFO waits for a writer for ever, a character device may never end, and a
/// directory or socket cannot be read at all. `stat` tells without opening,
/// so the command refuses them at once with a clear message; the SDK opens
/// the file without blocking and checks again with `fstat`, in case it was
/// replaced in between.
enum SourceFile {
    /// Why the file at `path` cannot be uploaded, or nil when it is a regular file.
    ///
    /// `stat` runs on a thread of its own: on a network file system it can block.
    static func problem(at path: String) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: problemNow(at: path))
            }
        }
    }

    /// ``problem(at:)``, on the calling thread.
    static func problemNow(at path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return "\(path) does not exist" }
            return "\(path) cannot be examined: \(String(cString: strerror(code)))"
        }
        let kind: String
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO (named pipe)"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        case S_IFSOCK: kind = "a socket"
        default: kind = "not a regular file"
        }
        return "\(path) is \(kind); cp uploads regular files only"
    }
}
