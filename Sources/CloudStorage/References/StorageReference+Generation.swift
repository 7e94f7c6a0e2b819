extension StorageReference {
    /// The same object pinned to one generation, or, with nil, the live object again.
    ///
    /// In a bucket with object versioning, replacing or deleting an object keeps the old bytes
    /// as a *noncurrent* generation. A pinned reference addresses one generation, live or
    /// noncurrent: ``getMetadata()``, ``updateMetadata(_:preconditions:)-(StorageMetadataUpdate,_)``,
    /// ``delete(preconditions:)``, every download (``getData(maxSize:preconditions:)``,
    /// ``dataStream(preconditions:)``, ``write(toFile:preconditions:)`` and their variants),
    /// ``downloadURL()``, ``signedURL(method:expiresIn:headers:queryParameters:style:signer:)``
    /// (`GET`, `HEAD` and `DELETE`), and, as a source,
    /// ``copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)``,
    /// ``move(to:preconditions:sourcePreconditions:)`` and ``compose(from:metadata:preconditions:)``
    /// act on that generation (the JSON API's `generation` and `sourceGeneration`). A generation
    /// that does not exist is ``StorageErrorCode/objectNotFound``, even when the live object
    /// exists, and deleting a noncurrent generation leaves the live object alone.
    ///
    /// Preconditions still apply, and are judged against the generation addressed:
    /// `atGeneration(g)` with `StoragePreconditions(ifMetagenerationMatch: m)` changes generation
    /// `g` only if its metageneration is `m`.
    ///
    /// Uploads write a new generation, so an upload to a pinned reference, or a copy or compose
    /// into one, fails with ``StorageErrorCode/invalidArgument``; upload to `atGeneration(nil)`
    /// with `StoragePreconditions(ifGenerationMatch: g)` to replace the object only while `g` is
    /// live. Firebase Storage's v0 protocol has no generations: there, every operation on a
    /// pinned reference fails with ``StorageErrorCode/invalidArgument`` before it sends anything.
    /// A generation of 0 or below names nothing, and fails every operation the same way.
    ///
    /// ```swift
    /// let ref = storage.reference(withPath: "config.json")
    /// let first = try await ref.putDataAsync(Data("{\"v\":1}".utf8))
    /// _ = try await ref.putDataAsync(Data("{\"v\":2}".utf8))  // first is now noncurrent
    /// let old = ref.atGeneration(first.generation)
    /// print(old)                                          // gs://my-bucket/config.json#1712345678901234
    /// let bytes = try await old.data(maxSize: 1024)       // {"v":1}
    /// _ = try await old.copy(to: ref)                     // restores it as the live object
    /// try await old.delete()                              // only that generation goes
    /// ```
    ///
    /// - Parameter generation: The generation to address, as ``StorageMetadata/generation``
    ///   reports it; nil for the live object.
    /// - Returns: A reference to the same path in the same bucket, pinned to `generation`.
    public func atGeneration(_ generation: Int64?) -> StorageReference {
        StorageReference(storage: storage, path: path, generation: generation)
    }

    /// The object name an operation sends, checked, and the generation it acts on.
    ///
    /// - Throws: What ``StoragePath/validatedObjectName()`` throws;
    ///   ``StorageErrorCode/invalidArgument`` for a generation below 1, or any generation on an
    ///   endpoint whose protocol has none (Firebase v0).
    func validatedObject() throws(StorageError) -> (name: String, generation: Int64?) {
        try path.validatedObject(generation: generation, on: storage.endpoint)
    }

    /// The object name to write, checked; a reference pinned to a generation is refused, as an
    /// operation that writes makes a new generation and can never write an old one.
    ///
    /// - Parameter operation: What writes, for the message ("An upload").
    /// - Throws: What ``StoragePath/validatedObjectName()`` throws;
    ///   ``StorageErrorCode/invalidArgument`` when the reference is pinned.
    func validatedWriteTarget(_ operation: String) throws(StorageError) -> String {
        try path.validatedWriteTarget(generation: generation, operation)
    }

}

extension Storage {
    /// A reference to the object named exactly `objectName`, pinned to one generation.
    ///
    /// The same as ``reference(objectName:)`` followed by
    /// ``StorageReference/atGeneration(_:)``.
    ///
    /// ```swift
    /// let old = storage.reference(objectName: "logs//today", generation: 1712345678901234)
    /// let bytes = try await old.data(maxSize: 1 << 20)
    /// ```
    ///
    /// - Parameters:
    ///   - objectName: The object's name, byte for byte.
    ///   - generation: The generation to address; nil for the live object.
    /// - Returns: The reference.
    public func reference(objectName: String, generation: Int64?) -> StorageReference {
        reference(objectName: objectName).atGeneration(generation)
    }
}
