// PLACEHOLDER: replaced by the references work.
public struct StorageReference: Sendable {
    public let storage: Storage
    let path: StoragePath
    public var fullPath: String { path.string }
    public func child(_ path: String) -> StorageReference { self }
}

struct StoragePath: Hashable, Sendable {
    var string: String
    static let root = StoragePath(string: "")
    func validatedObjectName() throws(StorageError) -> String { string }
}
