import Dispatch
import SystemCalls

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
        let info: SystemCall.FileStatus
        do throws(SystemCallError) {
            info = try SystemCall.status(path: path)
        } catch {
            if error.errno == Errno.noSuchFile || error.errno == Errno.notDirectory { return "\(path) does not exist" }
            return "\(path) cannot be examined: \(error.reason)"
        }
        return refusal(of: info.kind).map { "\(path) is \($0)" }
    }

    /// Why `cp` refuses a file of `kind`, worded to follow its path and "is"
    /// ("a FIFO (named pipe); cp uploads regular files only"), or nil for a regular file.
    static func refusal(of kind: SystemCall.FileStatus.Kind) -> String? {
        let name: String
        switch kind {
        case .regular: return nil
        case .directory: name = "a directory"
        case .fifo: name = "a FIFO (named pipe)"
        case .characterDevice: name = "a character device"
        case .blockDevice: name = "a block device"
        case .socket: name = "a socket"
        case .symbolicLink, .unknown: name = "not a regular file"
        }
        return "\(name); cp uploads regular files only"
    }
}
