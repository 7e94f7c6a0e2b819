import CloudStorageWire
import Foundation
import HTTPClient

/// Carries one upload to the server: opens the source, then sends it in one
/// request (small objects) or through a resumable session, retrying and
/// resuming from the server's committed offset, and verifies what was stored.
///
/// The engine never interprets an answer itself. The wire protocol
/// (``UploadWireProtocol``) builds each request and turns each answer into a
/// verdict; for a session, ``ResumableUploadStateMachine`` turns the verdicts,
/// the committed offset and the chunk plan into the next step, and enforces the
/// protocol's invariants. The engine performs the steps: it sends, waits, reads
/// the source, reports progress, and feeds back what came of each.
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
/// ``StorageConfiguration/Retry/maxUploadTime`` after the first one; only the
/// committed offset reaching a new high in this run restarts that deadline. A
/// success answer whose body cannot be read counts as such a failure (the
/// object may be stored): a session is queried, a one-request upload's object
/// is read back and kept if its size and CRC32C match, and nothing is deleted.
/// Committed offsets that shrink within a session or pass the bytes sent (the
/// machine's checks), and any other answer that breaks the protocol (the wire
/// protocol's), end the upload at once with ``StorageErrorCode/protocolViolation``.
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
    /// Why the upload cannot run at all, found when it was set up; every run fails with it.
    var refusal: StorageError?

    /// Whether the transport reads a file's bytes itself to send them to the endpoint (TLS), so
    /// that they can be hashed as they pass instead of read once more (``InlineChecksum``).
    var transportReadsFileRegions: Bool {
        let baseURL = storage.endpoint.baseURL
        return storage.transport.carrier(for: baseURL).capabilities.readsFileRegions(to: baseURL)
    }

    /// The endpoint's protocol: the engine is the same for all of them.
    private var wire: any UploadWireProtocol {
        storage.uploadProtocol
    }

    /// The bytes one request of a streamed upload carries at most (unless
    /// ``StorageConfiguration/Uploads/chunkSize`` is smaller), and so about the most a stream's
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
            // A multipart upload is kept, like a session, when only the retry time ran out
            // (another process may continue it); otherwise it is aborted and the server keeps
            // none of its parts.
            if stop.reason != .pause, checkpoint.parts.uploadID != nil {
                if let leftOpen = sessionLeftOpen(after: error, stop: stop, checkpoint) {
                    checkpoint.leftOpen.session = leftOpen
                    checkpoint.parts = PartsCheckpoint()
                    throw Self.sayingSessionIsKept(error)
                }
                await abortParts(checkpoint)
            }
            let ended = checkpoint.session
            if stop.reason != .pause, let session = ended.url {
                if let leftOpen = sessionLeftOpen(after: error, stop: stop, checkpoint) {
                    // Described before the checkpoint forgets it, so `resumableSession` never reads nil in between.
                    checkpoint.leftOpen.session = leftOpen
                    checkpoint.session.url = nil
                    throw Self.sayingSessionIsKept(error)
                }
                checkpoint.session.url = nil
                // Deleting a session whose object may be stored would be worse than leaving it to expire.
                if !ended.mayBeFinalized {
                    // The upload cannot finish: let the server discard what it holds. The run's
                    // task may be cancelled, so the request goes from a task of its own.
                    let executor = CallExecutor(storage: storage, operation: .upload)
                    await Self.whateverStops(executor) { executor in await discardSession(session, &executor) }
                }
            }
            throw error
        }
    }

    /// The description of the session to leave open, rather than delete, when the upload ends
    /// with `error`; nil when the session is to be deleted. The one place that decides.
    ///
    /// The rule: a session is left open when the upload failed only because the retry time
    /// (``StorageConfiguration/Retry/maxUploadTime``) ran out on failures that may pass —
    /// ``StorageErrorCode/retryLimitExceeded`` and ``StorageErrorCode/quotaExceeded``, as
    /// ``CallExecutor/backOff(after:)`` ends such runs (also when the token endpoint stayed
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
        if let refusal { throw refusal }
        let name = try path.validatedWriteTarget(generation: generation, "An upload")
        try preconditions.validate(for: storage.endpoint)
        try metadata.validate(for: storage.endpoint)
        if checkpoint.source == nil || checkpoint.parts.uploadID != nil,
            let stored = try await sendInPartsIfWanted(objectName: name, checkpoint: checkpoint, progress: progress)
        {
            return stored
        }
        let configuration = storage.configuration
        let prepared: PreparedSource
        if let opened = checkpoint.source {
            prepared = opened
        } else {
            // Objects that go in one request need their checksum first; larger ones are hashed while they send.
            prepared = try await PreparedSource.prepare(
                source,
                computingChecksum: configuration.verifiesChecksums,
                upFrontLimit: max(configuration.uploads.multipartThreshold, PreparedSource.overlapThreshold),
                hashingInline: transportReadsFileRegions
            )
            if let resuming { try await adopt(resuming, prepared, checkpoint) }
            checkpoint.source = prepared
        }
        progress(checkpoint.session.committedBytes)  // observers learn the size before the first byte goes out
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
        var executor = CallExecutor(storage: storage, operation: .upload)
        // A single request also carries the metadata: leave it room under the transport's limit.
        let fitsOneRequest = storage.transport.maximumBodyLength.map { prepared.size <= $0 - 1024 * 1024 } ?? true
        // A stream always goes through a session: its bytes come one bounded buffer at a time.
        if prepared.size <= configuration.uploads.multipartThreshold && fitsOneRequest
            && checkpoint.session.url == nil && prepared.stream == nil
        {
            upload.crc32c = try await prepared.crc32c()
            return try await sendInOneRequest(upload, prepared, &executor, progress)
        }
        let machine = ResumableUploadStateMachine(plan: plan(for: prepared), session: checkpoint.session)
        return try await sendResumably(upload, prepared, checkpoint, machine, &executor, progress)
    }

    /// How a session's requests cut `prepared`: at most the configured (or resumed) chunk size,
    /// the transport's body limit, and a stream's buffer, whichever is smallest.
    private func plan(for prepared: PreparedSource) -> ResumableUploadStateMachine.Plan {
        let transportChunk = storage.transport.maximumBodyLength.map(ProtocolLimits.chunkSize(atMost:))
        // A stream's request size is also its buffer's: memory stays near it whatever the object's size.
        let streamChunk = prepared.stream == nil ? nil : Self.streamBufferSize
        let chunkSize = [storage.configuration.uploads.chunkSize ?? resuming?.chunkSize, transportChunk, streamChunk]
            .compactMap { $0 }.min()
        // A stream of unknown size tells it when it ends.
        let sizeIsUnknown = prepared.stream.map { $0.declaredSize == nil } ?? false
        return ResumableUploadStateMachine.Plan(
            chunkSize: chunkSize,
            size: sizeIsUnknown ? nil : prepared.size,
            finalCarriesChecksum: prepared.hasChecksum && wire.checksFinalChecksum,
            checksumMayLag: prepared.stream == nil)
    }

    private func sendInOneRequest(
        _ upload: UploadDescription,
        _ prepared: PreparedSource,
        _ executor: inout CallExecutor,
        _ progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) -> StorageMetadata {
        let request = wire.singleRequestUpload(upload, body: await prepared.body(from: 0, length: prepared.size))
        let overhead = request.body.length - prepared.size
        let idempotency = CallIdempotency.generationConditioned(upload.preconditions)
        while true {
            // No session to delete: once every byte went out, the server may store the object
            // whatever happens to the connection, so a pause or cancel then waits for its answer.
            let response = try await executor.execute(
                request, idempotency: idempotency, accepting: [200, 201], about: .bucket(upload.bucket),
                sentChecksum: upload.crc32c != nil, shield: .onceSent,
                progress: { sent in progress(max(0, min(sent, prepared.size + overhead) - overhead)) },
                beforeEachAttempt: { () async throws(StorageError) in try await prepared.checkUnchanged() })
            let stored: StorageMetadata
            do throws(StorageError) {
                stored = try StorageMetadata(objectResource: response.body)
            } catch {
                // A success whose body cannot be read: the object may be stored. Keep it
                // if it is exactly what was sent; otherwise the upload failed, and is sent again
                // as the retry gate allows for the upload itself.
                if let found = try await storedCopy(of: upload, &executor) {
                    return try await verify(found, upload, prepared, executor)
                }
                try await executor.backOff(after: error, of: idempotency)
                continue
            }
            return try await verify(stored, upload, prepared, executor)
        }
    }

    /// The stored object, when it has the size and CRC32C of what `upload` sent; nil when it
    /// is missing, differs (another writer's, or an older one), or cannot be read now.
    ///
    /// Used after a one-request upload's success answer could not be read, and after a stop
    /// aborted a request that may have completed the object. Nothing is deleted: an object
    /// that differs may be someone else's.
    func storedCopy(
        of upload: UploadDescription, _ executor: inout CallExecutor
    ) async throws(StorageError) -> StorageMetadata? {
        let request = wire.objectMetadata(bucket: upload.bucket, name: upload.objectName)
        let outcome: CallExecutor.Outcome
        do throws(StorageError) {
            outcome = try await executor.send(
                request, idempotency: .idempotent, accepting: [200], about: .object(upload.objectName))
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

    /// Carries the upload through a resumable session: performs what `machine` decides, and feeds
    /// it what came of each step (the wire protocol's verdict on an answer, never the answer),
    /// publishing the session to `checkpoint` after every step so that a pause, a cancel or a
    /// describer sees it as it stands.
    private func sendResumably(
        _ upload: UploadDescription,
        _ prepared: PreparedSource,
        _ checkpoint: UploadCheckpoint,
        _ machine: ResumableUploadStateMachine,
        _ executor: inout CallExecutor,
        _ progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) -> StorageMetadata {
        var machine = machine
        var event = ResumableUploadStateMachine.Event.began
        let name = upload.objectName
        // A run that continues a session reports it once the server said what the session holds.
        var resuming = checkpoint.session.url != nil
        while true {
            let restarts = machine.restarts
            let action = machine.next(event)
            announceSessionChange(
                action, of: name, machine, restartedSince: restarts, resuming: &resuming, executor.events)
            checkpoint.session = machine.session
            // The start is shielded, so it ends even when the run was cancelled meanwhile: stop
            // now, with the session recorded for the pause to keep or the cancel to delete.
            if case .sessionStarted = event, Task.isCancelled { throw .cancelled() }
            switch action {
            case .startSession:
                event = try await startSession(upload, &executor)
                if case .sessionStarted = event {
                    executor.events.emit(.uploadSessionStarted, .debug, "\(name): session opened", ["object": .string(name)])
                }
            case .query(let session):
                event = try await ask(wire.query(session: session), .query, upload, &executor, progress: nil)
            case .prepareSource(let offset, let through):
                event = try await prepare(prepared, from: offset, through: through)
            case .readChecksum(let wait):
                event = .checksumRead(wait ? try await prepared.crc32c() : prepared.knownCRC32C)
            case .send(let chunk):
                event = try await send(chunk, of: prepared, upload, &executor, progress)
            case .report(let committed, let newHigh):
                progress(committed)
                if newHigh { executor.madeProgress() }
                event = .done
            case .backOff(let failure):
                try await executor.backOff(after: failure)
                event = .done
            case .readStoredObject:
                event = .storedObjectRead(try await storedMetadata(upload, &executor))
            case .deleteObject(let stored):
                await deleteObject(stored, upload, &executor)
                event = .done
            case .rewindSource:
                try await prepared.stream?.discard(below: 0)
                event = .done
            case .finish(let stored):
                return try await verify(stored, upload, prepared, executor)
            case .fail(let error):
                throw error
            }
        }
    }

    /// Tells observers what `action` shows of the session: that the machine restarted it (a
    /// `.report` after its restart count rose past `restarts`), or, once for a run that continues
    /// a session (`resuming`), how many bytes the server said it holds. Either clears `resuming`.
    private func announceSessionChange(
        _ action: ResumableUploadStateMachine.Action,
        of name: String,
        _ machine: ResumableUploadStateMachine,
        restartedSince restarts: Int,
        resuming: inout Bool,
        _ events: StorageEventEmitter
    ) {
        if machine.restarts > restarts, case .report = action {
            resuming = false
            let reason = machine.lastRestartReason ?? "lost the session"
            events.emit(
                .uploadSessionRestarted, .warning,
                "\(name): the server \(reason); starting again with a new session (restart \(machine.restarts))",
                ["object": .string(name), "reason": .string(reason), "restart": .integer(Int64(machine.restarts))])
        } else if resuming, case .report(let committed, _) = action {
            resuming = false
            events.emit(
                .uploadSessionResumed, .info, "\(name): continuing its session, which holds \(committed) bytes",
                ["object": .string(name), "committed": .integer(committed)])
        }
    }

    /// Sends one chunk of `prepared` to its session, and returns the wire protocol's verdict on
    /// the answer; for a finalizing chunk a stop aborted, what ``finalAnswer(afterCancelling:_:_:cancel:)`` finds.
    private func send(
        _ chunk: ResumableUploadStateMachine.Chunk,
        of prepared: PreparedSource,
        _ upload: UploadDescription,
        _ executor: inout CallExecutor,
        _ progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) -> ResumableUploadStateMachine.Event {
        let request = wire.send(
            session: chunk.session, offset: chunk.offset,
            body: await prepared.body(from: chunk.offset, length: chunk.length),
            // A finalizing chunk ends at the object's size; the protocols ignore it on the others.
            isFinal: chunk.finalizes, totalSize: chunk.end, crc32c: chunk.crc32c)
        do throws(StorageError) {
            return try await ask(
                request, .send(offset: chunk.offset, length: chunk.length), upload, &executor,
                sentChecksum: chunk.crc32c != nil, progress: { sent in progress(chunk.offset + sent) })
        } catch let error where error.code == .cancelled && chunk.finalizes {
            return try await finalAnswer(afterCancelling: chunk, upload, executor, cancel: error)
        }
    }

    /// What became of a finalizing `chunk` whose request a pause or cancel aborted: the
    /// session's completion when the server finalized the object anyway, or `cancel` thrown.
    ///
    /// Aborting a connection does not take back bytes already written to it: a cancel that
    /// lands as the last bytes go out leaves the server reading them to the end and storing
    /// the object. So before the cancel ends the upload (and deletes the session), the session
    /// is asked once, from a task of its own (this one is cancelled). A final session means the
    /// object is stored, and success wins over the late stop; an open session is deleted as
    /// for any cancel. (A server that had not begun reading the aborted request when the
    /// query came could still finalize it: the window shrinks to the server's scheduling.)
    private func finalAnswer(
        afterCancelling chunk: ResumableUploadStateMachine.Chunk,
        _ upload: UploadDescription,
        _ executor: CallExecutor,
        cancel: StorageError
    ) async throws(StorageError) -> ResumableUploadStateMachine.Event {
        let query = wire.query(session: chunk.session)
        let stored = await Self.whateverStops(executor) { (executor) -> StorageMetadata? in
            guard
                let response = await executor.sendOnce(
                    query, accepting: wire.sessionAnswerStatuses, about: .object(upload.objectName))
            else { return nil }
            switch try? wire.sessionState(from: response, after: .query) {
            case .complete(let stored)?: return stored
            // Final, but the answer does not say with what: the object's size and CRC32C must match.
            case .completeWithoutMetadata?, .completeUnreadable?: return try? await storedCopy(of: upload, &executor)
            case .active?, .gone?, nil: return nil
            }
        }
        guard let stored else { throw cancel }
        return .answered(.init(state: .complete(stored), httpStatus: 200, serverMessage: nil))
    }

    /// Opens a session. Shielded: once the server opens one, its URL must arrive, or a pause
    /// could not continue it and a cancel could not delete it.
    private func startSession(
        _ upload: UploadDescription, _ executor: inout CallExecutor
    ) async throws(StorageError) -> ResumableUploadStateMachine.Event {
        let start = wire.startSession(upload)
        // Opening a session is the upload's one object write; the session's own requests are idempotent.
        switch try await executor.sendShielded(
            start, idempotency: .generationConditioned(upload.preconditions), accepting: [200, 201],
            about: .bucket(upload.bucket))
        {
        case .answer(let response): return .sessionStarted(try wire.sessionURL(from: response))
        case .retryable(let failure): return .retryableFailure(failure)
        }
    }

    /// Sends a query or a chunk to the session, and returns the wire protocol's verdict on the answer.
    private func ask(
        _ request: HTTPRequest,
        _ step: UploadSessionStep,
        _ upload: UploadDescription,
        _ executor: inout CallExecutor,
        sentChecksum: Bool = false,
        progress: (@Sendable (Int64) -> Void)?
    ) async throws(StorageError) -> ResumableUploadStateMachine.Event {
        let outcome = try await executor.send(
            request, idempotency: .idempotent, accepting: wire.sessionAnswerStatuses,
            about: .object(upload.objectName), sentChecksum: sentChecksum, progress: progress)
        switch outcome {
        case .retryable(let failure):
            return .retryableFailure(failure)
        case .answer(let response):
            let state = try wire.sessionState(from: response, after: step)
            return .answered(.init(state: state, httpStatus: response.status, serverMessage: response.serverMessage))
        }
    }

    /// Checks that the source is unchanged and, for a stream, that it holds the bytes from
    /// `offset` up to `through` (what the server committed below `offset` is no longer needed).
    private func prepare(
        _ prepared: PreparedSource, from offset: Int64, through: Int64
    ) async throws(StorageError) -> ResumableUploadStateMachine.Event {
        try await prepared.checkUnchanged()
        guard let stream = prepared.stream else { return .sourceReady(end: prepared.size, finished: true) }
        try await stream.discard(below: offset)
        let filled = try await stream.fill(to: through)
        return .sourceReady(end: filled.end, finished: filled.finished)
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
        try await Self.checkIsRecordedFile(resuming, prepared)
        checkpoint.session = .adopted(resuming.sessionURL, size: prepared.size)
    }

    /// Checks that the opened source is the file `resuming` was opened for: same size,
    /// modification time, device and inode, and the recorded CRC32C when there is one.
    ///
    /// - Throws: ``StorageErrorCode/fileChanged`` saying what differs.
    static func checkIsRecordedFile(
        _ resuming: StorageUploadSession, _ prepared: PreparedSource
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
    }

    /// Reads the metadata of the object a session reported complete without
    /// saying what it stored.
    func storedMetadata(
        _ upload: UploadDescription, _ executor: inout CallExecutor
    ) async throws(StorageError) -> StorageMetadata {
        let request = wire.objectMetadata(bucket: upload.bucket, name: upload.objectName)
        while true {
            let response = try await executor.execute(
                request, idempotency: .idempotent, accepting: [200], about: .object(upload.objectName))
            do throws(StorageError) {
                return try StorageMetadata(objectResource: response.body)
            } catch {
                // The object is stored; only its description was garbled: ask again.
                try await executor.backOff(after: error, of: .idempotent)
            }
        }
    }

    /// Checks the stored object against what was sent; a wrong object is
    /// deleted rather than left looking like a success. Runs to its end even when the task is
    /// paused or cancelled meanwhile (``whateverStops(_:_:)``).
    private func verify(
        _ stored: StorageMetadata,
        _ upload: UploadDescription,
        _ prepared: PreparedSource,
        _ executor: CallExecutor
    ) async throws(StorageError) -> StorageMetadata {
        try await Self.whateverStops(executor) { (executor) throws(StorageError) -> StorageMetadata in
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
                do throws(StorageError) {
                    sent = try await prepared.crc32c()
                } catch {
                    problem = error
                }
            }
            return try await accept(stored, sent: sent, problem: problem, upload, &executor)
        }
    }

    /// Runs `body` with a copy of `executor` in a task of its own, which a pause or cancel of
    /// this one does not reach: once the object is stored, checking it ends whatever happens
    /// (success wins over a late stop; what is left is short: a checksum still being computed,
    /// a read of the object's metadata, a deletion of a wrong object).
    static func whateverStops<T: Sendable>(
        _ executor: CallExecutor,
        _ body: @escaping @Sendable (inout CallExecutor) async throws(StorageError) -> T
    ) async throws(StorageError) -> T {
        try await whateverStops(executor) { (executor) -> Result<T, StorageError> in
            do throws(StorageError) {
                return .success(try await body(&executor))
            } catch {
                return .failure(error)
            }
        }.get()
    }

    /// ``whateverStops(_:_:)`` for work that cannot fail: cleaning up after a stop (deleting a
    /// session, aborting a multipart upload), or asking what a stopped request achieved.
    static func whateverStops<T: Sendable>(
        _ executor: CallExecutor,
        _ body: @escaping @Sendable (inout CallExecutor) async -> T
    ) async -> T {
        await Task {
            var executor = executor
            return await body(&executor)
        }.value
    }

    /// The last step of checking a stored object, for one stream and for parts alike: its
    /// CRC32C against the bytes sent (when both are known), the verdict reported, and an object
    /// that failed a check deleted before its problem is thrown.
    ///
    /// - Parameter problem: What an earlier check (size, file unchanged) found, if anything.
    func accept(
        _ stored: StorageMetadata, sent: UInt32?, problem: StorageError?, _ upload: UploadDescription,
        _ executor: inout CallExecutor
    ) async throws(StorageError) -> StorageMetadata {
        var problem = problem
        if problem == nil, let sent, let reported = stored.crc32cValue, sent != reported {
            problem = StorageError(
                .nonMatchingChecksum,
                "The server's CRC32C of the object (\(CRC32CEncoding.base64(reported))) differs from the bytes sent (\(CRC32CEncoding.base64(sent)))."
            )
        }
        reportVerdict(
            on: upload.objectName, sent: sent, reported: stored.crc32cValue, problem: problem, executor.events)
        guard let problem else { return stored }
        await deleteObject(stored, upload, &executor)
        throw problem
    }

    /// Reports what ``verify(_:_:_:_:)`` concluded about the checksums: matched, mismatched (a
    /// ``StorageErrorCode/nonMatchingChecksum``), or not checkable (no CRC32C on one side). Other
    /// problems (a source that changed) are no verdict on the checksum.
    func reportVerdict(
        on name: String, sent: UInt32?, reported: UInt32?, problem: StorageError?, _ events: StorageEventEmitter
    ) {
        if let problem {
            guard problem.code == .nonMatchingChecksum else { return }
            events.emit(
                .checksumVerdict, .warning, "\(name): mismatched: \(problem.message)",
                ["object": .string(name), "verdict": "mismatched", "reason": .string(problem.message)])
        } else if sent != nil, reported != nil {
            events.emit(.checksumVerdict, .debug, "\(name): CRC32C matched", ["object": .string(name), "verdict": "matched"])
        } else {
            let reason =
                sent == nil ? "checksums are off (verifiesChecksums is false)" : "the server reported no CRC32C"
            events.emit(
                .checksumVerdict, .info, "\(name): not checkable: \(reason)",
                ["object": .string(name), "verdict": "not checkable", "reason": .string(reason)])
        }
    }

    /// Deletes the generation of the object this upload created, when it is
    /// known to be wrong. Best effort: a failure leaves the error as it was.
    func deleteObject(
        _ stored: StorageMetadata, _ upload: UploadDescription, _ executor: inout CallExecutor
    ) async {
        guard let generation = stored.generation else { return }
        let delete = wire.deleteObject(bucket: upload.bucket, name: upload.objectName, generation: generation)
        _ = await executor.sendOnce(delete, accepting: [200, 204, 404], about: .object(upload.objectName))
    }

    /// Asks the server to drop a session; failures are ignored (sessions expire anyway).
    private func discardSession(_ session: URL, _ executor: inout CallExecutor) async {
        _ = await executor.sendOnce(
            wire.cancel(session: session), accepting: [200, 204, 404, 410, 499], about: .object(path.string))
    }
}
