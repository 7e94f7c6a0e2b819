import Dispatch
import Foundation
import SystemCalls

/// The files below a directory that `cp -r DIR gs://…` uploads, found before
/// anything is started or contacted.
///
/// Regular files are taken, and symbolic links to regular files (as the file
/// they point to). Links to directories are not followed, so a link loop
/// cannot make the walk endless and nothing outside DIR is copied by surprise;
/// they are named in a warning. FIFOs, sockets and devices cannot be uploaded
/// (opening a FIFO would wait for a writer for ever): each is a failure, as are
/// broken links and directories that cannot be read. The walk runs on a thread
/// of its own: `stat` and `readdir` block.
struct LocalTree: Sendable {
    /// A file to upload.
    struct File: Sendable {
        /// The path below DIR, with `/` between its parts: the end of the object's name.
        let relativePath: String
        let url: URL
        let size: Int64
    }

    /// Something below DIR that is not copied, and why.
    struct Skipped: Sendable {
        let path: String
        let reason: String
    }

    /// The files, in name order.
    private(set) var files: [File] = []
    /// Entries that cannot be uploaded: each counts as a failure.
    private(set) var failures: [Skipped] = []
    /// Entries left out on purpose (links to directories): each is only warned about.
    private(set) var warnings: [Skipped] = []

    /// Why `cp -r` cannot walk a directory at all.
    struct Problem: Error {
        let message: String
        /// `.usage` for a source that is not a directory (`-r` needs one), `.localFile` for a missing one.
        let status: ExitCode
    }

    /// Walks `directory`.
    static func walk(_ directory: URL) async -> Result<LocalTree, Problem> {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: walkNow(directory))
            }
        }
    }

    /// ``walk(_:)`` on the calling thread.
    static func walkNow(_ directory: URL) -> Result<LocalTree, Problem> {
        let info: SystemCall.FileStatus
        do throws(SystemCallError) {
            info = try SystemCall.status(path: directory.path)
        } catch {
            if error.errno == Errno.noSuchFile || error.errno == Errno.notDirectory {
                return .failure(Problem(message: "\(directory.path) does not exist", status: .localFile))
            }
            return .failure(
                Problem(message: "\(directory.path) cannot be examined: \(error.reason)", status: .localFile))
        }
        guard info.kind == .directory else {
            return .failure(
                Problem(
                    message: "-r copies a directory; \(directory.path) is not one (copy a file without -r)",
                    status: .usage))
        }
        var tree = LocalTree()
        var pending = [(url: directory, relative: "")]
        while let (url, relative) = pending.popLast() {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: url.path)
            } catch {
                tree.failures.append(Skipped(path: url.path, reason: "the directory cannot be read"))
                continue
            }
            var subdirectories: [(URL, String)] = []
            for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                let child = url.appendingPathComponent(name)
                let childRelative = relative.isEmpty ? name : relative + "/" + name
                let own: SystemCall.FileStatus
                do throws(SystemCallError) {
                    own = try SystemCall.status(path: child.path, followingLinks: false)
                } catch {
                    tree.failures.append(Skipped(path: child.path, reason: error.reason))
                    continue
                }
                var target = own
                if own.kind == .symbolicLink {
                    guard let linked = try? SystemCall.status(path: child.path) else {
                        tree.failures.append(Skipped(path: child.path, reason: "a link to nothing"))
                        continue
                    }
                    target = linked
                    if target.kind == .directory {
                        tree.warnings.append(Skipped(path: child.path, reason: "a link to a directory, not followed"))
                        continue
                    }
                }
                switch target.kind {
                case .regular:
                    tree.files.append(File(relativePath: childRelative, url: child, size: target.size))
                case .directory:
                    subdirectories.append((child, childRelative))
                default:
                    let reason = SourceFile.problemNow(at: child.path).map { message in
                        // "PATH is a FIFO (named pipe); cp uploads …": the path is said already.
                        message.hasPrefix(child.path + " is ")
                            ? String(message.dropFirst(child.path.count + 4)) : message
                    }
                    tree.failures.append(Skipped(path: child.path, reason: reason ?? "not a regular file"))
                }
            }
            // Depth first, in name order.
            pending += subdirectories.reversed()
        }
        tree.files.sort { $0.relativePath.utf8.lexicographicallyPrecedes($1.relativePath.utf8) }
        return .success(tree)
    }
}
