public import Foundation

/// Moves many files and objects at once: uploads a directory tree, downloads, copies or
/// deletes every object under a prefix, or runs items you planned — each as one
/// ``StorageTransferTask`` with one progress and one outcome per file.
///
/// All the files of one transfer share its limits: at most ``maxConcurrentFiles`` run at
/// once, and the files in flight hold at most ``memoryBudget`` bytes between them (counted
/// from their sizes). Each file goes through the SDK's own single-object operations
/// (``StorageReference/putFile(from:metadata:preconditions:)``,
/// ``StorageReference/write(toFile:preconditions:)``, server-side
/// ``StorageReference/copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)``,
/// ``StorageReference/delete(preconditions:)``), with their retries, checksums and resumption.
///
/// Names are exact, as everywhere in the SDK. A prefix is the start of object names, taken
/// byte for byte: `photos/` selects `photos/a.jpg` and `photos//b.jpg` but not `photos.txt`;
/// the prefix `photos` would select all three. Listings only ever yield names under the prefix.
///
/// ```swift
/// let manager = StorageTransferManager(storage: storage, maxConcurrentFiles: 32)
/// let report = try await manager.uploadDirectory(URL(fileURLWithPath: "/srv/site"), to: "www/").value
/// print(report.succeeded.count, "uploaded,", report.failed.count, "failed")
/// ```
public struct StorageTransferManager: Sendable {
    /// The bucket the manager's transfers read and write (copies may write to another).
    public let storage: Storage
    /// How many files of one transfer run at once (at least 1).
    public var maxConcurrentFiles: Int
    /// The most bytes the files in flight of one transfer may hold between them, counted from
    /// their sizes (uploads and downloads; copies and deletions keep their bytes on the
    /// server). A file larger than the budget runs alone.
    public var memoryBudget: Int64
    /// Whether the first file that fails stops the transfer: the files in flight are cancelled
    /// and the others are not started (they are ``StorageTransferResult/skipped(_:)``).
    public var failFast: Bool
    /// Entries per listing request (1 to 1000).
    public var listingPageSize: Int

    /// Starts the upload of one file: its file, its object, and the metadata its item carries.
    public typealias UploadStarter =
        @Sendable (_ file: URL, _ object: StorageReference, _ metadata: StorageMetadata?) async -> StorageUploadTask

    /// How each upload of a transfer starts: ``StorageReference/putFile(from:metadata:preconditions:)``
    /// by default. Replace it to continue sessions an earlier process saved
    /// (``Storage/resumeUpload(_:from:)``), to add preconditions, or to compress.
    ///
    /// ```swift
    /// manager.startUpload = { file, object, metadata in
    ///     object.putFile(from: file, metadata: metadata, preconditions: .doesNotExist)
    /// }
    /// ```
    public var startUpload: UploadStarter = { file, object, metadata in
        object.putFile(from: file, metadata: metadata)
    }

    /// Creates a manager.
    ///
    /// - Parameters:
    ///   - storage: The bucket its transfers read and write.
    ///   - maxConcurrentFiles: How many files of one transfer run at once; 16 by default.
    ///   - memoryBudget: The bytes the files in flight may hold; 64 MiB by default.
    ///   - failFast: Whether the first failure stops the transfer; false by default.
    public init(
        storage: Storage, maxConcurrentFiles: Int = 16, memoryBudget: Int64 = 64 << 20, failFast: Bool = false
    ) {
        self.storage = storage
        self.maxConcurrentFiles = maxConcurrentFiles
        self.memoryBudget = memoryBudget
        self.failFast = failFast
        self.listingPageSize = StorageReference.maximumListResults
    }

    /// Uploads every regular file below `directory` to `prefix` followed by its path below
    /// the directory (`/` between the parts).
    ///
    /// Symbolic links to files are uploaded as the file; links to directories are not
    /// followed (skipped), nor is a file download's temporary file (`.NAME.XXXXXXXX.download`,
    /// skipped); FIFOs, sockets, devices, broken links and unreadable directories
    /// are failures, as are files whose object name would break the name rules. Files are
    /// uploaded in name order.
    ///
    /// ```swift
    /// let task = manager.uploadDirectory(URL(fileURLWithPath: "/srv/site"), to: "www/")
    /// let report = try await task.value
    /// ```
    ///
    /// - Parameters:
    ///   - directory: A `file://` URL of a directory.
    ///   - prefix: What each object name starts with, exactly (usually ending in `/`).
    ///   - metadata: What to store with each file; without a content type, each file's is
    ///     inferred from its extension.
    /// - Returns: The running transfer. It fails with ``StorageErrorCode/unreadableFile`` when
    ///   `directory` does not exist or is not a directory.
    public func uploadDirectory(
        _ directory: URL, to prefix: String, metadata: StorageMetadata? = nil
    ) -> StorageTransferTask {
        let storage = storage
        return start { () throws(StorageError) in
            let tree = try await LocalDirectoryTree.walk(directory)
            var planned: TransferState.Planned = []
            for file in tree.files {
                let object = storage.reference(objectName: prefix + file.relativePath)
                let item = StorageTransferItem.upload(file.url, to: object, size: file.size, metadata: metadata)
                do throws(StorageError) {
                    try StorageReference.validateObjectName(object.fullPath)
                    planned.append((item, nil))
                } catch {
                    planned.append((item, .failed(error)))
                }
            }
            for entry in tree.failures {
                let item = StorageTransferItem.upload(
                    entry.url, to: storage.reference(objectName: prefix + entry.relativePath), size: nil,
                    metadata: metadata)
                planned.append((item, .failed(StorageError(.unreadableFile, "\(entry.url.path): \(entry.reason)"))))
            }
            for entry in tree.skipped {
                let item = StorageTransferItem.upload(
                    entry.url, to: storage.reference(objectName: prefix + entry.relativePath), size: nil,
                    metadata: metadata)
                planned.append((item, .skipped(entry.reason)))
            }
            return planned
        }
    }

    /// Downloads every object whose name starts with `prefix` into `directory`, each to the
    /// path its name continues with after the prefix.
    ///
    /// Directories are made as needed. An object whose name ends in `/` (a folder
    /// placeholder) is skipped: its directory is made when it holds files. An object whose
    /// name would not be its own file there — with an empty segment (`a//b`), a `.` or `..`
    /// segment, or a NUL byte — fails with ``StorageErrorCode/pathError`` and is never
    /// written. No symbolic link below `directory` is followed: an object whose path runs
    /// through one fails with ``StorageErrorCode/unwritableFile`` naming it, so no copy lands
    /// outside `directory`.
    ///
    /// ```swift
    /// let report = try await manager.downloadObjects(
    ///     withPrefix: "logs/2024/", to: URL(fileURLWithPath: "/var/tmp/logs")
    /// ).value
    /// ```
    ///
    /// - Parameters:
    ///   - prefix: What the names start with, exactly.
    ///   - directory: A `file://` URL of the directory the files go into.
    /// - Returns: The running transfer.
    public func downloadObjects(withPrefix prefix: String, to directory: URL) -> StorageTransferTask {
        let (storage, pageSize) = (storage, listingPageSize)
        return start { () throws(StorageError) in
            try await Self.objects(in: storage, withPrefix: prefix, pageSize: pageSize).map {
                (object, size) -> (item: StorageTransferItem, decided: StorageTransferResult?) in
                let relative = object.fullPath.utf8.dropFirst(prefix.utf8.count)
                let segments = relative.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
                let file = segments.reduce(directory) {
                    $0.appendingPathComponent(String(decoding: $1, as: UTF8.self))
                }
                let item = StorageTransferItem.download(object, to: file, size: size, within: directory)
                if relative.isEmpty || relative.last == UInt8(ascii: "/") {
                    return (item, .skipped("a folder placeholder: no bytes to copy"))
                }
                if let problem = Self.localPathProblem(segments, inside: directory) {
                    return (item, .failed(.pathError("\(object) is not copied: \(problem)")))
                }
                return (item, nil)
            }
        }
    }

    /// Deletes every object whose name starts with `prefix`.
    ///
    /// Deletion follows the listing page by page; the objects are exactly the names listed
    /// (so the prefix `pfx//` leaves `pfx/a`). An object already gone when its turn comes
    /// fails with ``StorageErrorCode/objectNotFound``.
    ///
    /// ```swift
    /// let report = try await manager.deleteObjects(withPrefix: "tmp/").value
    /// ```
    ///
    /// - Parameter prefix: What the names start with, exactly; the empty prefix empties the bucket.
    /// - Returns: The running transfer.
    public func deleteObjects(withPrefix prefix: String) -> StorageTransferTask {
        let (storage, pageSize) = (storage, listingPageSize)
        return start { () throws(StorageError) in
            try await Self.objects(in: storage, withPrefix: prefix, pageSize: pageSize).map {
                (object, _) -> (item: StorageTransferItem, decided: StorageTransferResult?) in
                (StorageTransferItem.delete(object), nil)
            }
        }
    }

    /// Copies every object whose name starts with `prefix`, on the server, to
    /// `destinationPrefix` followed by the rest of its name, in `destination`'s bucket.
    ///
    /// Each copy is a rewrite: no byte passes through this process. Google Cloud Storage only;
    /// on Firebase Storage v0 each object fails with ``StorageErrorCode/invalidArgument``.
    ///
    /// ```swift
    /// let report = try await manager.copyObjects(
    ///     withPrefix: "2024/", to: "archive/2024/", in: storage.bucket("cold-archive")
    /// ).value
    /// ```
    ///
    /// - Parameters:
    ///   - prefix: What the source names start with, exactly.
    ///   - destinationPrefix: What the copies' names start with instead.
    ///   - destination: The bucket the copies go to; the manager's own when nil.
    /// - Returns: The running transfer.
    public func copyObjects(
        withPrefix prefix: String, to destinationPrefix: String, in destination: Storage? = nil
    ) -> StorageTransferTask {
        let (storage, pageSize) = (storage, listingPageSize)
        let target = destination ?? storage
        return start { () throws(StorageError) in
            try await Self.objects(in: storage, withPrefix: prefix, pageSize: pageSize).map {
                (object, size) -> (item: StorageTransferItem, decided: StorageTransferResult?) in
                let name =
                    destinationPrefix
                    + String(decoding: object.fullPath.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
                let copy = target.reference(objectName: name)
                let item = StorageTransferItem.copy(object, to: copy, size: size)
                do throws(StorageError) {
                    try StorageReference.validateObjectName(name)
                    return (item, nil)
                } catch {
                    return (item, .failed(error))
                }
            }
        }
    }

    /// Runs `items`, planned by the caller, under the manager's limits.
    ///
    /// ```swift
    /// let stale = [storage.reference(objectName: "cache/a"), storage.reference(objectName: "cache/b")]
    /// let report = try await manager.transfer(stale.map { .delete($0) }).value
    /// ```
    ///
    /// - Parameter items: What to do, in the order to start it.
    /// - Returns: The running transfer; its report lists the items in this order.
    public func transfer(_ items: [StorageTransferItem]) -> StorageTransferTask {
        start { () throws(StorageError) in items.map { ($0, nil) } }
    }

    private func start(
        _ planner: @escaping @Sendable () async throws(StorageError) -> TransferState.Planned
    ) -> StorageTransferTask {
        StorageTransferTask(
            reference: storage.reference(),
            limits: TransferJob.Limits(
                maxConcurrentFiles: maxConcurrentFiles, memoryBudget: memoryBudget, failFast: failFast,
                startUpload: startUpload),
            state: TransferState(planner: planner))
    }

    // MARK: Planning

    /// Every object whose name starts with `prefix`, with its size when the listing carried it, in name order.
    ///
    /// One flat listing where the endpoint has it; on Firebase Storage v0, which lists one
    /// level at a time, a listing per level.
    static func objects(
        in storage: Storage, withPrefix prefix: String, pageSize: Int
    ) async throws(StorageError) -> [(StorageReference, Int64?)] {
        var found: [(StorageReference, Int64?)] = []
        let flat = StorageObjectQuery(prefix: prefix, pageSize: pageSize)
        if (try? flat.validate(for: storage.endpoint)) != nil {
            for try await entry in storage.objects(flat) {
                if case .object(let object, let metadata) = entry { found.append((object, metadata?.size)) }
            }
            return found
        }
        var levels = [prefix]
        while let level = levels.popLast() {
            for try await entry in storage.objects(
                StorageObjectQuery(prefix: level, delimiter: "/", pageSize: pageSize))
            {
                switch entry {
                case .object(let object, let metadata): found.append((object, metadata?.size))
                case .prefix(let below, _) where below.utf8.count > level.utf8.count: levels.append(below)
                case .prefix: continue
                }
            }
        }
        found.sort { $0.0.fullPath.utf8.lexicographicallyPrecedes($1.0.fullPath.utf8) }
        return found
    }

    /// Why the file path made of an object name's `segments` (below the prefix) cannot be its
    /// copy inside `root`, or nil when it can: each object's copy is its own, inside `root`.
    package static func localPathProblem(_ segments: [Substring.UTF8View.SubSequence], inside root: URL) -> String? {
        if segments.contains(where: { $0.contains(0) }) {
            return "its name holds a NUL byte, which no file name can"
        }
        // A name such as a/../../etc/x would write outside the directory: refused, never written.
        if segments.contains(where: { $0.elementsEqual("..".utf8) || $0.elementsEqual(".".utf8) }) {
            return "its name would leave \(root.path) or alias another path (a . or .. segment)"
        }
        // `a//b` and `/b` would be written as a/b and b, the copies of other objects.
        if segments.contains(where: \.isEmpty) {
            return "its name has an empty segment (a leading / or //), so its file would be another object's"
        }
        return nil
    }
}
