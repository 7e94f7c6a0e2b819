import Foundation

/// Carries one upload to the server: opens the source, then sends it in one
/// request (small objects) or through a resumable session, retrying and
/// resuming from the server's committed offset, and verifies what was stored.
///
/// ``run(checkpoint:stop:progress:)`` may be called again after it stopped
/// for a pause: it continues from the ``UploadCheckpoint`` — the same
/// session, from the offset the server reports — rather than starting over.
/// The engine owns the session's end: it deletes the session when the upload
/// fails or is cancelled, and keeps it when the upload is paused — or when a
/// file upload failed only because its retries ran out, so that another process
/// can continue it (``sessionLeftOpen(after:stop:_:)`` decides).
///
/// Retries: failures that may pass (408, 429, 5xx, lost connections,
/// time-outs, answers that are not valid HTTP) are retried with back-off until
/// ``StorageConfiguration/maxUploadRetryTime`` after the first one; only the
/// committed offset reaching a new high in this run restarts that deadline. A
/// success answer whose body cannot be read counts as such a failure (the
/// object may be stored): a session is queried, a one-request upload's object
/// is read back and kept if its size and CRC32C match, and nothing is deleted.
/// Committed offsets that shrink within a session or pass the bytes sent, and
/// any other answer that breaks the protocol, end the upload at once with
/// ``StorageErrorCode/protocolViolation``.
struct UploadEngine: Sendable {
    let storage: Storage
    let path: StoragePath
    /// The generation of the reference uploaded to: an upload writes a new generation, so one to a
    /// reference pinned to a generation is refused before it starts.
    var generation: Int64? = nil
    let source: UploadSource
    let metadata: StorageMetadata
    /// Conditions on the object the upload may replace, sent with the request
    /// that starts it (a session checks them again when it finalizes).
    var preconditions = StoragePreconditions.none
    /// A session another process opened, to continue instead of opening one: the source is
    /// checked against it before any byte goes out (``adopt(_:_:_:)``).
    var resuming: StorageUploadSession?

    /// The endpoint's protocol: the engine is the same for all of them.
    private var wire: any UploadWireProtocol {
        storage.endpoint.uploadProtocol
    }

    /// How many times a session the server forgot is replaced by a new one
    /// before the upload fails.
    private static let maxSessionRestarts = 3

    /// The bytes one request of a streamed upload carries at most (unless
    /// ``StorageConfiguration/chunkSize`` is smaller), and so about the most a stream's
    /// buffer holds: a multiple of 256 KiB.
    static let streamBufferSize: Int64 = 8 * 1024 * 1024

    /// Uploads, or continues uploading, and returns the stored object's metadata.
    ///
    /// - Parameters:
    ///   - checkpoint: What earlier runs of this upload achieved; updated as this one goes.
    ///   - stop: Why the run is asked to stop (its task is also cancelled): a
    ///     pause keeps the session for the next run, a cancel deletes it. A
    ///     run that starts with a cancel only deletes what earlier runs left.
    ///     A failure deletes it too, unless ``sessionLeftOpen(after:stop:_:)``
    ///     keeps it.
    ///   - progress: Called with the number of bytes the upload has reached.
    /// - Throws: The ``StorageError`` that ended the upload;
    ///   ``StorageErrorCode/cancelled`` when it stopped for `stop`.
    func run(
        checkpoint: UploadCheckpoint,
        stop: TaskStop,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) -> StorageMetadata {
        do throws(StorageError) {
            if stop.reason == .cancel { throw .cancelled() }
            return try await upload(checkpoint: checkpoint, progress: progress)
        } catch {
            // The upload ends here (unless paused): stop reading a streamed source.
            if stop.reason != .pause, let stream = checkpoint.source?.stream { await stream.cancel() }
            if stop.reason != .pause, let session = checkpoint.session {
                if let leftOpen = sessionLeftOpen(after: error, stop: stop, checkpoint) {
                    // Described before the checkpoint forgets it, so `resumableSession` never reads nil in between.
                    checkpoint.leftOpen.session = leftOpen
                    checkpoint.session = nil
                    throw Self.sayingSessionIsKept(error)
                }
                checkpoint.session = nil
                // Deleting a session whose object may be stored would be worse than leaving it to expire.
                if !checkpoint.sessionMayBeFinalized {
                    // The upload cannot finish: let the server discard what it holds. The run's
                    // task may be cancelled, so the request goes from a task of its own.
                    let runner = RequestRunner(storage: storage, operation: .upload)
                    await Task {
                        var runner = runner
                        await discardSession(session, &runner)
                    }.value
                }
            }
            throw error
        }
    }

    /// The description of the session to leave open, rather than delete, when the upload ends
    /// with `error`; nil when the session is to be deleted. The one place that decides.
    ///
    /// The rule: a session is left open when the upload failed only because the retry time
    /// (``StorageConfiguration/maxUploadRetryTime``) ran out on failures that may pass —
    /// ``StorageErrorCode/retryLimitExceeded`` and ``StorageErrorCode/quotaExceeded``, as
    /// ``RequestRunner/backOff(after:)`` ends such runs (also when the token endpoint stayed
    /// unreachable) — and another process could continue it: a file upload whose session
    /// ``UploadSessionDescriber/describe(_:storage:path:resuming:)`` can describe. The server
    /// or the network may come back, and a rerun with ``Storage/resumeUpload(_:from:)`` then
    /// sends only the rest; the server discards the session on its own (about a week on GCS).
    ///
    /// Everything else deletes it: a cancel; a definitive failure (the file changed, a checksum
    /// or precondition failed, credentials were refused, the protocol was broken — including
    /// malformed answers until the retry time ran out, as a server that garbles its answers
    /// cannot be trusted with the session); and `Data` or stream uploads, whose bytes no other
    /// process can read.
    private func sessionLeftOpen(
        after error: StorageError, stop: TaskStop, _ checkpoint: UploadCheckpoint
    ) -> StorageUploadSession? {
        guard stop.reason == nil, error.code == .retryLimitExceeded || error.code == .quotaExceeded else {
            return nil
        }
        return UploadSessionDescriber.describe(checkpoint, storage: storage, path: path, resuming: resuming)
    }

    /// `error`, its message saying that the session was left open and how to continue it.
    private static func sayingSessionIsKept(_ error: StorageError) -> StorageError {
        StorageError(
            error.code,
            error.message
                + " The upload session was left open so that the upload can be resumed (the server"
                + " discards it after about a week).",
            httpStatus: error.httpStatus, serverMessage: error.serverMessage, underlyingError: error.underlyingError)
    }

    private func upload(
        checkpoint: UploadCheckpoint,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) -> StorageMetadata {
        let name = try StorageReference.validatedWriteTarget(path, generation: generation, "An upload")
        try preconditions.validate(for: storage.endpoint)
        try metadata.validate(for: storage.endpoint)
        let configuration = storage.configuration
        let prepared: PreparedSource
        if let opened = checkpoint.source {
            prepared = opened
        } else {
            // Objects that go in one request need their checksum first; larger ones are hashed while they send.
            prepared = try await PreparedSource.prepare(
                source,
                computingChecksum: configuration.verifiesChecksums,
                upFrontLimit: max(configuration.multipartUploadThreshold, PreparedSource.overlapThreshold),
                hashingInline: storage.transport.readsFileRegionsThroughBodyFile(
                    forScheme: storage.endpoint.baseURL.scheme ?? "")
            )
            if let resuming { try await adopt(resuming, prepared, checkpoint) }
            checkpoint.source = prepared
        }
        progress(checkpoint.committedBytes)  // observers learn the size before the first byte goes out
        var upload = UploadDescription(
            bucket: storage.bucket,
            objectName: name,
            metadata: metadata,
            contentType: metadata.contentType ?? "application/octet-stream",
            size: prepared.size,
            declaresSize: prepared.sizeIsKnown,
            crc32c: prepared.knownCRC32C,
            preconditions: preconditions
        )
        var runner = RequestRunner(storage: storage, operation: .upload)
        let requestLimit = storage.transport.maximumBodyLength
        // A single request also carries the metadata: leave it room under the transport's limit.
        let fitsOneRequest = requestLimit.map { prepared.size <= $0 - 1024 * 1024 } ?? true
        // A stream always goes through a session: its bytes come one bounded buffer at a time.
        if prepared.size <= configuration.multipartUploadThreshold && fitsOneRequest && checkpoint.session == nil
            && prepared.stream == nil
        {
            upload.crc32c = try await prepared.crc32c()
            return try await sendInOneRequest(upload, prepared, &runner, progress)
        }
        // The most bytes one request of the session carries, if anything bounds it.
        let granularity = StorageConfiguration.chunkGranularity
        let transportChunk = requestLimit.map { max(granularity, $0 / granularity * granularity) }
        // A stream's request size is also its buffer's: memory stays near it whatever the object's size.
        let streamChunk = prepared.stream == nil ? nil : Self.streamBufferSize
        let chunk = [configuration.chunkSize ?? resuming?.chunkSize, transportChunk, streamChunk].compactMap { $0 }
            .min()
        return try await sendResumably(upload, prepared, checkpoint, chunk, &runner, progress)
    }

    private func sendInOneRequest(
        _ upload: UploadDescription,
        _ prepared: PreparedSource,
        _ runner: inout RequestRunner,
        _ progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) -> StorageMetadata {
        let request = wire.singleRequestUpload(upload, body: await prepared.body(from: 0, length: prepared.size))
        let overhead = request.body.length - prepared.size
        while true {
            try await prepared.checkUnchanged()
            // No session to delete: once every byte went out, the server may store the object
            // whatever happens to the connection, so a pause or cancel then waits for its answer.
            let outcome = try await runner.sendShielded(
                request,
                accepting: [200, 201],
                about: .bucket(upload.bucket),
                sentChecksum: upload.crc32c != nil,
                shield: .onceSent,
                progress: { sent in progress(max(0, min(sent, prepared.size + overhead) - overhead)) }
            )
            switch outcome {
            case .answer(let response):
                let stored: StorageMetadata
                do throws(StorageError) {
                    stored = try StorageMetadata(objectResource: response.body)
                } catch {
                    // A success whose body cannot be read: the object may be stored. Keep it
                    // if it is exactly what was sent; otherwise treat the request as failed.
                    if let found = try await storedCopy(of: upload, &runner) {
                        return try await verify(found, upload, prepared, &runner)
                    }
                    try await runner.backOff(after: error)
                    continue
                }
                return try await verify(stored, upload, prepared, &runner)
            case .retryable(let failure):
                try await runner.backOff(after: failure)
            }
        }
    }

    /// The stored object, when it has the size and CRC32C of what `upload` sent; nil when it
    /// is missing, differs (another writer's, or an older one), or cannot be read now.
    ///
    /// Used after a one-request upload's success answer could not be read. Nothing is
    /// deleted: an object that differs may be someone else's.
    private func storedCopy(
        of upload: UploadDescription, _ runner: inout RequestRunner
    ) async throws(StorageError) -> StorageMetadata? {
        let request = wire.objectMetadata(bucket: upload.bucket, name: upload.objectName)
        let outcome: RequestRunner.Outcome
        do throws(StorageError) {
            outcome = try await runner.send(request, accepting: [200], about: .object(upload.objectName))
        } catch {
            if error.code == .objectNotFound { return nil }
            throw error
        }
        guard case .answer(let response) = outcome else { return nil }
        guard let stored = try? StorageMetadata(objectResource: response.body), stored.size == upload.size else {
            return nil
        }
        if let sent = upload.crc32c, stored.crc32cValue != sent { return nil }
        return stored
    }

    private func sendResumably(
        _ upload: UploadDescription,
        _ prepared: PreparedSource,
        _ checkpoint: UploadCheckpoint,
        _ chunkSize: Int64?,
        _ runner: inout RequestRunner,
        _ progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) -> StorageMetadata {
        // `Int64.max` for a stream of unknown size until the sequence ends.
        var size = prepared.size
        var restarts = 0
        // The most bytes the server has committed in this run: reaching past it is progress,
        // which restarts the retry deadline; regaining lost ground is not.
        var high = checkpoint.committedBytes
        // A session from an earlier run may have more (or less) than we know: ask first.
        var mustQuery = checkpoint.session != nil
        while true {
            guard let session = checkpoint.session else {
                // Shielded: once the server opens a session, its URL must arrive, or
                // a pause could not continue it and a cancel could not delete it.
                let start = wire.startSession(upload)
                switch try await runner.sendShielded(start, accepting: [200, 201], about: .bucket(upload.bucket)) {
                case .answer(let response):
                    checkpoint.session = try wire.sessionURL(from: response)
                    checkpoint.sessionMayBeFinalized = false
                    checkpoint.committedBytes = 0
                    checkpoint.sentBytes = 0
                    mustQuery = false
                    if Task.isCancelled { throw .cancelled() }
                case .retryable(let failure):
                    try await runner.backOff(after: failure)
                }
                continue
            }
            let accepted = wire.sessionAnswerStatuses
            let before = checkpoint.committedBytes
            let outcome: RequestRunner.Outcome
            let queried = mustQuery
            let step: UploadSessionStep
            var sentEverything = false
            if queried {
                step = .query
                outcome = try await runner.send(
                    wire.query(session: session), accepting: accepted, about: .object(upload.objectName))
            } else {
                try await prepared.checkUnchanged()
                var end = chunkSize.map { min(before + $0, size) } ?? size
                if let stream = prepared.stream {
                    // Bytes the server committed are no longer needed; the final request also
                    // waits for the sequence's end, so that one that yields more fails instead.
                    try await stream.discard(below: before)
                    // One byte past `end` shows whether the sequence ends there (then this
                    // request finalizes, with the total it tells).
                    let filled = try await stream.fill(to: end == size ? size + 1 : end + 1)
                    if filled.finished && stream.declaredSize == nil {
                        size = filled.end
                        end = min(end, size)
                    }
                    guard filled.end >= end else {
                        throw .internalError("The stream ended at \(filled.end) bytes, before the \(end) to send.")
                    }
                }
                var isFinal = end == size
                var crc32c: UInt32?
                if isFinal && prepared.hasChecksum && wire.checksFinalChecksum {
                    if let known = prepared.knownCRC32C {
                        crc32c = known
                    } else if prepared.stream == nil, let aligned = Self.lastAlignedOffset(after: before, before: size)
                    {
                        // Still hashing: send all but the tail without finalizing, then wait for the
                        // checksum and finalize with the tail, so that the pass and the transfer overlap.
                        end = aligned
                        isFinal = false
                    } else {
                        crc32c = try await prepared.crc32c()
                    }
                }
                sentEverything = isFinal
                step = .send(offset: before, length: end - before)
                checkpoint.sentBytes = max(checkpoint.sentBytes, end)
                let request = wire.send(
                    session: session,
                    offset: before,
                    body: await prepared.body(from: before, length: end - before),
                    isFinal: isFinal,
                    totalSize: size,
                    crc32c: crc32c
                )
                outcome = try await runner.send(
                    request,
                    accepting: accepted,
                    about: .object(upload.objectName),
                    sentChecksum: crc32c != nil,
                    progress: { sent in progress(before + sent) }
                )
            }
            let response: HTTPResponse
            switch outcome {
            case .retryable(let failure):
                try await runner.backOff(after: failure)
                mustQuery = true
                continue
            case .answer(let answer):
                response = answer
            }
            var state = try wire.sessionState(from: response, after: step)
            if case .completeUnreadable(let failure) = state {
                guard queried else {
                    // Treated as a failed request: ask the session what it holds.
                    checkpoint.sessionMayBeFinalized = true
                    try await runner.backOff(after: failure)
                    mustQuery = true
                    continue
                }
                state = .completeWithoutMetadata  // the session is final: read the object instead
            }
            if state == .completeWithoutMetadata {
                state = .complete(try await storedMetadata(upload, &runner))
            }
            switch state {
            case .gone where checkpoint.sessionIsAdopted:
                // No new session can replace it: the first start's metadata and preconditions are unknown here.
                checkpoint.session = nil
                throw StorageError(
                    .uploadSessionExpired,
                    "The server no longer knows the upload session being resumed (it expired or was cancelled); upload the file again.",
                    httpStatus: response.status, serverMessage: response.serverMessage)
            case .gone:
                // The server forgot the session (expired or deleted): start a new one, unless
                // the bytes it held came from a stream and were dropped (dataLoss).
                try await prepared.stream?.discard(below: 0)
                try restartSession(&restarts, checkpoint, progress, because: "lost the upload session", response)
                continue
            case .completeWithoutMetadata, .completeUnreadable:
                throw .internalError("The object's metadata could not be read after the upload.")
            case .complete(let stored) where stored.size != size && !sentEverything:
                // The server finalized the object before it had every byte (lenient
                // servers do so on a status query): remove the truncated object and
                // upload again in a new session, rather than report a wrong object.
                await deleteObject(stored, upload, &runner)
                try await prepared.stream?.discard(below: 0)
                try restartSession(
                    &restarts, checkpoint, progress, because: "finalized an incomplete object", response)
                continue
            case .complete(let stored):
                checkpoint.session = nil  // finalized: nothing left to discard
                return try await verify(stored, upload, prepared, &runner)
            case .active(let committed):
                try Self.checkCommitted(committed, reported: before, sent: checkpoint.sentBytes, response)
                checkpoint.sessionMayBeFinalized = false  // the session says it is still open
                checkpoint.committedBytes = committed
                progress(committed)
                mustQuery = false
                if committed > high {
                    high = committed
                    runner.madeProgress()
                } else if committed == before && !queried {
                    // Bytes went out and none were kept: count it as a failure, so a
                    // server that never commits cannot keep the upload looping.
                    try await runner.backOff(
                        after: StorageError(
                            .unknown, "The server committed none of the bytes sent.", httpStatus: response.status)
                    )
                }
            }
        }
    }

    /// Checks a committed offset the server reported against what it reported before in the
    /// session and what was sent: a session's committed bytes never shrink (a `308` without
    /// `Range` after a positive offset included), and never exceed the bytes sent.
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation``, which is not retried: a server that
    ///   loses committed bytes, or claims bytes it never got, cannot be trusted with the rest.
    static func checkCommitted(
        _ committed: Int64, reported: Int64, sent: Int64, _ response: HTTPResponse
    ) throws(StorageError) {
        let problem: String
        if committed < reported {
            problem = "The server's committed offset went back from \(reported) to \(committed) bytes."
        } else if committed > sent {
            problem = "The server claims to have committed \(committed) bytes, but only \(sent) were sent."
        } else {
            return
        }
        throw StorageError(
            .protocolViolation, problem, httpStatus: response.status, serverMessage: response.serverMessage)
    }

    /// Takes over the session `resuming` describes, once the opened source proves to be the file it
    /// was opened for: same identity (size, modification time, device and inode) and, when the
    /// description recorded one, the same CRC32C (a pass over the local file, far cheaper than
    /// sending it). Nothing has been sent to the session when this throws, and it is left alone.
    ///
    /// The server may hold any number of bytes up to the size, so the first request is a status
    /// query, and the bytes "sent" are the whole file for ``checkCommitted(_:reported:sent:_:)``.
    ///
    /// - Throws: ``StorageErrorCode/fileChanged`` saying what differs.
    private func adopt(
        _ resuming: StorageUploadSession, _ prepared: PreparedSource, _ checkpoint: UploadCheckpoint
    ) async throws(StorageError) {
        guard let file = prepared.file else {
            throw .internalError("Only a file upload can continue an upload session.")
        }
        let recorded = resuming.source
        let now = file.identity
        let changed: String?
        if now.size != recorded.size {
            changed = "its size changed (\(recorded.size) → \(now.size) bytes)"
        } else if now.modificationSeconds != recorded.modificationSeconds
            || now.modificationNanoseconds != recorded.modificationNanoseconds
        {
            changed = "it was modified"
        } else if let identity = resuming.identity, identity.device != now.device || identity.inode != now.inode {
            changed = "it is another file (device or inode differ)"
        } else {
            changed = nil
        }
        if let changed {
            throw StorageError(
                .fileChanged,
                "The file at \(file.path) is not the one the upload session was opened for: \(changed).")
        }
        if let expected = resuming.crc32c, let local = try await prepared.crc32c(), local != expected {
            throw StorageError(
                .fileChanged,
                "The file at \(file.path) is not the one the upload session was opened for: its CRC32C differs.")
        }
        checkpoint.session = resuming.sessionURL
        checkpoint.sessionIsAdopted = true
        checkpoint.sessionMayBeFinalized = false
        checkpoint.committedBytes = 0
        checkpoint.sentBytes = prepared.size
    }

    /// The largest offset below `size` that is a whole number (at least one) of 256 KiB units
    /// after `offset` (where a request that does not finalize may end), or nil when there is none.
    static func lastAlignedOffset(after offset: Int64, before size: Int64) -> Int64? {
        let granularity = StorageConfiguration.chunkGranularity
        guard size - offset > granularity else { return nil }
        return offset + (size - offset - 1) / granularity * granularity
    }

    private func restartSession(
        _ restarts: inout Int,
        _ checkpoint: UploadCheckpoint,
        _ progress: @Sendable (Int64) -> Void,
        because reason: String,
        _ response: HTTPResponse
    ) throws(StorageError) {
        restarts += 1
        checkpoint.sentBytes = 0
        if checkpoint.sessionIsAdopted {
            throw StorageError(
                .uploadSessionExpired,
                "The server \(reason) of the upload session being resumed; upload the file again.",
                httpStatus: response.status, serverMessage: response.serverMessage)
        }
        guard restarts <= Self.maxSessionRestarts else {
            throw StorageError(
                .internalError,
                "The server \(reason) \(restarts) times; giving up.",
                httpStatus: response.status,
                serverMessage: response.serverMessage
            )
        }
        checkpoint.session = nil
        checkpoint.committedBytes = 0
        progress(0)
    }

    /// Reads the metadata of the object a session reported complete without
    /// saying what it stored.
    private func storedMetadata(
        _ upload: UploadDescription, _ runner: inout RequestRunner
    ) async throws(StorageError) -> StorageMetadata {
        while true {
            let request = wire.objectMetadata(bucket: upload.bucket, name: upload.objectName)
            switch try await runner.send(request, accepting: [200], about: .object(upload.objectName)) {
            case .answer(let response):
                do throws(StorageError) {
                    return try StorageMetadata(objectResource: response.body)
                } catch {
                    // The object is stored; only its description was garbled: ask again.
                    try await runner.backOff(after: error)
                }
            case .retryable(let failure):
                try await runner.backOff(after: failure)
            }
        }
    }

    /// Checks the stored object against what was sent; a wrong object is
    /// deleted rather than left looking like a success.
    private func verify(
        _ stored: StorageMetadata,
        _ upload: UploadDescription,
        _ prepared: PreparedSource,
        _ runner: inout RequestRunner
    ) async throws(StorageError) -> StorageMetadata {
        var problem: StorageError?
        do throws(StorageError) {
            try await prepared.checkUnchanged()
        } catch {
            problem = error
        }
        let sentSize = prepared.totalIfKnown ?? prepared.size
        if problem == nil && stored.size != sentSize {
            problem = StorageError(
                .nonMatchingChecksum,
                "The server stored \(stored.size) bytes, but \(sentSize) were sent."
            )
        }
        var sent: UInt32?
        if problem == nil {
            // The object is stored: wait for a checksum still being computed even if the task is
            // cancelled now (success wins over a late pause or cancel; the pass is nearly done).
            let checksum = Task { () -> Result<UInt32?, StorageError> in
                do throws(StorageError) {
                    return .success(try await prepared.crc32c())
                } catch {
                    return .failure(error)
                }
            }
            switch await checksum.value {
            case .success(let value): sent = value
            case .failure(let error): problem = error
            }
        }
        if problem == nil, let sent, let reported = stored.crc32cValue, sent != reported {
            problem = StorageError(
                .nonMatchingChecksum,
                "The server's CRC32C of the object (\(CRC32CEncoding.base64(reported))) differs from the bytes sent (\(CRC32CEncoding.base64(sent)))."
            )
        }
        guard let problem else { return stored }
        await deleteObject(stored, upload, &runner)
        throw problem
    }

    /// Deletes the generation of the object this upload created, when it is
    /// known to be wrong. Best effort: a failure leaves the error as it was.
    private func deleteObject(
        _ stored: StorageMetadata, _ upload: UploadDescription, _ runner: inout RequestRunner
    ) async {
        guard let generation = stored.generation else { return }
        let delete = wire.deleteObject(bucket: upload.bucket, name: upload.objectName, generation: generation)
        _ = try? await runner.send(delete, accepting: [200, 204, 404], about: .object(upload.objectName))
    }

    /// Asks the server to drop a session; failures are ignored (sessions expire anyway).
    private func discardSession(_ session: URL, _ runner: inout RequestRunner) async {
        _ = try? await runner.send(
            wire.cancel(session: session), accepting: [200, 204, 404, 410, 499], about: .object(path.string))
    }
}
