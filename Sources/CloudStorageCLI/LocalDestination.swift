import Dispatch
import Foundation
import SystemCalls

/// Where a download goes on this machine, checked before anything is started
/// or contacted: a missing or unwritable directory fails at once, with no
/// progress bar and no server started.
///
/// The checks run on a thread of their own, since `stat` can block on a
/// network file system.
enum LocalDestination {
    /// Why a destination cannot be written.
    struct Problem: Error {
        let message: String
    }

    /// The file a single download writes: `path` itself, or `path/defaultName` when `path`
    /// ends in `/` or is a directory; its directory must exist and be writable.
    static func file(_ path: String, defaultName: String) async -> Result<URL, Problem> {
        await offThePool {
            var target = path
            if path.hasSuffix("/") || kind(of: path) == .directory {
                target = (path.hasSuffix("/") ? path : path + "/") + defaultName
            }
            if kind(of: target) == .directory { return .failure(Problem(message: "\(target) is a directory")) }
            let url = URL(fileURLWithPath: target)
            if let problem = writableDirectoryProblem(url.deletingLastPathComponent().path) {
                return .failure(problem)
            }
            return .success(url)
        }
    }

    /// The directory `cp -r gs://… DIR` copies into, and whether it exists already (then the
    /// copies go under the prefix's last name inside it). A missing one needs a writable parent.
    static func directory(_ path: String) async -> Result<(url: URL, exists: Bool), Problem> {
        await offThePool {
            let url = URL(fileURLWithPath: path, isDirectory: true)
            switch kind(of: path) {
            case .directory?:
                if let problem = writableDirectoryProblem(path) { return .failure(problem) }
                return .success((url, true))
            case nil:
                if let problem = writableDirectoryProblem(url.deletingLastPathComponent().path) {
                    return .failure(problem)
                }
                return .success((url, false))
            default:
                return .failure(Problem(message: "\(path) is not a directory"))
            }
        }
    }

    /// Why `path` is no directory this process may create files in, or nil.
    static func writableDirectoryProblem(_ path: String) -> Problem? {
        switch kind(of: path) {
        case .directory?:
            do throws(SystemCallError) {
                try SystemCall.checkAccess(path, [.write, .execute])
            } catch {
                return Problem(message: "cannot write in \(path): \(error.reason)")
            }
            return nil
        case nil:
            return Problem(message: "\(path) does not exist")
        default:
            return Problem(message: "\(path) is not a directory")
        }
    }

    /// The file type bits of what `path` names (links followed), or nil when nothing is there.
    static func kind(of path: String) -> SystemCall.FileStatus.Kind? {
        try? SystemCall.status(path: path).kind
    }

    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: body()) }
        }
    }
}
