import CloudStorageWire
extension StorageReference {
    /// The most sources one ``compose(from:metadata:preconditions:)`` takes, as Cloud Storage allows.
    public static let maximumComposeSources = ProtocolLimits.maximumComposeSources

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
        let names = try validatedComposeSources(sources, into: name, metadata: metadata, preconditions: preconditions)
        let read = try await Self.metadata(of: sources)
        let plan = try ComposePlan(names: names, sources: sources, read: read)
        var executor = CallExecutor(storage: storage, operation: .other)
        guard
            let request = storage.objectProtocol.compose(
                bucket: storage.bucket, name: name, sources: plan.parts, metadata: metadata,
                preconditions: preconditions)
        else { throw .internalError("The endpoint's protocol stopped offering compose.") }
        let response = try await executor.execute(
            request, idempotency: .generationConditioned(preconditions), accepting: [200], about: .object(name))
        let composed = try StorageMetadata(objectResource: response.body)
        guard let problem = plan.problem(with: composed) else { return composed }
        if let generation = composed.generation {
            // Best effort, as after an upload found wrong: the error stays whatever happens.
            let delete = storage.uploadProtocol.deleteObject(
                bucket: storage.bucket, name: name, generation: generation)
            _ = await executor.sendOnce(delete, accepting: [200, 204, 404], about: .object(name))
        }
        throw problem
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
                        // Bound first, never `(index, .success(try await …))`: Swift 6.3's optimizer
                        // returns 0 for `index` from a tuple whose later element is a `try await`
                        // inside do/catch in a task (OptimizerDefectTests), which made every
                        // release build trap here.
                        let metadata = try await reference.getMetadata()
                        return (index, .success(metadata))
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

/// What a compose sends and what its result must be, from the sources' metadata read first.
private struct ComposePlan {
    /// The sources, each pinned to the generation read.
    private(set) var parts: [ComposeSource] = []
    /// The CRC32C the result must report: the sources' combined; nil when one reported none.
    private(set) var combinedCRC32C: UInt32? = 0
    /// The result's size: the sources' summed.
    private(set) var size: Int64 = 0

    /// Pins each source to the generation in `read`, and sums and combines what the result must be.
    ///
    /// - Parameters:
    ///   - names: The sources' object names, in order.
    ///   - sources: The references given, in order (a pinned one composes noncurrent generations too).
    ///   - read: The sources' metadata, in order.
    /// - Throws: ``StorageErrorCode/protocolViolation`` when the server reported no generation for one.
    init(names: [String], sources: [StorageReference], read: [StorageMetadata]) throws(StorageError) {
        for (index, source) in read.enumerated() {
            guard let generation = source.generation else {
                throw .protocolViolation(
                    "The server did not report the generation of \(names[index]), which a compose pins.")
            }
            parts.append(
                ComposeSource(name: names[index], generation: generation, isPinned: sources[index].generation != nil))
            if let crc = source.crc32cValue, let sum = combinedCRC32C {
                combinedCRC32C = CRC32C.combine(sum, crc, secondLength: source.size)
            } else {
                combinedCRC32C = nil
            }
            size += source.size
        }
    }

    /// What is wrong with the object the server composed: a size other than the sources' summed,
    /// or a CRC32C other than theirs combined; nil when nothing is (or nothing can be compared).
    func problem(with composed: StorageMetadata) -> StorageError? {
        if composed.size != size {
            return .protocolViolation(
                "The server says the composed object has \(composed.size) bytes; its sources have \(size).")
        }
        if let combinedCRC32C, let reported = composed.crc32cValue, reported != combinedCRC32C {
            return StorageError(
                .nonMatchingChecksum,
                "The server's CRC32C of the composed object (\(CRC32CEncoding.base64(reported))) differs from "
                    + "the combination of its sources' (\(CRC32CEncoding.base64(combinedCRC32C))).")
        }
        return nil
    }
}
