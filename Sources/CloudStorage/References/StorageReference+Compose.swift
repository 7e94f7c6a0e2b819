import CloudStorageWire
extension StorageReference {
    /// The most sources one ``compose(from:metadata:preconditions:)`` takes, as Cloud Storage allows.
    public static let maximumComposeSources = ProtocolLimits.maximumComposeSources

    /// Writes to this reference's object the bytes of `sources`, one after the other, on the
    /// server (the JSON API's `compose`).
    ///
    /// The sources are objects of this reference's bucket on the same endpoint; one may appear
    /// more than once, and this reference may be one of them (to append to an object). A source
    /// pinned to a generation (``atGeneration(_:)``) contributes that generation, live or
    /// noncurrent; any other, the live object when the server composes. The compose is one
    /// request, as in Google's libraries: Cloud Storage combines the sources' CRC32Cs into the new
    /// object's, which the answer reports (``StorageMetadata/crc32c``); check the object's size or
    /// checksum against what you expect where that matters, and pin the sources to the generations
    /// you read to compose exactly those bytes.
    ///
    /// A compose is not idempotent: it is retried only under `preconditions.ifGenerationMatch`
    /// (such as ``StoragePreconditions/doesNotExist``), as ``StorageConfiguration/Retry/policy``
    /// allows by default.
    ///
    /// ```swift
    /// let parts = (0..<3).map { storage.reference(withPath: "upload/part-\($0)") }
    /// var metadata = StorageMetadata()
    /// metadata.contentType = "video/mp4"
    /// let whole = try await storage.reference(withPath: "videos/full.mp4")
    ///     .compose(from: parts, metadata: metadata, preconditions: .doesNotExist)
    /// print(whole.size, whole.componentCount ?? 0)
    /// ```
    ///
    /// - Parameters:
    ///   - sources: 1 to ``maximumComposeSources`` references, in the order their bytes go.
    ///   - metadata: The new object's metadata (its content type is not taken from the sources).
    ///   - preconditions: Conditions on this reference's object: `ifGenerationMatch` and
    ///     `ifMetagenerationMatch`, the only ones a compose takes.
    /// - Returns: The new object's metadata.
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound`` when a source (or a
    ///   pinned source's generation) does not exist; ``StorageErrorCode/preconditionFailed`` when
    ///   a condition does not hold (nothing is written); ``StorageErrorCode/protocolViolation``
    ///   when the answer is no object resource; ``StorageErrorCode/invalidArgument`` for no sources or more than
    ///   ``maximumComposeSources``, a source in another bucket or on another endpoint, a root
    ///   reference or one pinned to a generation as the destination, `ifGenerationNotMatch` or
    ///   `ifMetagenerationNotMatch`, or a Firebase
    ///   endpoint, which has no compose; ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    public func compose(
        from sources: [StorageReference],
        metadata: StorageMetadata = StorageMetadata(),
        preconditions: StoragePreconditions = .none
    ) async throws(StorageError) -> StorageMetadata {
        let name = try validatedWriteTarget("A compose")
        let names = try validatedComposeSources(sources, into: name, metadata: metadata, preconditions: preconditions)
        let parts = zip(names, sources).map { ComposeSource(name: $0, generation: $1.generation) }
        var executor = CallExecutor(storage: storage, operation: .other)
        guard
            let request = storage.objectProtocol.compose(
                bucket: storage.bucket, name: name, sources: parts, metadata: metadata, preconditions: preconditions)
        else { throw .internalError("The endpoint's protocol stopped offering compose.") }
        let response = try await executor.execute(
            request, idempotency: .generationConditioned(preconditions), accepting: [200], about: .object(name))
        return try StorageMetadata(objectResource: response.body)
    }

    /// Checks a compose into the object `name` before any request: the endpoint offers compose,
    /// the sources are 1 to ``maximumComposeSources`` objects of this bucket on this endpoint, and
    /// the preconditions and metadata are ones a compose takes.
    ///
    /// - Returns: The sources' object names, in order.
    /// - Throws: ``StorageErrorCode/invalidArgument`` as ``compose(from:metadata:preconditions:)`` describes.
    private func validatedComposeSources(
        _ sources: [StorageReference], into name: String, metadata: StorageMetadata,
        preconditions: StoragePreconditions
    ) throws(StorageError) -> [String] {
        guard
            storage.objectProtocol.compose(
                bucket: storage.bucket, name: name, sources: [], metadata: metadata, preconditions: .none)
                != nil
        else {
            throw .invalidArgument(
                "Firebase Storage has no compose (the JSON API's compose); use a Google Cloud Storage endpoint.")
        }
        guard (1...Self.maximumComposeSources).contains(sources.count) else {
            throw .invalidArgument(
                "A compose takes 1 to \(Self.maximumComposeSources) sources; \(sources.count) were given.")
        }
        for source in sources where source.storage.bucket != storage.bucket {
            throw .invalidArgument(
                "\(source) is not in the bucket of \(self): a compose takes sources of its destination's bucket.")
        }
        let names = try sources.map { source throws(StorageError) in
            guard source.storage.endpoint == storage.endpoint else {
                throw .invalidArgument(
                    "\(source) is on \(source.storage.endpoint), not on \(storage.endpoint) like \(self): "
                        + "a compose takes sources on its destination's endpoint.")
            }
            return try source.validatedObject().name
        }
        guard preconditions.ifGenerationNotMatch == nil, preconditions.ifMetagenerationNotMatch == nil else {
            // Sent anyway, they would be ignored, and the compose would run unconditionally.
            throw .invalidArgument(
                "A compose takes only ifGenerationMatch and ifMetagenerationMatch, not the \"not match\" conditions.")
        }
        try preconditions.validate(for: storage.endpoint)
        try metadata.validate(for: storage.endpoint)
        return names
    }
}
