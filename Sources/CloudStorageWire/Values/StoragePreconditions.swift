/// Conditions on the object's generation and metageneration that the server
/// checks before it carries out a request: the request happens only if every
/// condition set holds, so that a writer never replaces, changes or deletes a
/// version of an object it has not seen.
///
/// Every property left nil sets no condition. A generation changes whenever
/// the object's data is replaced (an upload); a metageneration whenever its
/// metadata changes (and starts at 1 for each generation). Read them from
/// ``StorageMetadata/generation`` and ``StorageMetadata/metageneration``.
///
/// A condition that does not hold ends the operation with
/// ``StorageErrorCode/preconditionFailed``, which is never retried: asking
/// again cannot change the answer. Uploads, metadata updates, deletes and
/// downloads take preconditions on Google Cloud Storage endpoints (the JSON
/// API's `ifGenerationMatch`, `ifGenerationNotMatch`, `ifMetagenerationMatch`
/// and `ifMetagenerationNotMatch`). Firebase Storage's v0 protocol has no such
/// conditions: there, an operation given any precondition fails with
/// ``StorageErrorCode/invalidArgument`` before it sends anything, rather than
/// run unconditionally.
///
/// ```swift
/// // Create the object only if nothing is stored under its name yet.
/// let created = try await ref.putDataAsync(data, preconditions: .doesNotExist)
///
/// // Replace it only if nobody replaced it since.
/// let replaced = try await ref.putDataAsync(
///     newer, preconditions: StoragePreconditions(ifGenerationMatch: created.generation))
/// ```
public struct StoragePreconditions: Sendable, Hashable {
    /// The request proceeds only if the object's current generation is this
    /// one; `0` means only if no object exists (create, never replace).
    public var ifGenerationMatch: Int64?
    /// The request proceeds only if an object exists and its generation is
    /// not this one; `0` means only if an object exists.
    public var ifGenerationNotMatch: Int64?
    /// The request proceeds only if an object exists and its metageneration is this one.
    public var ifMetagenerationMatch: Int64?
    /// The request proceeds only if an object exists and its metageneration is not this one.
    public var ifMetagenerationNotMatch: Int64?

    /// Creates preconditions; each one left nil sets no condition.
    ///
    /// ```swift
    /// let current = try await ref.getMetadata()
    /// var update = StorageMetadataUpdate()
    /// update.cacheControl = .set("no-store")
    /// _ = try await ref.updateMetadata(
    ///     update, preconditions: StoragePreconditions(ifMetagenerationMatch: current.metageneration))
    /// ```
    ///
    /// - Parameters:
    ///   - ifGenerationMatch: The generation the object must have; `0` for "no object".
    ///   - ifGenerationNotMatch: A generation the object must not have; `0` for "any object".
    ///   - ifMetagenerationMatch: The metageneration the object must have.
    ///   - ifMetagenerationNotMatch: A metageneration the object must not have.
    public init(
        ifGenerationMatch: Int64? = nil,
        ifGenerationNotMatch: Int64? = nil,
        ifMetagenerationMatch: Int64? = nil,
        ifMetagenerationNotMatch: Int64? = nil
    ) {
        self.ifGenerationMatch = ifGenerationMatch
        self.ifGenerationNotMatch = ifGenerationNotMatch
        self.ifMetagenerationMatch = ifMetagenerationMatch
        self.ifMetagenerationNotMatch = ifMetagenerationNotMatch
    }

    /// No conditions: the request proceeds whatever is stored.
    public static let none = StoragePreconditions()

    /// Only if no object exists under the name (`ifGenerationMatch: 0`): an
    /// upload creates the object and never replaces one.
    ///
    /// ```swift
    /// do {
    ///     _ = try await ref.putDataAsync(data, preconditions: .doesNotExist)
    /// } catch where error.code == .preconditionFailed {
    ///     print("someone else created it first")
    /// }
    /// ```
    public static let doesNotExist = StoragePreconditions(ifGenerationMatch: 0)

    /// Whether no condition is set.
    public var isEmpty: Bool {
        ifGenerationMatch == nil && ifGenerationNotMatch == nil && ifMetagenerationMatch == nil
            && ifMetagenerationNotMatch == nil
    }

    /// The JSON API query parameters, in a fixed order.
    package var queryItems: [(String, String)] { queryItems(prefix: "if") }

    /// The JSON API query parameters that put these conditions on the source of a copy or a
    /// move (`ifSourceGenerationMatch` and the like), in a fixed order.
    package var sourceQueryItems: [(String, String)] { queryItems(prefix: "ifSource") }

    private func queryItems(prefix: String) -> [(String, String)] {
        [
            ("GenerationMatch", ifGenerationMatch), ("GenerationNotMatch", ifGenerationNotMatch),
            ("MetagenerationMatch", ifMetagenerationMatch), ("MetagenerationNotMatch", ifMetagenerationNotMatch),
        ].compactMap { name, value in value.map { (prefix + name, String($0)) } }
    }

    /// Whether the conditions hold for an object with this metadata, judged
    /// as the server would (for a read that changes nothing).
    package func holds(for metadata: StorageMetadata) -> Bool {
        let generation = metadata.generation
        let metageneration = metadata.metageneration
        if let ifGenerationMatch, ifGenerationMatch != generation { return false }
        if let ifGenerationNotMatch, ifGenerationNotMatch == generation { return false }
        if let ifMetagenerationMatch, ifMetagenerationMatch != metageneration { return false }
        if let ifMetagenerationNotMatch, ifMetagenerationNotMatch == metageneration { return false }
        return true
    }

    /// Refuses conditions the endpoint cannot check or no object can meet,
    /// before any request goes out.
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` for a negative number, or
    ///   any condition on an endpoint whose protocol has none (Firebase v0).
    package func validate(for endpoint: StorageEndpoint) throws(StorageError) {
        if isEmpty { return }
        for (name, value) in [
            ("ifGenerationMatch", ifGenerationMatch), ("ifGenerationNotMatch", ifGenerationNotMatch),
            ("ifMetagenerationMatch", ifMetagenerationMatch), ("ifMetagenerationNotMatch", ifMetagenerationNotMatch),
        ] {
            if let value, value < 0 { throw .invalidArgument("\(name) must not be negative; it is \(value).") }
        }
        guard endpoint.wireProtocol == .gcsJSON else {
            // Sending the request without its conditions would do exactly what they were set to prevent.
            throw .invalidArgument(
                "Firebase Storage endpoints take no preconditions (ifGenerationMatch and the like); use a Google Cloud Storage endpoint."
            )
        }
    }
}
