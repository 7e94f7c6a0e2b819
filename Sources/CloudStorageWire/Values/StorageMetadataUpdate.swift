public import Foundation

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
    public enum Change<Value: Sendable & Hashable>: Sendable, Hashable {
        /// The field takes this value.
        case set(Value)
        /// The field is removed (a header field returns to the server's default).
        case remove
    }

    /// The media type, such as `image/png`; nil leaves it unchanged.
    public var contentType: Change<String>?
    /// The `Cache-Control` header; nil leaves it unchanged.
    public var cacheControl: Change<String>?
    /// The `Content-Disposition` header; nil leaves it unchanged.
    public var contentDisposition: Change<String>?
    /// The `Content-Encoding` of the stored bytes; nil leaves it unchanged.
    public var contentEncoding: Change<String>?
    /// The `Content-Language`; nil leaves it unchanged.
    public var contentLanguage: Change<String>?
    /// Changes to custom keys; keys not named here keep their values.
    public var customMetadata: [String: Change<String>] = [:]
    /// The custom time (Google Cloud Storage only); nil leaves it unchanged. It can only move
    /// later: the server refuses an earlier time or a removal.
    public var customTime: Change<Date>?
    /// Sets or releases the temporary hold (Google Cloud Storage only); nil leaves it unchanged.
    public var temporaryHold: Change<Bool>?
    /// Sets or releases the event-based hold (Google Cloud Storage only); nil leaves it unchanged.
    public var eventBasedHold: Change<Bool>?
    /// The object's retention (Google Cloud Storage only); nil leaves it unchanged. Shortening
    /// or removing an unlocked retention also needs ``overrideUnlockedRetention``.
    public var retention: Change<StorageMetadata.Retention>?
    /// Whether the update may shorten or remove an unlocked ``StorageMetadata/retention``
    /// (the JSON API's `overrideUnlockedRetention`); without it the server refuses to. False
    /// by default, so that only an update written to do so can make an object deletable sooner.
    public var overrideUnlockedRetention = false

    /// Creates an update that changes nothing; set the fields to change.
    ///
    /// ```swift
    /// var update = StorageMetadataUpdate()
    /// update.contentType = .set("text/plain; charset=utf-8")
    /// update.temporaryHold = .set(false)  // release the hold
    /// ```
    public init() {}

    /// An update that sets every field `metadata` gives a value: its content
    /// type and other headers when not nil, each of its custom keys, and its custom time,
    /// holds and retention when not nil. It removes nothing (use ``Change/remove`` for that),
    /// and leaves out ``StorageMetadata/storageClass``, which only a rewrite changes.
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
        customTime = metadata.customTime.map(Change.set)
        temporaryHold = metadata.temporaryHold.map(Change.set)
        eventBasedHold = metadata.eventBasedHold.map(Change.set)
        retention = metadata.retention.map(Change.set)
    }

    /// Whether the update names no field at all.
    package var isEmpty: Bool { patchFields.isEmpty }

    /// The fields that only Google Cloud Storage has which the update names, by their wire names.
    package var gcsOnlyFieldsNamed: [String] {
        [
            ("customTime", customTime != nil), ("temporaryHold", temporaryHold != nil),
            ("eventBasedHold", eventBasedHold != nil), ("retention", retention != nil || overrideUnlockedRetention),
        ].compactMap { $0.1 ? $0.0 : nil }
    }

    /// Refuses fields the endpoint's service does not have, before any request goes out.
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` naming them, on a Firebase endpoint.
    package func validate(for endpoint: StorageEndpoint) throws(StorageError) {
        try StorageMetadata.refuse(gcsOnlyFieldsNamed, on: endpoint)
    }

    /// The JSON body of a PATCH request: named fields with their values, or
    /// `null` for removals; custom keys inside `metadata`. Keys are sorted.
    package func patchJSON() -> JSONText.Value { .object(patchFields) }

    private var patchFields: [(String, JSONText.Value)] {
        var fields: [(String, JSONText.Value)] = []
        let strings: [(String, Change<String>?)] = [
            ("contentType", contentType),
            ("cacheControl", cacheControl),
            ("contentDisposition", contentDisposition),
            ("contentEncoding", contentEncoding),
            ("contentLanguage", contentLanguage),
        ]
        for case (let key, let change?) in strings {
            fields.append((key, change.jsonValue))
        }
        if let customTime { fields.append(("customTime", customTime.jsonValue)) }
        if let temporaryHold { fields.append(("temporaryHold", temporaryHold.jsonValue)) }
        if let eventBasedHold { fields.append(("eventBasedHold", eventBasedHold.jsonValue)) }
        if let retention { fields.append(("retention", retention.jsonValue)) }
        if !customMetadata.isEmpty {
            fields.append(("metadata", .object(customMetadata.map { ($0.key, $0.value.jsonValue) })))
        }
        return fields
    }
}

extension StorageMetadataUpdate.Change: JSONFieldValue where Value: JSONFieldValue {
    /// The new value, or `null`, which removes the field.
    package var jsonValue: JSONText.Value {
        switch self {
        case .set(let value): value.jsonValue
        case .remove: .null
        }
    }
}
