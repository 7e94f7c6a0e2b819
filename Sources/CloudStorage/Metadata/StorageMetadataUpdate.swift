/// A change to an object's metadata: which fields to set, which to remove,
/// and, by leaving them nil, which to keep as they are.
///
/// ``StorageReference/updateMetadata(_:preconditions:)-(StorageMetadataUpdate,_)`` sends only what the update names
/// (PATCH semantics), so two updates of different fields never overwrite
/// each other. Removing is explicit: ``Change/remove`` removes a header field
/// or a custom key; nothing else ever does.
///
/// ```swift
/// var update = StorageMetadataUpdate()
/// update.cacheControl = .set("public, max-age=300")
/// update.contentLanguage = .remove
/// update.customMetadata["reviewed"] = .set("yes")
/// update.customMetadata["draft"] = .remove
/// let metadata = try await spaceRef.updateMetadata(update)
/// ```
public struct StorageMetadataUpdate: Sendable, Hashable {
    /// What happens to one field.
    public enum Change: Sendable, Hashable {
        /// The field takes this value.
        case set(String)
        /// The field is removed (a header field returns to the server's default).
        case remove
    }

    /// The media type, such as `image/png`; nil leaves it unchanged.
    public var contentType: Change?
    /// The `Cache-Control` header; nil leaves it unchanged.
    public var cacheControl: Change?
    /// The `Content-Disposition` header; nil leaves it unchanged.
    public var contentDisposition: Change?
    /// The `Content-Encoding` of the stored bytes; nil leaves it unchanged.
    public var contentEncoding: Change?
    /// The `Content-Language`; nil leaves it unchanged.
    public var contentLanguage: Change?
    /// Changes to custom keys; keys not named here keep their values.
    public var customMetadata: [String: Change] = [:]

    /// Creates an update that changes nothing; set the fields to change.
    ///
    /// ```swift
    /// var update = StorageMetadataUpdate()
    /// update.contentType = .set("text/plain; charset=utf-8")
    /// ```
    public init() {}

    /// An update that sets every field `metadata` gives a value: its content
    /// type and other headers when not nil, and each of its custom keys. It
    /// removes nothing (use ``Change/remove`` for that).
    ///
    /// ```swift
    /// var metadata = StorageMetadata()
    /// metadata.cacheControl = "public, max-age=300"
    /// let update = StorageMetadataUpdate(setting: metadata)  // cacheControl only
    /// ```
    ///
    /// - Parameter metadata: The values to set.
    public init(setting metadata: StorageMetadata) {
        contentType = metadata.contentType.map(Change.set)
        cacheControl = metadata.cacheControl.map(Change.set)
        contentDisposition = metadata.contentDisposition.map(Change.set)
        contentEncoding = metadata.contentEncoding.map(Change.set)
        contentLanguage = metadata.contentLanguage.map(Change.set)
        customMetadata = metadata.customMetadata.mapValues(Change.set)
    }

    /// Whether the update names no field at all.
    var isEmpty: Bool {
        contentType == nil && cacheControl == nil && contentDisposition == nil && contentEncoding == nil
            && contentLanguage == nil && customMetadata.isEmpty
    }

    /// The JSON body of a PATCH request: named fields with their values, or
    /// `null` for removals; custom keys inside `metadata`. Keys are sorted.
    func patchJSON() -> JSONText.Value {
        func value(_ change: Change) -> JSONText.Value {
            switch change {
            case .set(let text): .string(text)
            case .remove: .null
            }
        }
        var fields: [(String, JSONText.Value)] = []
        let headers: [(String, Change?)] = [
            ("contentType", contentType),
            ("cacheControl", cacheControl),
            ("contentDisposition", contentDisposition),
            ("contentEncoding", contentEncoding),
            ("contentLanguage", contentLanguage),
        ]
        for case (let key, let change?) in headers {
            fields.append((key, value(change)))
        }
        if !customMetadata.isEmpty {
            fields.append(("metadata", .object(customMetadata.map { ($0.key, value($0.value)) })))
        }
        return .object(fields)
    }
}
