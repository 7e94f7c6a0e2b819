import CloudStorage
import Dispatch
import Foundation

/// The SDK's walk of a local directory, as `cp -r DIR gs://…` and `rsync` use it: before
/// anything is started or contacted, with the command line's exit statuses and wording.
///
/// Links to directories (``LocalDirectoryTree/skipped``) are named in a warning; FIFOs,
/// sockets and devices are failures worded as `cp` words them for a single file.
extension LocalDirectoryTree {
    /// Why `cp -r` cannot walk a directory at all.
    struct Problem: Error {
        let message: String
        /// `.usage` for a source that is not a directory (`-r` needs one), `.localFile` for a missing one.
        let status: ExitCode
    }

    /// Walks `directory` on a thread of its own: `stat` and `readdir` block.
    static func walkForCommand(_ directory: URL) async -> Result<LocalDirectoryTree, Problem> {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: walkForCommandNow(directory))
            }
        }
    }

    /// ``walkForCommand(_:)`` on the calling thread.
    static func walkForCommandNow(_ directory: URL) -> Result<LocalDirectoryTree, Problem> {
        do throws(RootProblem) {
            return .success(try walkNow(directory))
        } catch {
            switch error {
            case .missing:
                return .failure(Problem(message: "\(directory.path) does not exist", status: .localFile))
            case .unexaminable(let reason):
                return .failure(
                    Problem(message: "\(directory.path) cannot be examined: \(reason)", status: .localFile))
            case .notADirectory:
                return .failure(
                    Problem(
                        message: "-r copies a directory; \(directory.path) is not one (copy a file without -r)",
                        status: .usage))
            }
        }
    }
}

extension LocalDirectoryTree.Entry {
    /// Why the entry is not copied, worded as `cp` words it for a single file.
    var commandReason: String {
        kind.flatMap(SourceFile.refusal(of:)) ?? reason
    }
}
