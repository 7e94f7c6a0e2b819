public import Foundation

/// One file or object of a transfer: what is done to it, and how many bytes that moves.
///
/// ``StorageTransferManager`` plans the items of a directory upload or of a prefix download,
/// copy or deletion itself; ``StorageTransferManager/transfer(_:)`` runs items you planned (a
/// synchronisation that copies only what changed, for instance).
///
/// ```swift
/// let items = changedFiles.map { file in
///     StorageTransferItem.upload(file.url, to: storage.reference(objectName: "site/" + file.name), size: file.size)
/// }
/// let report = try await manager.transfer(items).value
/// ```
public struct StorageTransferItem: Sendable, Hashable {
    /// What is done to one file or object.
    ///
    /// Indirect: a reference carries its whole ``Storage`` configuration, so an operation is
    /// kilobytes; boxed, the plan's copies of it (the caller's items, the transfer's state) share
    /// one, and an item in an array is a few words.
    public indirect enum Operation: Sendable, Hashable {
        /// Uploads the file to the object (``StorageReference/putFile(from:metadata:preconditions:)``).
        case upload(URL, to: StorageReference, metadata: StorageMetadata?)
        /// Downloads the object into the file (``StorageReference/write(toFile:preconditions:)``),
        /// making its directory first.
        case download(StorageReference, to: URL)
        /// Copies the object on the server (``StorageReference/copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)``),
        /// with `metadata` replacing the source's when given.
        case copy(StorageReference, to: StorageReference, metadata: StorageMetadata?)
        /// Deletes the object (``StorageReference/delete(preconditions:)``).
        case delete(StorageReference)
    }

    /// What is done.
    public var operation: Operation
    /// The bytes the operation moves, when known: they count towards the transfer's progress
    /// and, for uploads and downloads, towards its memory budget while the file is in flight.
    public var size: Int64?
    /// For a download below a directory (a prefix's copy): that directory. The file's
    /// directories are made and entered from it without following symbolic links, so that an
    /// object's copy stays inside it. Nil for a download whose path is the caller's to trust.
    package var confinement: URL?

    /// Creates an item.
    ///
    /// - Parameters:
    ///   - operation: What is done.
    ///   - size: The bytes it moves, when known.
    public init(_ operation: Operation, size: Int64?) {
        self.operation = operation
        self.size = size
    }

    /// An upload of `file` to `object`.
    ///
    /// - Parameters:
    ///   - file: A `file://` URL of a regular file.
    ///   - object: Where it goes.
    ///   - size: The file's size.
    ///   - metadata: What to store with it; without a content type, one is inferred from the
    ///     file's extension.
    /// - Returns: The item.
    public static func upload(
        _ file: URL, to object: StorageReference, size: Int64?, metadata: StorageMetadata? = nil
    ) -> Self {
        Self(.upload(file, to: object, metadata: metadata), size: size)
    }

    /// A download of `object` into `file`.
    ///
    /// - Parameters:
    ///   - object: What is downloaded.
    ///   - file: A `file://` URL; its directory is made when missing.
    ///   - size: The object's size, when known.
    /// - Returns: The item.
    public static func download(_ object: StorageReference, to file: URL, size: Int64?) -> Self {
        Self(.download(object, to: file), size: size)
    }

    /// A download of `object` into `file` below `root`, reached from it without following
    /// symbolic links (``confinement``).
    ///
    /// - Parameters:
    ///   - object: What is downloaded.
    ///   - file: A `file://` URL below `root`; its directories are made when missing.
    ///   - size: The object's size, when known.
    ///   - root: The directory the file must stay inside; made when missing.
    /// - Returns: The item.
    package static func download(_ object: StorageReference, to file: URL, size: Int64?, within root: URL) -> Self {
        var item = Self(.download(object, to: file), size: size)
        item.confinement = root
        return item
    }

    /// A server-side copy of `object` to `destination`.
    ///
    /// - Parameters:
    ///   - object: What is copied.
    ///   - destination: Where the copy goes (on the same endpoint; any bucket).
    ///   - size: The object's size, when known.
    ///   - metadata: The copy's metadata, replacing the source's; nil keeps the source's.
    /// - Returns: The item.
    public static func copy(
        _ object: StorageReference, to destination: StorageReference, size: Int64?, metadata: StorageMetadata? = nil
    ) -> Self {
        Self(.copy(object, to: destination, metadata: metadata), size: size)
    }

    /// A deletion of `object`.
    ///
    /// - Parameter object: What is deleted.
    /// - Returns: The item.
    public static func delete(_ object: StorageReference) -> Self {
        Self(.delete(object), size: nil)
    }

    /// The object the item reads or writes.
    public var object: StorageReference {
        switch operation {
        case .upload(_, let object, _), .download(let object, _), .copy(let object, _, _), .delete(let object): object
        }
    }

    /// The file the item reads or writes, if any.
    public var file: URL? {
        switch operation {
        case .upload(let file, _, _), .download(_, let file): file
        case .copy, .delete: nil
        }
    }

    /// Bytes this item holds while in flight, as the memory budget counts them: a file's size
    /// for uploads and downloads (whose bytes pass through this process), none for copies and
    /// deletions (whose bytes stay on the server).
    var budgetCost: Int64 {
        switch operation {
        case .upload, .download: max(0, size ?? 0)
        case .copy, .delete: 0
        }
    }
}

/// How one item of a transfer ended.
public enum StorageTransferResult: Sendable, Equatable {
    /// The operation completed.
    case succeeded
    /// The item was left alone on purpose, for the reason given: a folder placeholder (an
    /// object whose name ends in `/`) has no file to download, a link to a directory is not
    /// followed, or the transfer stopped early (``StorageTransferManager/failFast``).
    case skipped(String)
    /// The operation failed with this error; the transfer's other items went on.
    case failed(StorageError)

    /// Whether the results are the same, comparing errors by code and message.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.succeeded, .succeeded): true
        case (.skipped(let a), .skipped(let b)): a == b
        case (.failed(let a), .failed(let b)): a.code == b.code && a.message == b.message
        default: false
        }
    }
}

/// One item and how it ended.
public struct StorageTransferOutcome: Sendable, Equatable {
    /// What the item was. For an entry that could not even be planned (a file that is not a
    /// regular one, an object name that cannot be a file), the operation it would have been.
    public let item: StorageTransferItem
    /// How it ended.
    public let result: StorageTransferResult
    /// A name for people: the file's path for an upload, the object's `gs://` URL otherwise.
    public var name: String {
        if case .upload(let file, _, _) = item.operation { return file.path }
        return "\(item.object)"
    }

    /// Creates an outcome.
    ///
    /// - Parameters:
    ///   - item: The item.
    ///   - result: How it ended.
    public init(item: StorageTransferItem, result: StorageTransferResult) {
        self.item = item
        self.result = result
    }
}

/// What a transfer came to: one outcome per item, in the order the items were planned
/// (name order for the manager's own plans).
///
/// ```swift
/// let report = try await manager.uploadDirectory(site, to: "www/").value
/// for outcome in report.outcomes {
///     if case .failed(let error) = outcome.result { print(outcome.name, error.code) }
/// }
/// ```
public struct StorageTransferReport: Sendable, Equatable {
    /// Every item's outcome.
    public let outcomes: [StorageTransferOutcome]

    /// Creates a report.
    ///
    /// - Parameter outcomes: Every item's outcome.
    public init(outcomes: [StorageTransferOutcome]) {
        self.outcomes = outcomes
    }

    /// The items that completed.
    public var succeeded: [StorageTransferOutcome] { outcomes.filter { $0.result == .succeeded } }

    /// The items that failed.
    public var failed: [StorageTransferOutcome] {
        outcomes.filter {
            if case .failed = $0.result { return true }
            return false
        }
    }

    /// The items left alone.
    public var skipped: [StorageTransferOutcome] {
        outcomes.filter {
            if case .skipped = $0.result { return true }
            return false
        }
    }
}

/// How many of a transfer's items have ended, and how.
public struct StorageTransferFileCounts: Sendable, Hashable, CustomStringConvertible {
    /// Items in all (0 until the directory was walked or the prefix listed).
    public var total = 0
    /// Items that completed.
    public var succeeded = 0
    /// Items left alone.
    public var skipped = 0
    /// Items that failed.
    public var failed = 0

    /// Creates counts.
    ///
    /// - Parameters:
    ///   - total: Items in all.
    ///   - succeeded: Items that completed.
    ///   - skipped: Items left alone.
    ///   - failed: Items that failed.
    public init(total: Int = 0, succeeded: Int = 0, skipped: Int = 0, failed: Int = 0) {
        self.total = total
        self.succeeded = succeeded
        self.skipped = skipped
        self.failed = failed
    }

    /// Items that ended, however.
    public var done: Int { succeeded + skipped + failed }

    /// `done/total files (failed failed)`.
    public var description: String { "\(done)/\(total) files" + (failed > 0 ? " (\(failed) failed)" : "") }
}
