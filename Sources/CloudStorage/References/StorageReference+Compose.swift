extension StorageReference {
    /// The most sources one ``compose(from:metadata:preconditions:)`` takes, as Cloud Storage allows.
    public static let maximumComposeSources = 32

    /// Writes to this reference's object the bytes of `sources`, one after the other, on the
    /// server (the JSON API's `compose`).
    ///
    /// The sources are objects of this reference's bucket on the same endpoint; one may appear
    /// more than once, and this reference may be one of them (to append to an object). Their
    /// metadata is read first, and the compose is pinned to the generations read, so that the
    /// result's checksum can be checked: the CRC32C Cloud Storage reports for the new object
    /// must equal the combination of the sources' CRC32Cs, given their lengths, or the compose
    /// fails with ``StorageErrorCode/nonMatchingChecksum`` and the wrong object is deleted
    /// (when some source, or the result, reports no CRC32C, nothing can be compared and only the
    /// size is checked). A source replaced after it was read fails the compose with
    /// ``StorageErrorCode/preconditionFailed``; read and compose again. A source pinned to a
    /// generation (``atGeneration(_:)``) contributes that generation, live or noncurrent.
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
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound`` when a source does not
    ///   exist; ``StorageErrorCode/preconditionFailed`` when a condition does not hold or a
    ///   source changed after it was read (nothing is written);
    ///   ``StorageErrorCode/nonMatchingChecksum`` when the result's CRC32C is not the sources'
    ///   combined; ``StorageErrorCode/protocolViolation`` when its size is not theirs summed;
    ///   ``StorageErrorCode/invalidArgument`` for no sources or more than
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
        let wire = storage.objectProtocol
        guard
            wire.compose(bucket: storage.bucket, name: name, sources: [], metadata: metadata, preconditions: .none)
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

        let read = try await Self.metadata(of: sources)
        var parts: [ComposeSource] = []
        var combined: UInt32? = 0
        var size: Int64 = 0
        for (index, source) in read.enumerated() {
            guard let generation = source.generation else {
                throw .protocolViolation(
                    "The server did not report the generation of \(names[index]), which a compose pins.")
            }
            parts.append(
                ComposeSource(name: names[index], generation: generation, isPinned: sources[index].generation != nil))
            if let crc = source.crc32cValue, let sum = combined {
                combined = CRC32C.combine(sum, crc, secondLength: source.size)
            } else {
                combined = nil
            }
            size += source.size
        }
        var runner = RequestRunner(storage: storage, operation: .other)
        guard
            let request = wire.compose(
                bucket: storage.bucket, name: name, sources: parts, metadata: metadata, preconditions: preconditions)
        else { throw .internalError("The endpoint's protocol stopped offering compose.") }
        let response = try await runner.sendRetrying(request, accepting: [200], about: .object(name))
        let composed = try StorageMetadata(objectResource: response.body)
        let problem: StorageError?
        if composed.size != size {
            problem = .protocolViolation(
                "The server says the composed object has \(composed.size) bytes; its sources have \(size).")
        } else if let combined, let reported = composed.crc32cValue, reported != combined {
            problem = StorageError(
                .nonMatchingChecksum,
                "The server's CRC32C of the composed object (\(CRC32CEncoding.base64(reported))) differs from "
                    + "the combination of its sources' (\(CRC32CEncoding.base64(combined))).")
        } else {
            problem = nil
        }
        guard let problem else { return composed }
        if let generation = composed.generation {
            // Best effort, as after an upload found wrong: the error stays whatever happens.
            let delete = storage.uploadProtocol.deleteObject(
                bucket: storage.bucket, name: name, generation: generation)
            _ = try? await runner.send(delete, accepting: [200, 204, 404], about: .object(name))
        }
        throw problem
    }

    /// The metadata of each reference, in order, read a few at a time.
    ///
    /// - Throws: The first failure; the reads still running are cancelled.
    private static func metadata(of references: [StorageReference]) async throws(StorageError) -> [StorageMetadata] {
        let concurrency = 8
        return try await withTaskGroup(
            of: (Int, Result<StorageMetadata, StorageError>).self,
            returning: Result<[StorageMetadata], StorageError>.self
        ) { group in
            var results = [StorageMetadata?](repeating: nil, count: references.count)
            var next = 0
            func start() {
                guard next < references.count else { return }
                let index = next
                let reference = references[index]
                next += 1
                group.addTask {
                    do throws(StorageError) {
                        return (index, .success(try await reference.getMetadata()))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            for _ in 0..<min(concurrency, references.count) { start() }
            while let (index, result) = await group.next() {
                switch result {
                case .success(let metadata):
                    results[index] = metadata
                    start()
                case .failure(let error):
                    group.cancelAll()
                    return .failure(error)
                }
            }
            return .success(results.map { $0! })
        }.get()
    }
}
