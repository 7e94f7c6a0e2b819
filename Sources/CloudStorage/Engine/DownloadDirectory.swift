import Foundation
import SystemCalls

/// Opens the directory a file download writes into, so that the download uses every name
/// inside it through one descriptor (``FileDownloadDestination``).
///
/// A download the caller named is opened as named, symbolic links and all. A download below a
/// directory (a recursive copy's, whose path continues with an object's name) is opened from
/// that directory one name at a time, each made when missing and none followed when it is a
/// symbolic link: a link planted in the destination (to `~/.ssh`, say) is refused with its
/// path, never written through.
enum DownloadDirectory {
    /// Opens `target`'s directory, from `root` without following links when given.
    ///
    /// - Returns: A descriptor of the directory, which the caller closes.
    /// - Throws: ``StorageErrorCode/unwritableFile`` naming the path that is a symbolic link,
    ///   not a directory, or cannot be opened or made; ``StorageErrorCode/pathError`` for a
    ///   target that is not below `root`.
    static func open(of target: URL, confinedTo root: URL?) throws(StorageError) -> Int32 {
        let parent = target.deletingLastPathComponent().path
        guard let root else { return try openNamed(parent) }
        let names = try namesBelow(root.path, to: parent)
        var directory = try openNamed(root.path)
        var path = root.path
        for name in names {
            path += "/" + name
            do throws(StorageError) {
                let next = try openOrMake(name, in: directory, path: path, root: root.path)
                try? SystemCall.close(directory)
                directory = next
            } catch {
                try? SystemCall.close(directory)
                throw error
            }
        }
        return directory
    }

    /// Opens the directory at `path`, following links (the caller named it).
    private static func openNamed(_ path: String) throws(StorageError) -> Int32 {
        do throws(SystemCallError) {
            return try SystemCall.open(path, [.readOnly, .directory, .closeOnExec])
        } catch {
            throw StorageError(.unwritableFile, "Cannot open the directory \(path) for the download (\(error)).")
        }
    }

    /// The names leading from `root` to `parent`, which must be `root` or below it.
    private static func namesBelow(_ root: String, to parent: String) throws(StorageError) -> [String] {
        let base = root.hasSuffix("/") && root.count > 1 ? String(root.dropLast()) : root
        if parent == base { return [] }
        let start = base == "/" ? base : base + "/"
        guard parent.hasPrefix(start) else {
            throw .pathError("\(parent) is not inside \(base), where the download must stay.")
        }
        let names = parent.dropFirst(start.count).split(separator: "/", omittingEmptySubsequences: false)
        guard !names.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw .pathError("\(parent) has an empty, . or .. name below \(base).")
        }
        return names.map(String.init)
    }

    /// Opens the directory `name` inside `directory` without following a link, making it when missing.
    private static func openOrMake(
        _ name: String, in directory: Int32, path: String, root: String
    ) throws(StorageError) -> Int32 {
        var failure = SystemCallError("openat", errno: Errno.noSuchFile)
        // Made when missing, then opened; a directory removed meanwhile is made once more.
        for _ in 0..<3 {
            do throws(SystemCallError) {
                return try SystemCall.open(name, in: directory, [.readOnly, .directory, .noFollow, .closeOnExec])
            } catch  where error.errno == Errno.noSuchFile {
                failure = error
            } catch  where error.errno == Errno.symbolicLink || error.errno == Errno.notDirectory {
                // Linux says ENOTDIR for a link to a directory (O_DIRECTORY is checked first).
                guard (try? SystemCall.status(name, in: directory))?.kind == .symbolicLink else {
                    throw StorageError(
                        .unwritableFile, "\(path) is not a directory, so nothing can be written below it.")
                }
                throw StorageError(
                    .unwritableFile,
                    "\(path) is a symbolic link: a copy into \(root) writes only inside it and follows no link it did not make."
                )
            } catch {
                throw StorageError(.unwritableFile, "Cannot open the directory \(path) (\(error)).")
            }
            do throws(SystemCallError) {
                try SystemCall.makeDirectory(name, in: directory, mode: 0o777)
            } catch  where error.errno == Errno.exists {
                // Made meanwhile (another download into the same directory): opened next turn.
            } catch {
                throw StorageError(.unwritableFile, "Cannot make the directory \(path) (\(error)).")
            }
        }
        throw StorageError(.unwritableFile, "Cannot open the directory \(path) (\(failure)).")
    }
}
