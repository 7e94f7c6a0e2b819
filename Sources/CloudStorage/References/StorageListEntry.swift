/// One entry of a listing by ``Storage/objects(_:)``: an object, or a prefix that groups names
/// by the query's delimiter.
///
/// Names are the server's, taken exactly (see ``StorageReference``, "Paths"): an object named
/// `a//b` or `photos/` is that object, never another.
///
/// ```swift
/// let query = StorageObjectQuery(prefix: "photos/", delimiter: "/")
/// for try await entry in storage.objects(query) {
///     switch entry {
///     case .object(let object, let metadata):
///         print(object.fullPath, metadata?.size ?? 0, metadata?.generation ?? 0)
///     case .prefix(let prefix, let folder):
///         print("folder", prefix, folder?.fullPath ?? "-")
///     }
/// }
/// ```
public enum StorageListEntry: Sendable, Hashable {
    /// An object: the reference to its exact name, and its metadata as the listing answer
    /// carried it, without a request of its own.
    ///
    /// On Google Cloud Storage the metadata is always there (a listing item without a
    /// well-formed object resource fails the listing with
    /// ``StorageErrorCode/protocolViolation``). When the query
    /// ``StorageObjectQuery/includesVersions``, each entry is one version: the reference is
    /// pinned to its ``StorageMetadata/generation`` (``StorageReference/atGeneration(_:)``), so
    /// reading, copying or deleting through it acts on that version; otherwise the reference
    /// names the live object. The metadata is nil on Firebase Storage v0, whose listings carry
    /// only names.
    case object(StorageReference, StorageMetadata?)
    /// A common prefix: the query's prefix, then names' text up to and including the first
    /// delimiter after it (`photos/2024/`). `folder` is the reference whose
    /// ``StorageReference/list(maxResults:pageToken:)`` lists the names below it — the prefix
    /// without its final `/` — when the prefix ends in `/`; nil otherwise.
    case prefix(String, folder: StorageReference?)

    /// The name this entry sorts by: the object's name, or the prefix text.
    public var name: String {
        switch self {
        case .object(let object, _): object.fullPath
        case .prefix(let prefix, _): prefix
        }
    }
}
