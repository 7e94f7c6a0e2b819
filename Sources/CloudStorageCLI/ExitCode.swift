import CloudStorage
import SystemCalls

/// The process's exit status, one per kind of failure a shell script may
/// want to tell apart.
package enum ExitCode: Int32 {
    case success = 0
    /// Anything not listed below.
    case failure = 1
    /// The command line was wrong.
    case usage = 2
    /// The local file is missing, unreadable or unwritable, or changed during the transfer.
    case localFile = 3
    /// The server refused the credentials.
    case denied = 4
    /// The bucket (or project) does not exist.
    case notFound = 5
    /// Retries ran out, or the server throttled until they did.
    case unavailable = 6
    /// The stored object did not match what was sent, changed during a download, or (stored
    /// gzip-compressed) did not decompress.
    case integrity = 7
    /// A condition on the object (`--if-generation-match`, `--if-metageneration-match`, or a
    /// generation the command pinned) did not hold: nothing was written or deleted.
    case precondition = 8
    /// Interrupted by Ctrl-C (128 + SIGINT, as shells report it).
    case interrupted = 130
    /// Stopped by SIGTERM (128 + SIGTERM).
    case terminated = 143

    /// The status for a command stopped by `signal`: SIGTERM's own, else Ctrl-C's.
    init(signal: Int32) {
        self = signal == ProcessSignal.terminate ? .terminated : .interrupted
    }

    init(_ error: StorageError) {
        switch error.code {
        case .unreadableFile, .unwritableFile, .fileChanged: self = .localFile
        case .unauthenticated, .unauthorized: self = .denied
        case .bucketNotFound, .projectNotFound, .objectNotFound: self = .notFound
        case .retryLimitExceeded, .quotaExceeded: self = .unavailable
        case .nonMatchingChecksum, .objectChanged, .undecodableContent: self = .integrity
        case .preconditionFailed: self = .precondition
        case .invalidArgument, .pathError, .bucketMismatch: self = .usage
        case .cancelled: self = .interrupted
        default: self = .failure
        }
    }

    /// The status of a command made of several operations: the highest status of them all.
    func worse(_ other: ExitCode) -> ExitCode {
        other.rawValue > rawValue ? other : self
    }
}
