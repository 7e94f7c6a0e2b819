import CloudStorage
import Foundation
import SystemCalls

/// Where `cp` keeps the resumable sessions of its large uploads, so that running the same
/// command again after a crash (or `kill -9`) continues from the server's committed offset.
///
/// One record per upload, in `$XDG_STATE_HOME/cloud-storage/uploads` (default
/// `~/.local/state/cloud-storage/uploads`): a ``StorageUploadSession`` as JSON, written by
/// ``StorageUploadSession/write(to:)`` (atomically, `0600`). A session URL is a bearer
/// capability (whoever has it can write the object until the session expires), so the
/// directory is the owner's only (`0700`; a wider one is narrowed, one that is a symbolic link
/// or belongs to someone else is refused and nothing is recorded). A record's file name is a
/// hash of what identifies the upload (``Key``), never the paths themselves.
///
/// Every method blocks briefly on the file system (a few hundred bytes); none of them throws
/// for a record that cannot be read: it is removed with a warning, as if there were none.
struct UploadSessionRecords: Sendable {
    /// What identifies one upload: the same command run again has the same key.
    struct Key: Sendable, Hashable {
        /// The server: its wire protocol and base URL, or the built-in emulator's directory
        /// (its port may change between runs).
        let endpoint: String
        let bucket: String
        let objectPath: String
        /// The local file's absolute path.
        let sourcePath: String

        /// A stable name for the record's file: 128 bits of two FNV-1a hashes over the
        /// length-prefixed fields (a collision only makes a record look absent, since
        /// ``UploadSessionRecords/load(_:)`` checks what the record names).
        var fileName: String {
            var bytes: [UInt8] = []
            for field in [endpoint, bucket, objectPath, sourcePath] {
                let utf8 = Array(field.utf8)
                withUnsafeBytes(of: UInt64(utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
                bytes.append(contentsOf: utf8)
            }
            func fnv1a(_ basis: UInt64) -> UInt64 {
                var hash = basis
                for byte in bytes {
                    hash ^= UInt64(byte)
                    hash = hash &* 0x100_0000_01b3
                }
                return hash
            }
            let high = fnv1a(0xcbf2_9ce4_8422_2325)
            let low = fnv1a(0x6c62_272e_07bb_0142)
            return Self.hex(high) + Self.hex(low) + ".json"
        }

        private static func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
    }

    /// Why records cannot be kept: said once, and the upload goes on without one.
    struct Refusal: Error {
        let message: String
    }

    /// The directory of the records.
    let directory: URL

    /// The records in `directory` (created when a record is first saved).
    init(directory: URL) {
        self.directory = directory
    }

    /// The records where the environment says state goes: `$XDG_STATE_HOME/cloud-storage/uploads`,
    /// else `$HOME/.local/state/cloud-storage/uploads`.
    init(environment: [String: String]) {
        let base: URL
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            // The XDG rule: a relative value is invalid and ignored.
            base = URL(fileURLWithPath: state, isDirectory: true)
        } else {
            let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
            base = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(
                ".local/state", isDirectory: true)
        }
        self.init(directory: base.appendingPathComponent("cloud-storage/uploads", isDirectory: true))
    }

    private func url(_ key: Key) -> URL {
        directory.appendingPathComponent(key.fileName, isDirectory: false)
    }

    /// The recorded session of the upload `key` names, or nil when there is none.
    ///
    /// A record that cannot be read, is not a valid session, or describes another upload is
    /// removed, with a warning on standard error.
    func load(_ key: Key) -> StorageUploadSession? {
        let file = url(key)
        guard let status = try? SystemCall.status(path: file.path, followingLinks: false) else { return nil }
        guard status.kind == .regular, (try? checkedDirectory()) != nil else {
            warn("ignoring \(file.path): not a regular file in an owner-only directory")
            return nil
        }
        do {
            let session = try StorageUploadSession(contentsOf: file)
            guard session.bucket == key.bucket, session.objectPath == key.objectPath,
                session.source.path == key.sourcePath
            else {
                warn("removing \(file.path): it records another upload")
                SystemCall.removeIfPresent(file.path)
                return nil
            }
            return session
        } catch {
            warn("removing the unusable upload record \(file.path): \(error.message)")
            SystemCall.removeIfPresent(file.path)
            return nil
        }
    }

    /// Records `session` as the upload `key` names, replacing any earlier record.
    ///
    /// - Throws: ``Refusal`` when the directory cannot be made owner-only or the file written.
    func save(_ session: StorageUploadSession, for key: Key) throws(Refusal) {
        try checkedDirectory()
        do {
            try session.write(to: url(key))
        } catch {
            throw Refusal(message: error.message)
        }
    }

    /// Forgets the upload `key` names (nothing happens when it has no record).
    func remove(_ key: Key) {
        SystemCall.removeIfPresent(url(key).path)
    }

    /// Creates the directory (and missing parents) owner-only, or checks the existing one: a real
    /// directory (not a symbolic link) owned by this user; group and other permissions are removed.
    @discardableResult
    func checkedDirectory() throws(Refusal) -> URL {
        var missing: [String] = []
        var path = directory.standardizedFileURL.path
        while true {
            do throws(SystemCallError) {
                _ = try SystemCall.status(path: path, followingLinks: false)
                break
            } catch  where error.errno == Errno.noSuchFile && path != "/" {
                missing.append(path)
                path = (path as NSString).deletingLastPathComponent
            } catch {
                throw Refusal(message: "cannot use \(path) (\(error.reason))")
            }
        }
        for created in missing.reversed() {
            // 0700 from the start (the XDG rule for state directories); the umask can only narrow it.
            do throws(SystemCallError) {
                try SystemCall.makeDirectory(created, mode: 0o700)
            } catch  where error.errno == Errno.exists {
                // Created meanwhile by another process: checked below like any existing one.
            } catch {
                throw Refusal(message: "cannot create \(created) (\(error.reason))")
            }
        }
        let target = directory.standardizedFileURL.path
        let status: SystemCall.FileStatus
        do throws(SystemCallError) {
            status = try SystemCall.status(path: target, followingLinks: false)
        } catch {
            throw Refusal(message: "cannot use \(target) (\(error.reason))")
        }
        guard status.kind == .directory else {
            throw Refusal(message: "\(target) is not a directory (a symbolic link is not followed)")
        }
        guard status.owner == SystemCall.effectiveUserID() else {
            throw Refusal(message: "\(target) belongs to another user")
        }
        if status.permissions & 0o077 != 0 {
            do throws(SystemCallError) {
                try SystemCall.setPermissions(target, 0o700)
            } catch {
                throw Refusal(message: "cannot make \(target) owner-only (\(error.reason))")
            }
        }
        return directory
    }

    private func warn(_ message: String) {
        report("warning: \(message)")
    }
}
