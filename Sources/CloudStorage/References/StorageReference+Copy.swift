import CloudStorageWire
import HTTPClient

extension StorageReference {
    /// How many rewrite calls in a row may answer without copying a byte more than before until
    /// ``copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)`` gives up on the server.
    ///
    /// Cloud Storage makes progress on every call of a rewrite; a server that keeps answering
    /// "not done" with nothing more copied (typically with the same token) would keep a copy
    /// going for ever.
    static let maxRewriteCallsWithoutProgress = 10

    /// The least a rewrite call must copy beyond every call before it (unless it copies the rest)
    /// to count as progress: Cloud Storage rewrites in steps of whole mebibytes
    /// (`maxBytesRewrittenPerCall` is a multiple of 1 MiB), so a server that advances a few bytes
    /// a call is stalling the copy, not making it.
    static let minimumRewriteProgress = ProtocolLimits.rewriteGranularity

    /// Copies this reference's object to `destination` on the server, without its bytes passing
    /// through this process.
    ///
    /// The copy is a rewrite (`rewriteTo` in the JSON API): the server may need several calls
    /// for a large object, or one that changes location or storage class, and the copy calls
    /// again with the token each answer gives until it is done, reporting the bytes copied so far
    /// to `progress` after each call. The destination may be in another bucket of the same
    /// endpoint (``Storage/bucket(_:)``); the request carries this reference's credentials.
    /// Copying an object onto itself with a new ``StorageMetadata/storageClass`` changes its class.
    ///
    /// Cancelling the calling Swift task stops the copy between or during calls; the destination
    /// is written only when the last call completes, so a cancelled copy leaves it as it was.
    ///
    /// ```swift
    /// let archive = storage.bucket("archive")
    /// var metadata = StorageMetadata()
    /// metadata.storageClass = "COLDLINE"
    /// metadata.contentType = "application/pdf"
    /// let copied = try await storage.reference(withPath: "2024/report.pdf").copy(
    ///     to: archive.reference(withPath: "2024/report.pdf"),
    ///     metadata: metadata,
    ///     preconditions: .doesNotExist  // never replace an archived copy
    /// ) { progress in
    ///     print("\(progress.completedUnitCount) of \(progress.totalUnitCount) bytes")
    /// }
    /// print(copied.generation ?? 0)
    /// ```
    ///
    /// - Parameters:
    ///   - destination: Where the copy goes; a reference on the same endpoint, not pinned to a
    ///     generation (a copy writes a new one). When this reference is pinned
    ///     (``atGeneration(_:)``), the copy is of that generation (the JSON API's
    ///     `sourceGeneration`), live or noncurrent: copying a noncurrent generation onto its own
    ///     name restores it.
    ///   - metadata: The copy's metadata, replacing the source's (as an upload's would: fields
    ///     left nil are not set); nil, or metadata with no writable field set, keeps the source's.
    ///   - preconditions: Conditions on the destination, such as ``StoragePreconditions/doesNotExist``.
    ///   - sourcePreconditions: Conditions on the source (the JSON API's `ifSourceGenerationMatch`
    ///     and the like): pass the generation read before to copy exactly that version.
    ///   - rewriteToken: The token of an unfinished copy to continue (a step's
    ///     ``StorageRewriteStep/rewriteToken`` from
    ///     ``rewrite(to:metadata:preconditions:sourcePreconditions:rewriteToken:maxBytesRewrittenPerCall:)``,
    ///     perhaps in another process), sent with the same destination, metadata and conditions;
    ///     nil starts the copy.
    ///   - progress: Called after each call of the rewrite with the bytes copied so far and the
    ///     object's size.
    /// - Returns: The copy's metadata.
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound`` when the source (or the
    ///   destination bucket, or the source's pinned generation) does not exist;
    ///   ``StorageErrorCode/preconditionFailed`` when a condition does not hold (nothing is
    ///   written); ``StorageErrorCode/invalidArgument`` on a root reference, a destination on
    ///   another endpoint or pinned to a generation, or a Firebase endpoint, which has no
    ///   server-side copy; ``StorageErrorCode/protocolViolation`` when the server's answers break
    ///   the protocol or it answers 10 calls in a row (`maxRewriteCallsWithoutProgress`) without
    ///   copying at least a mebibyte more (or the rest), or when no call did so within
    ///   ``StorageConfiguration/Retry/maxOperationTime``; ``StorageErrorCode/cancelled`` when the
    ///   calling task is cancelled. Failed calls are retried only as
    ///   ``StorageConfiguration/Retry/policy`` allows: by default only under
    ///   `preconditions.ifGenerationMatch`, which makes a rewrite idempotent.
    public func copy(
        to destination: StorageReference,
        metadata: StorageMetadata? = nil,
        preconditions: StoragePreconditions = .none,
        sourcePreconditions: StoragePreconditions = .none,
        rewriteToken: String? = nil,
        progress: (@Sendable (TaskProgress) -> Void)? = nil
    ) async throws(StorageError) -> StorageMetadata {
        let copy = try serverSideCopy(
            to: destination, metadata: metadata, preconditions: preconditions, sourcePreconditions: sourcePreconditions,
            writing: "A copy")
        return try await rewrite(copy, from: rewriteToken, progress: progress)
    }

    /// Makes one call of a server-side copy of this reference's object to `destination`, the
    /// JSON API's `rewriteTo`, and returns how far the copy got: the step for callers that keep
    /// a long copy's state themselves, as python-storage's `rewrite(token=)` and Go's
    /// `Copier.RewriteToken` allow.
    ///
    /// A copy of a large object, or one that changes its location or storage class, may take
    /// the server several calls. Each step that is not done carries a
    /// ``StorageRewriteStep/rewriteToken``: pass it to the next call, with the same destination,
    /// metadata and conditions, from this process or another one (store it with the job), until
    /// a step is ``StorageRewriteStep/isDone``. ``copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)``
    /// continues from such a token to the end.
    ///
    /// ```swift
    /// let source = storage.reference(withPath: "exports/2024.tar")
    /// let destination = storage.bucket("archive").reference(withPath: "2024.tar")
    /// var step = try await source.rewrite(to: destination)
    /// while let token = step.rewriteToken {
    ///     print("\(step.bytesRewritten) of \(step.objectSize) bytes; continue with \(token)")
    ///     step = try await source.rewrite(to: destination, rewriteToken: token)
    /// }
    /// print(step.metadata?.generation ?? 0)
    /// ```
    ///
    /// - Parameters:
    ///   - destination: As ``copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)`` takes it.
    ///   - metadata: The copy's metadata, replacing the source's; nil keeps the source's. The
    ///     same in every call of one copy.
    ///   - preconditions: Conditions on the destination.
    ///   - sourcePreconditions: Conditions on the source.
    ///   - rewriteToken: The token of the step before; nil to start the copy.
    ///   - maxBytesRewrittenPerCall: The most bytes the server copies in this call, a multiple of
    ///     1 MiB; nil lets it choose (Cloud Storage copies within one location in one call).
    /// - Returns: How far the copy got, and its token or, when done, the copy's metadata.
    /// - Throws: ``StorageError`` as ``copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)``
    ///   describes; a token from another copy, or one the server no longer takes, is refused by the
    ///   server (``StorageErrorCode/invalidArgument`` for 400, ``StorageErrorCode/preconditionFailed``
    ///   when the source changed since the copy started).
    public func rewrite(
        to destination: StorageReference,
        metadata: StorageMetadata? = nil,
        preconditions: StoragePreconditions = .none,
        sourcePreconditions: StoragePreconditions = .none,
        rewriteToken: String? = nil,
        maxBytesRewrittenPerCall: Int64? = nil
    ) async throws(StorageError) -> StorageRewriteStep {
        var copy = try serverSideCopy(
            to: destination, metadata: metadata, preconditions: preconditions, sourcePreconditions: sourcePreconditions,
            writing: "A rewrite")
        copy.maxBytesRewrittenPerCall = maxBytesRewrittenPerCall
        try validated(copy)
        var executor = CallExecutor(storage: storage, operation: .other)
        let status = try await rewriteCall(copy, rewriteToken: rewriteToken, executor: &executor)
        return switch status.next {
        case .done(let metadata):
            StorageRewriteStep(
                bytesRewritten: status.totalBytesRewritten, objectSize: status.objectSize, rewriteToken: nil,
                metadata: metadata)
        case .continueWith(let token):
            StorageRewriteStep(
                bytesRewritten: status.totalBytesRewritten, objectSize: status.objectSize, rewriteToken: token,
                metadata: nil)
        }
    }

    /// The server-side copy of this reference's object to `destination` with the references'
    /// options (billing project, keys, ACL).
    ///
    /// - Parameter operation: What the copy is for, in messages ("A copy").
    private func serverSideCopy(
        to destination: StorageReference, metadata: StorageMetadata?, preconditions: StoragePreconditions,
        sourcePreconditions: StoragePreconditions, writing operation: String
    ) throws(StorageError) -> ServerSideCopy {
        let (sourceName, destinationName) = try validatedPair(with: destination, writing: operation)
        return ServerSideCopy(
            sourceBucket: storage.bucket, sourceName: sourceName, sourceGeneration: generation,
            destinationBucket: destination.storage.bucket, destinationName: destinationName,
            metadata: metadata, preconditions: preconditions, sourcePreconditions: sourcePreconditions,
            userProject: storage.options.userProject ?? destination.storage.options.userProject,
            sourceEncryptionKey: storage.options.encryptionKey,
            destinationEncryptionKey: destination.storage.options.encryptionKey,
            destinationKMSKeyName: destination.storage.options.kmsKeyName,
            destinationPredefinedACL: destination.storage.options.predefinedACL)
    }

    /// Checks a copy before any request: the endpoint has server-side copies, and its conditions
    /// and metadata are valid there.
    private func validated(_ copy: ServerSideCopy) throws(StorageError) {
        guard storage.objectProtocol.rewrite(copy, rewriteToken: nil) != nil else {
            throw .invalidArgument(
                "Firebase Storage has no server-side copy (the JSON API's rewriteTo); "
                    + "use a Google Cloud Storage endpoint, or download and upload again.")
        }
        try copy.preconditions.validate(for: storage.endpoint)
        try copy.sourcePreconditions.validate(for: storage.endpoint)
        try copy.metadata?.validate(for: storage.endpoint)
        if let limit = copy.maxBytesRewrittenPerCall, !ProtocolLimits.isRewriteLimit(limit) {
            throw .invalidArgument(
                "maxBytesRewrittenPerCall must be a positive multiple of 1 MiB "
                    + "(\(ProtocolLimits.rewriteGranularity) bytes); \(limit) is not.")
        }
    }

    /// One call of a rewrite, retried as its conditions allow.
    private func rewriteCall(
        _ copy: ServerSideCopy, rewriteToken: String?, executor: inout CallExecutor
    ) async throws(StorageError) -> RewriteStatus {
        guard let request = storage.objectProtocol.rewrite(copy, rewriteToken: rewriteToken) else {
            throw .internalError("The endpoint's protocol stopped offering server-side copies.")
        }
        let response = try await executor.execute(
            request, idempotency: .generationConditioned(copy.preconditions), accepting: [200],
            about: .object(copy.sourceName))
        return try RewriteStatus(json: response.body)
    }

    /// Runs a rewrite to its end: one call (continuing `rewriteToken` when given), then one per
    /// token, within the operation's retry time, which starts again whenever a call copies at
    /// least ``minimumRewriteProgress`` more than any before (or the rest).
    func rewrite(
        _ copy: ServerSideCopy, from rewriteToken: String? = nil, progress: (@Sendable (TaskProgress) -> Void)? = nil
    ) async throws(StorageError) -> StorageMetadata {
        try validated(copy)
        var executor = CallExecutor(storage: storage, operation: .other)
        var token = rewriteToken
        var mostCopied: Int64 = -1
        var callsWithoutProgress = 0
        var size: Int64?
        while true {
            let status = try await rewriteCall(copy, rewriteToken: token, executor: &executor)
            if let size, size != status.objectSize {
                throw .protocolViolation(
                    "The server's rewrite changed the object's size from \(size) to \(status.objectSize) bytes midway.")
            }
            size = status.objectSize
            progress?(TaskProgress(completedUnitCount: status.totalBytesRewritten, totalUnitCount: status.objectSize))
            switch status.next {
            case .done(let metadata):
                return metadata
            case .continueWith(let next):
                let step = min(Self.minimumRewriteProgress, status.objectSize - max(mostCopied, 0))
                if status.totalBytesRewritten >= max(mostCopied, 0) + max(step, 1) {
                    mostCopied = status.totalBytesRewritten
                    callsWithoutProgress = 0
                    executor.madeProgress()
                } else {
                    callsWithoutProgress += 1
                    if callsWithoutProgress >= Self.maxRewriteCallsWithoutProgress || executor.retryTimeHasRunOut {
                        throw .protocolViolation(
                            "The server answered \(callsWithoutProgress) rewrite calls in a row without copying "
                                + "a mebibyte more than \(max(mostCopied, 0)) of \(status.objectSize) bytes; "
                                + "the copy was abandoned.")
                    }
                }
                token = next
            }
        }
    }

    /// Moves this reference's object to `destination`: afterwards the object is there and no
    /// longer here.
    ///
    /// Within one bucket of a Google Cloud Storage endpoint the move is the JSON API's atomic
    /// `moveTo`: the object is renamed in one step, and either both the destination appears and
    /// the source goes, or nothing changes. A server without that method (it answers the
    /// request with 400, 404, 405 or 501, as fake-gcs-server does), and every move
    /// between buckets, get a copy then a delete instead, which is **not atomic**: the source's
    /// generation is read first (unless `sourcePreconditions` pins it) and both steps are pinned
    /// to it, so a source replaced in between is never deleted, but for a moment both objects
    /// exist, and a failure between the steps leaves both.
    ///
    /// A reference pinned to a generation (``atGeneration(_:)``) moves that generation, live or
    /// noncurrent, always by copy then delete (`moveTo` moves only the live object): the
    /// destination gets its bytes, and only that generation is deleted, so moving a noncurrent
    /// generation leaves the live object as it is.
    ///
    /// ```swift
    /// let moved = try await storage.reference(withPath: "inbox/scan.pdf")
    ///     .move(to: storage.reference(withPath: "done/scan.pdf"), preconditions: .doesNotExist)
    /// print(moved.path ?? "")  // "done/scan.pdf"
    /// ```
    ///
    /// - Parameters:
    ///   - destination: Where the object goes; a reference on the same endpoint, with another name,
    ///     not pinned to a generation.
    ///   - preconditions: Conditions on the destination, such as ``StoragePreconditions/doesNotExist``.
    ///   - sourcePreconditions: Conditions on the source (`ifSourceGenerationMatch` and the like).
    /// - Returns: The destination's metadata.
    /// - Throws: ``StorageError``: ``StorageErrorCode/objectNotFound`` when the source does not
    ///   exist; ``StorageErrorCode/preconditionFailed`` when a condition does not hold (nothing
    ///   moved), or when a copy-then-delete move finds the source replaced after the copy (the
    ///   copy stays, and so does the newer source); ``StorageErrorCode/invalidArgument`` on a
    ///   root reference, a destination that is the source or is on another endpoint, or a
    ///   Firebase endpoint, which cannot move objects; the errors of
    ///   ``copy(to:metadata:preconditions:sourcePreconditions:rewriteToken:progress:)`` and ``delete(preconditions:)``.
    public func move(
        to destination: StorageReference,
        preconditions: StoragePreconditions = .none,
        sourcePreconditions: StoragePreconditions = .none
    ) async throws(StorageError) -> StorageMetadata {
        let (sourceName, destinationName) = try validatedPair(with: destination, writing: "A move")
        guard destination.storage.bucket != storage.bucket || destination.path != path else {
            throw .invalidArgument("An object cannot be moved onto itself (\(self)).")
        }
        let wire = storage.objectProtocol
        let copy = ServerSideCopy(
            sourceBucket: storage.bucket, sourceName: sourceName, sourceGeneration: generation,
            destinationBucket: destination.storage.bucket, destinationName: destinationName,
            preconditions: preconditions, sourcePreconditions: sourcePreconditions,
            userProject: storage.options.userProject ?? destination.storage.options.userProject,
            sourceEncryptionKey: storage.options.encryptionKey,
            destinationEncryptionKey: destination.storage.options.encryptionKey,
            destinationKMSKeyName: destination.storage.options.kmsKeyName,
            destinationPredefinedACL: destination.storage.options.predefinedACL)
        // Every protocol with a move has a copy, so one that cannot build a copy cannot move at all.
        guard wire.rewrite(copy, rewriteToken: nil) != nil else {
            throw .invalidArgument(
                "Firebase Storage cannot move objects (it has neither the JSON API's moveTo nor rewriteTo); "
                    + "use a Google Cloud Storage endpoint.")
        }
        try preconditions.validate(for: storage.endpoint)
        try sourcePreconditions.validate(for: storage.endpoint)
        // A move that names keys or a new ACL goes by rewrite, whose requests carry them.
        if copy.sourceBucket == copy.destinationBucket, generation == nil, copy.sourceEncryptionKey == nil,
            copy.destinationEncryptionKey == nil, copy.destinationKMSKeyName == nil,
            copy.destinationPredefinedACL == nil,
            let request = wire.move(
                bucket: storage.bucket, from: sourceName, to: destinationName, preconditions: preconditions,
                sourcePreconditions: sourcePreconditions)
        {
            if let moved = try await atomicMove(request, sourceName: sourceName, preconditions: preconditions) {
                return moved
            }
        }
        return try await copyThenDelete(copy, to: destination)
    }

    /// Sends a `moveTo`, retrying as usual; nil when the server answers that it has no such method.
    ///
    /// Servers without the route answer 405 or 501 if they know the path is not theirs, and 404 or
    /// 400 if they take it for something else (fake-gcs-server reads it as a metadata update of an
    /// object named `{source}/moveTo/o/{destination}` and refuses the empty body with 400). Cloud
    /// Storage answers 404 when the source is missing and 400 for a request it will not move
    /// (such as in a bucket that does not allow it); the copy-then-delete that follows reports a
    /// missing source the same way, and refuses what copies cannot do either. 501 is not retried.
    private func atomicMove(
        _ request: HTTPRequest, sourceName: String, preconditions: StoragePreconditions
    ) async throws(StorageError) -> StorageMetadata? {
        var executor = CallExecutor(storage: storage, operation: .other)
        let response: HTTPResponse
        do {
            response = try await executor.execute(
                request, idempotency: .generationConditioned(preconditions), accepting: [200, 501],
                about: .object(sourceName))
        } catch let error where [400, 404, 405].contains(error.httpStatus) {
            return nil
        }
        guard response.status == 200 else { return nil }
        return try StorageMetadata(objectResource: response.body)
    }

    /// The move of a server without `moveTo`, or between buckets: a copy and a delete, both pinned
    /// to one generation of the source.
    private func copyThenDelete(
        _ copy: ServerSideCopy, to destination: StorageReference
    ) async throws(StorageError) -> StorageMetadata {
        var copy = copy
        // A pinned source names its generation in both steps already.
        if copy.sourceGeneration == nil, copy.sourcePreconditions.ifGenerationMatch == nil {
            let current = try await getMetadata()
            if !copy.sourcePreconditions.holds(for: current) {
                throw StorageError(
                    .preconditionFailed,
                    "A source precondition of the move did not hold: the object is not in the state it required.")
            }
            guard let generation = current.generation else {
                throw .protocolViolation(
                    "The server did not report the generation of \(copy.sourceName), which a move pins before copying.")
            }
            copy.sourcePreconditions.ifGenerationMatch = generation
        }
        let moved = try await rewrite(copy)
        do {
            // On a pinned reference, the delete is of that generation only.
            try await delete(
                preconditions: StoragePreconditions(
                    ifGenerationMatch: generation == nil ? copy.sourcePreconditions.ifGenerationMatch : nil))
        } catch let error where error.code == .preconditionFailed {
            throw StorageError(
                .preconditionFailed,
                "\(self) was copied to \(destination), but was replaced before it could be deleted; "
                    + "both objects were kept (the copy holds the version that was moved).",
                httpStatus: error.httpStatus, serverMessage: error.serverMessage, underlyingError: error)
        } catch let error where error.code == .objectNotFound {
            // Someone else deleted the source meanwhile: it is gone, as a move leaves it.
        }
        return moved
    }

    /// The object names of this reference and `destination`, checked for a server-side operation
    /// between them that reads this reference (at its generation, if pinned) and writes `destination`.
    ///
    /// - Parameter operation: What writes `destination`, for messages ("A copy").
    /// - Throws: ``StorageErrorCode/invalidArgument`` when `destination` is on another endpoint or
    ///   pinned to a generation; what ``validatedObject()`` throws for this reference.
    func validatedPair(
        with destination: StorageReference, writing operation: String
    ) throws(StorageError) -> (String, String) {
        let sourceName = try validatedObject().name
        let destinationName = try destination.validatedWriteTarget(operation)
        guard destination.storage.endpoint == storage.endpoint else {
            throw .invalidArgument(
                "\(destination) is on \(destination.storage.endpoint), not on \(storage.endpoint) like \(self): "
                    + "server-side operations stay on one endpoint; download and upload to copy between them.")
        }
        return (sourceName, destinationName)
    }
}
