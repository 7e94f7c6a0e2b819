package import Foundation
package import SystemCalls

/// The files below a directory that ``StorageTransferManager/uploadDirectory(_:to:metadata:)``
/// (and the command line's `cp -r` and `rsync`) upload, found before anything is started.
///
/// Regular files are taken, and symbolic links to regular files (as the file they point
/// to). Links to directories are not followed, so a link loop cannot make the walk endless
/// and nothing outside the directory is copied by surprise: each is skipped, with why. So is
/// a partial download of this SDK (``PartialDownloadName``: a download under way, or one whose
/// process died), which is no file of the user's.
/// FIFOs, sockets and devices cannot be uploaded (opening a FIFO would wait for a writer for
/// ever): each is a failure, as are broken links and directories that cannot be read. The
/// walk blocks (`stat`, `readdir`), so it runs on the SDK's blocking pool.
package struct LocalDirectoryTree: Sendable {
    /// A file to upload.
    package struct File: Sendable {
        /// The path below the directory, with `/` between its parts: the end of the object's name.
        package let relativePath: String
        /// Where the file is.
        package let url: URL
        /// Its size in bytes, when walked.
        package let size: Int64
    }

    /// Something below the directory that is not uploaded, and why.
    package struct Entry: Sendable {
        /// Where the entry is.
        package let url: URL
        /// The path below the directory, with `/` between its parts.
        package let relativePath: String
        /// Why it is not uploaded.
        package let reason: String
        /// What kind of file it is, when that (not a regular file) is why it is not uploaded,
        /// so that a caller can word the reason its own way.
        package var kind: SystemCall.FileStatus.Kind? = nil
    }

    /// Why a directory cannot be walked at all.
    package enum RootProblem: Error, Sendable {
        /// Nothing is at the path.
        case missing
        /// `stat` failed otherwise, with this reason.
        case unexaminable(String)
        /// Something other than a directory is at the path.
        case notADirectory
    }

    /// The files, in name order (UTF-8 byte order of their relative paths).
    package private(set) var files: [File] = []
    /// Entries that cannot be uploaded: each is a failure.
    package private(set) var failures: [Entry] = []
    /// Entries left out on purpose (links to directories, partial downloads): each is skipped.
    package private(set) var skipped: [Entry] = []

    /// Walks `directory` on the blocking pool.
    ///
    /// - Throws: ``StorageErrorCode/unreadableFile`` when `directory` does not exist or is not
    ///   a directory; ``StorageErrorCode/cancelled`` when the calling task is cancelled first.
    static func walk(_ directory: URL) async throws(StorageError) -> LocalDirectoryTree {
        try await BlockingIO.run { () throws(StorageError) in
            do throws(RootProblem) {
                return try walkNow(directory)
            } catch {
                switch error {
                case .missing: throw StorageError(.unreadableFile, "\(directory.path) does not exist")
                case .unexaminable(let reason):
                    throw StorageError(.unreadableFile, "\(directory.path) cannot be examined: \(reason)")
                case .notADirectory: throw StorageError(.unreadableFile, "\(directory.path) is not a directory")
                }
            }
        }
    }

    /// Walks `directory` on the calling thread, which it blocks.
    ///
    /// - Throws: Why `directory` itself cannot be walked; problems below it are ``failures``.
    package static func walkNow(_ directory: URL) throws(RootProblem) -> LocalDirectoryTree {
        try checkIsDirectory(directory)
        var tree = LocalDirectoryTree()
        var pending = [(url: directory, relative: "")]
        while let (url, relative) = pending.popLast() {
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: url.path)
            } catch {
                tree.failures.append(Entry(url: url, relativePath: relative, reason: "the directory cannot be read"))
                continue
            }
            var subdirectories: [(URL, String)] = []
            for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                let child = url.appendingPathComponent(name)
                let childRelative = relative.isEmpty ? name : relative + "/" + name
                if tree.take(child, at: childRelative) { subdirectories.append((child, childRelative)) }
            }
            // Depth first, in name order.
            pending += subdirectories.reversed()
        }
        tree.files.sort { $0.relativePath.utf8.lexicographicallyPrecedes($1.relativePath.utf8) }
        return tree
    }

    /// Refuses a `directory` that is missing, cannot be examined, or is not a directory.
    private static func checkIsDirectory(_ directory: URL) throws(RootProblem) {
        let info: SystemCall.FileStatus
        do throws(SystemCallError) {
            info = try SystemCall.status(path: directory.path)
        } catch {
            if error.errno == Errno.noSuchFile || error.errno == Errno.notDirectory { throw .missing }
            throw .unexaminable(error.reason)
        }
        guard info.kind == .directory else { throw .notADirectory }
    }

    /// Files one entry of a directory: as a file to upload, a failure, or a skipped link.
    ///
    /// - Returns: Whether the entry is a directory, to be walked in turn.
    private mutating func take(_ child: URL, at childRelative: String) -> Bool {
        if PartialDownloadName.isPartial(child.lastPathComponent) {
            skipped.append(
                Entry(
                    url: child, relativePath: childRelative, reason: "a partial download's temporary file, not uploaded"
                ))
            return false
        }
        let own: SystemCall.FileStatus
        do throws(SystemCallError) {
            own = try SystemCall.status(path: child.path, followingLinks: false)
        } catch {
            failures.append(Entry(url: child, relativePath: childRelative, reason: error.reason))
            return false
        }
        var target = own
        if own.kind == .symbolicLink {
            guard let linked = try? SystemCall.status(path: child.path) else {
                failures.append(Entry(url: child, relativePath: childRelative, reason: "a link to nothing"))
                return false
            }
            target = linked
            if target.kind == .directory {
                skipped.append(
                    Entry(url: child, relativePath: childRelative, reason: "a link to a directory, not followed"))
                return false
            }
        }
        switch target.kind {
        case .regular:
            files.append(File(relativePath: childRelative, url: child, size: target.size))
            return false
        case .directory:
            return true
        default:
            failures.append(
                Entry(url: child, relativePath: childRelative, reason: Self.kindName(target.kind), kind: target.kind))
            return false
        }
    }

    /// Why an entry of `kind` is not uploaded.
    private static func kindName(_ kind: SystemCall.FileStatus.Kind) -> String {
        switch kind {
        case .fifo: "is a FIFO (named pipe); only regular files are uploaded"
        case .characterDevice: "is a character device; only regular files are uploaded"
        case .blockDevice: "is a block device; only regular files are uploaded"
        case .socket: "is a socket; only regular files are uploaded"
        default: "not a regular file"
        }
    }
}
