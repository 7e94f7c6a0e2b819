import Foundation
import HTTPClient
import Synchronization

/// What a file upload sent in parts has stored so far, kept across the pauses of one task in
/// its ``UploadCheckpoint``: the multipart upload's id and each stored part.
struct PartsCheckpoint: Sendable, Equatable {
    /// A part the server stored.
    struct Part: Sendable, Equatable {
        /// The ETag the server answered, which Complete names the part by.
        var etag: String
        /// The part's CRC32C, sent with it and combined into the object's; nil when checksums are off.
        var crc32c: UInt32?
        var size: Int64
    }

    /// The multipart upload, once the server opened one; nil before and after it ended.
    var uploadID: String?
    /// The object it uploads to, which its requests name.
    var objectName = ""
    /// The size of every part but the last, which numbers them.
    var partSize: Int64 = 0
    /// The stored parts by number.
    var stored: [Int: Part] = [:]
    /// The server refused the protocol: this upload goes in one stream.
    var refused = false
}

/// Parallel upload of one file: Cloud Storage's XML API multipart upload (DESIGN.md, decision
/// 17). Above ``StorageConfiguration/Uploads/Parallel/threshold`` a file goes up in parts,
/// ``StorageConfiguration/Uploads/Parallel/connections`` at a time, each part a region of the
/// file sent as it lies (no copy), its CRC32C checked by the server (see
/// ``sendPart(_:offset:length:_:_:_:_:_:)``); each part retries
/// on its own with its own ``CallExecutor``. The object's CRC32C is the parts' combined, and
/// the stored object is checked against it as every upload is.
///
/// A pause cancels the parts in flight and keeps the upload and the stored parts in the
/// checkpoint: the next run sends only the parts that are missing. A cancel or any failure
/// aborts the upload in ``run(checkpoint:stop:progress:)``, so the server keeps nothing.
extension UploadEngine {
    /// Sends the file in parts when it should go that way; nil when it goes in one stream
    /// instead (too small, an endpoint or upload the protocol cannot carry, or a server that
    /// refused it, which the checkpoint then remembers).
    func sendInPartsIfWanted(
        objectName name: String, checkpoint: UploadCheckpoint, progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) -> StorageMetadata? {
        let settings = storage.configuration.uploads.parallel
        // A recorded multipart upload continues in parts; a recorded resumable session does not.
        guard case .file(let url) = source, resuming == nil || resuming?.partSize != nil,
            storage.endpoint.wireProtocol == .gcsJSON,
            !checkpoint.parts.refused, checkpoint.session.url == nil,
            XMLMultipartProtocol.accepts(metadata, preconditions: preconditions, options: storage.options)
        else { return nil }
        let prepared: PreparedSource
        if let opened = checkpoint.source, checkpoint.parts.uploadID != nil {
            prepared = opened
        } else {
            // The parts are hashed one by one as they go; the whole file needs no pass of its own.
            prepared = try await PreparedSource.prepare(.file(url), computingChecksum: false, upFrontLimit: 0)
        }
        let partSize = resuming?.partSize ?? settings.partSize(forFileOf: prepared.size)
        guard resuming != nil || (prepared.size >= settings.threshold && prepared.size > partSize) else { return nil }
        checkpoint.source = prepared
        let wire = XMLMultipartProtocol(baseURL: storage.endpoint.baseURL, options: storage.options)
        let upload = UploadDescription(
            bucket: storage.bucket, objectName: name, metadata: metadata,
            contentType: metadata.contentType ?? "application/octet-stream", size: prepared.size)
        var executor = CallExecutor(storage: storage, operation: .upload)
        if let resuming, checkpoint.parts.uploadID == nil {
            try await adoptParts(resuming, prepared, partSize: partSize, objectName: name, wire, checkpoint, &executor)
        }
        if checkpoint.parts.uploadID == nil {
            guard let id = try await initiate(upload, wire, &executor) else {
                checkpoint.parts.refused = true
                checkpoint.source = nil
                return nil
            }
            checkpoint.parts = PartsCheckpoint(uploadID: id, objectName: name, partSize: partSize)
        } else {
            let stored = checkpoint.parts.stored.count
            executor.events.emit(
                .uploadSessionResumed, .info, "\(name): continuing its multipart upload, which holds \(stored) parts",
                ["object": .string(name), "parts": .integer(Int64(stored))])
        }
        try await sendParts(
            upload, prepared, partSize: partSize, connections: settings.connections, wire, checkpoint, progress)
        return try await complete(upload, prepared, wire, checkpoint, &executor)
    }

    /// Takes over the multipart upload `resuming` describes (another process started it): once
    /// the opened file proves to be the recorded one, the parts the server lists with the size
    /// their number gives are kept, and only the others are sent. A kept part is trusted by the
    /// file's identity and its size; its CRC32C is computed from the local file, so the object's
    /// final check (the parts' combined CRC32C against the server's) catches any part that differs.
    ///
    /// - Throws: ``StorageErrorCode/fileChanged`` (the upload is then aborted, as after any
    ///   failure), ``StorageErrorCode/uploadSessionExpired`` when the server no longer has it.
    private func adoptParts(
        _ resuming: StorageUploadSession, _ prepared: PreparedSource, partSize: Int64, objectName name: String,
        _ wire: XMLMultipartProtocol, _ checkpoint: UploadCheckpoint, _ executor: inout CallExecutor
    ) async throws(StorageError) {
        let query = URLComponents(url: resuming.sessionURL, resolvingAgainstBaseURL: false)?.queryItems
        guard let id = query?.first(where: { $0.name == "uploadId" })?.value, !id.isEmpty else {
            throw .invalidArgument("The upload session names no multipart upload (no uploadId).")
        }
        // Recorded first, so that a failure from here on aborts the upload.
        checkpoint.parts = PartsCheckpoint(uploadID: id, objectName: name, partSize: partSize)
        try await Self.checkIsRecordedFile(resuming, prepared)
        let count = Int((prepared.size + partSize - 1) / partSize)
        var stored: [Int: PartsCheckpoint.Part] = [:]
        var marker = 0
        while true {
            let request = wire.listParts(uploadID: id, bucket: storage.bucket, name: name, after: marker)
            let response = try await executor.execute(
                request, idempotency: .idempotent, accepting: [200, 404], about: .object(name))
            guard response.status != 404 else {
                checkpoint.parts = PartsCheckpoint()
                throw StorageError(
                    .uploadSessionExpired,
                    "The multipart upload of \(name) is gone from the server (completed, aborted or expired).",
                    httpStatus: 404)
            }
            let page = try wire.parts(from: response)
            for part in page.parts where (1...count).contains(part.number) {
                let length = min(partSize, prepared.size - Int64(part.number - 1) * partSize)
                // A part of another size was cut otherwise: it is sent again.
                if part.size == length { stored[part.number] = .init(etag: part.etag, crc32c: nil, size: length) }
            }
            guard let next = page.next, next > marker else { break }
            marker = next
        }
        if storage.configuration.verifiesChecksums, let file = prepared.file {
            for (number, part) in stored {
                let offset = Int64(number - 1) * partSize
                stored[number]?.crc32c = try await Self.crc32c(of: file, from: offset, length: part.size)
            }
        }
        checkpoint.parts.stored = stored
    }

    /// The CRC32C of `length` bytes of `file` from `offset`, read on a blocking thread.
    private static func crc32c(
        of file: ReadOnlyFile, from offset: Int64, length: Int64
    ) async throws(StorageError)
        -> UInt32
    {
        try await InlineChecksum(of: offset..<offset + length).value(reading: file)
    }

    /// Opens the multipart upload; nil when the server does not speak the protocol (a clean
    /// refusal: 400, 404, 405 or 501, as servers without the XML API answer).
    private func initiate(
        _ upload: UploadDescription, _ wire: XMLMultipartProtocol, _ executor: inout CallExecutor
    ) async throws(StorageError) -> String? {
        let request = wire.initiate(
            bucket: upload.bucket, name: upload.objectName, metadata: newObjectMetadata, contentType: upload.contentType
        )
        // Shielded: once the server opens an upload, its id must arrive, or nothing could abort it.
        // Opening one is an object write without a precondition (a multipart upload takes none).
        let response = try await executor.execute(
            request, idempotency: .generationConditioned(.none), accepting: [200, 400, 404, 405, 501],
            about: .bucket(upload.bucket), shield: .whole)
        guard response.status == 200 else {
            executor.events.emit(
                .uploadSessionStarted, .info,
                "\(upload.objectName): the server refused a multipart upload (HTTP \(response.status));"
                    + " sending in one stream",
                ["object": .string(upload.objectName), "status": .integer(Int64(response.status))])
            return nil
        }
        let id = try wire.uploadID(from: response)
        executor.events.emit(
            .uploadSessionStarted, .debug, "\(upload.objectName): multipart upload opened",
            ["object": .string(upload.objectName)])
        return id
    }

    /// The metadata the final object gets: the upload's, with the options' storage class unless it names one.
    private var newObjectMetadata: StorageMetadata {
        var metadata = metadata
        if metadata.storageClass == nil { metadata.storageClass = storage.options.storageClass }
        return metadata
    }

    /// Sends every part the checkpoint does not hold, `connections` at a time; the first
    /// definitive failure cancels the others and is thrown.
    private func sendParts(
        _ upload: UploadDescription, _ prepared: PreparedSource, partSize: Int64, connections: Int,
        _ wire: XMLMultipartProtocol, _ checkpoint: UploadCheckpoint, _ progress: @escaping @Sendable (Int64) -> Void
    ) async throws(StorageError) {
        let count = Int((prepared.size + partSize - 1) / partSize)
        let missing = (1...count).filter { checkpoint.parts.stored[$0] == nil }
        let tally = PartsTally(stored: checkpoint.parts.stored.values.reduce(0) { $0 + $1.size }, report: progress)
        tally.report()
        let engine = self
        let failure: StorageError? = await withTaskGroup(of: StorageError?.self) { group in
            var pending = missing[...]
            var firstFailure: StorageError?
            func startNext() {
                guard let number = pending.popFirst() else { return }
                let offset = Int64(number - 1) * partSize
                let length = min(partSize, prepared.size - offset)
                group.addTask {
                    do throws(StorageError) {
                        try await engine.sendPart(
                            number, offset: offset, length: length, upload, prepared, wire, checkpoint, tally)
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            for _ in 0..<connections { startNext() }
            while let result = await group.next() {
                if let error = result {
                    if firstFailure == nil || firstFailure?.code == .cancelled { firstFailure = error }
                    pending = []
                    group.cancelAll()
                } else {
                    startNext()
                }
            }
            return firstFailure
        }
        if let failure { throw Task.isCancelled ? .cancelled() : failure }
        if Task.isCancelled { throw .cancelled() }
    }

    /// Sends one part until the server stores it, retrying on its own budget.
    ///
    /// Its CRC32C goes one of two ways. When the transport reads the part's bytes itself to
    /// send them (TLS), it hashes them as it reads (``InlineChecksum``),
    /// and the hash is checked against the one the server reports having stored (`x-goog-hash`,
    /// as Cloud Storage answers a part): the file is read once. Otherwise (`sendfile` over plain
    /// HTTP, where no byte passes through the client) the part is hashed first and the request
    /// carries the hash for the server to check. Either way a part the server stored wrongly
    /// fails the upload before Complete could assemble it; a server that reports no hash leaves
    /// the check to the object's combined CRC32C.
    private func sendPart(
        _ number: Int, offset: Int64, length: Int64, _ upload: UploadDescription, _ prepared: PreparedSource,
        _ wire: XMLMultipartProtocol, _ checkpoint: UploadCheckpoint, _ tally: PartsTally
    ) async throws(StorageError) {
        guard let file = prepared.file else { throw .internalError("Only a file is uploaded in parts.") }
        try await prepared.checkUnchanged()
        let verifies = storage.configuration.verifiesChecksums
        let inline = verifies && transportReadsFileRegions ? InlineChecksum(of: offset..<offset + length) : nil
        let sentCRC32C = verifies && inline == nil ? try await Self.crc32c(of: file, from: offset, length: length) : nil
        let request = wire.part(
            uploadID: checkpoint.parts.uploadID ?? "", bucket: upload.bucket, name: upload.objectName, number: number,
            body: HTTPRequestBody(segments: [
                .fileRegion(
                    inline.map { HashingBodyFile(file: file, checksum: $0) } ?? file, offset: offset, length: length)
            ]),
            crc32c: sentCRC32C)
        var executor = CallExecutor(storage: storage, operation: .upload)
        // A part is idempotent: sent again, it replaces itself.
        let response = try await executor.execute(
            request, idempotency: .idempotent, accepting: [200], about: .object(upload.objectName),
            sentChecksum: sentCRC32C != nil, progress: { sent in tally.sending(number, min(sent, length)) },
            beforeEachAttempt: { () async throws(StorageError) in try await prepared.checkUnchanged() },
            afterEachFailure: { tally.sending(number, 0) })
        let crc32c = try await inline?.value(reading: file) ?? sentCRC32C
        let etag = try wire.partETag(from: response, crc32c: crc32c)
        checkpoint.partStored(number, PartsCheckpoint.Part(etag: etag, crc32c: crc32c, size: length))
        tally.stored(number, length)
    }

    /// Assembles the parts into the object and checks what was stored: its size and its CRC32C
    /// against the parts' combined. A wrong object is deleted, never left looking like a success.
    private func complete(
        _ upload: UploadDescription, _ prepared: PreparedSource, _ wire: XMLMultipartProtocol,
        _ checkpoint: UploadCheckpoint, _ executor: inout CallExecutor
    ) async throws(StorageError) -> StorageMetadata {
        let parts = checkpoint.parts.stored.sorted { $0.key < $1.key }
        guard let id = checkpoint.parts.uploadID else { throw .internalError("No multipart upload to complete.") }
        let request = wire.complete(
            uploadID: id, bucket: upload.bucket, name: upload.objectName,
            parts: parts.map { ($0.key, $0.value.etag) })
        var assembledDespiteStop: StorageMetadata?
        let attemptsBefore = executor.attemptCount
        do throws(StorageError) {
            // Shielded: once the parts are assembled, a pause or cancel waits for the answer.
            // Idempotent: the upload id is assembled at most once; a repeat finds it gone (404).
            let response = try await executor.execute(
                request, idempotency: .idempotent, accepting: [200, 404], about: .object(upload.objectName),
                shield: .onceSent,
                beforeEachAttempt: { () async throws(StorageError) in try await prepared.checkUnchanged() })
            // A repeated Complete finds the upload gone when the first one assembled it.
            if response.status == 404, executor.attemptCount - attemptsBefore <= 1 {
                throw response.storageError(about: .object(upload.objectName))
            }
        } catch let error where error.code == .cancelled {
            // The stop aborted Complete, or ended the wait to send it again.
            guard let stored = await assembled(afterCancelling: id, upload, wire, executor) else { throw error }
            assembledDespiteStop = stored
        }
        checkpoint.parts.uploadID = nil
        return try await checkAssembled(assembledDespiteStop, parts: parts.map(\.value), upload, prepared, executor)
    }

    /// Checks the object Complete assembled (`assembled`, when a stop raced Complete and the
    /// engine found it; otherwise read now): its size, and its CRC32C against the `parts`'
    /// combined. Runs to its end even if the task is paused or cancelled meanwhile.
    private func checkAssembled(
        _ assembled: StorageMetadata?, parts: [PartsCheckpoint.Part], _ upload: UploadDescription,
        _ prepared: PreparedSource, _ executor: CallExecutor
    ) async throws(StorageError) -> StorageMetadata {
        var sent: UInt32? = parts.first?.crc32c
        for part in parts.dropFirst() {
            if let whole = sent, let next = part.crc32c {
                sent = CRC32C.combine(whole, next, secondLength: part.size)
            } else {
                sent = nil
            }
        }
        let combined = sent
        // The object is assembled: its check ends even if the task is paused or cancelled now.
        return try await Self.whateverStops(executor) { [self] (executor) throws(StorageError) -> StorageMetadata in
            let stored: StorageMetadata
            if let assembled {
                stored = assembled
            } else {
                stored = try await storedMetadata(upload, &executor)
            }
            var problem: StorageError?
            do throws(StorageError) {
                try await prepared.checkUnchanged()
            } catch {
                problem = error
            }
            if problem == nil, stored.size != prepared.size {
                problem = StorageError(
                    .nonMatchingChecksum, "The server stored \(stored.size) bytes, but \(prepared.size) were sent.")
            }
            return try await accept(stored, sent: combined, problem: problem, upload, &executor)
        }
    }

    /// The object the server assembled although a pause or cancel aborted Complete; nil when
    /// it did not. The abort cannot take back bytes already written, so a stop that lands as the
    /// request goes out may leave the server completing it. Asked once, from a task of its own
    /// (this one is cancelled): the upload is gone (this run never aborted it) and an object of
    /// the upload's size stands under its name. It is then checked as after any Complete, and
    /// success wins over the late stop; otherwise the stop goes on and aborts the upload.
    private func assembled(
        afterCancelling id: String, _ upload: UploadDescription, _ wire: XMLMultipartProtocol,
        _ executor: CallExecutor
    ) async -> StorageMetadata? {
        let list = wire.listParts(uploadID: id, bucket: upload.bucket, name: upload.objectName, after: 0)
        return await Self.whateverStops(executor) { (executor) -> StorageMetadata? in
            guard
                let response = await executor.sendOnce(list, accepting: [200, 404], about: .object(upload.objectName)),
                response.status == 404
            else { return nil }
            return try? await storedCopy(of: upload, &executor)
        }
    }

    /// Aborts the multipart upload a run left, so that the server keeps none of its parts.
    /// Best effort, from a task of its own (the run's may be cancelled).
    func abortParts(_ checkpoint: UploadCheckpoint) async {
        let parts = checkpoint.parts
        guard let id = parts.uploadID else { return }
        checkpoint.parts = PartsCheckpoint()
        let wire = XMLMultipartProtocol(baseURL: storage.endpoint.baseURL, options: storage.options)
        let request = wire.abort(uploadID: id, bucket: storage.bucket, name: parts.objectName)
        let executor = CallExecutor(storage: storage, operation: .upload)
        await Self.whateverStops(executor) { executor in
            _ = await executor.sendOnce(request, accepting: [200, 204, 404], about: .object(parts.objectName))
        }
    }
}

/// The bytes of a parallel upload: the parts stored, plus what each part in flight has sent,
/// reported as one number.
private final class PartsTally: Sendable {
    private struct State {
        var stored: Int64
        var inFlight: [Int: Int64] = [:]
    }

    private let state: Mutex<State>
    private let progress: @Sendable (Int64) -> Void

    init(stored: Int64, report progress: @escaping @Sendable (Int64) -> Void) {
        state = Mutex(State(stored: stored))
        self.progress = progress
    }

    func sending(_ part: Int, _ sent: Int64) {
        let total = state.withLock { state in
            state.inFlight[part] = sent
            return state.stored + state.inFlight.values.reduce(0, +)
        }
        progress(total)
    }

    func stored(_ part: Int, _ size: Int64) {
        let total = state.withLock { state in
            state.inFlight[part] = nil
            state.stored += size
            return state.stored + state.inFlight.values.reduce(0, +)
        }
        progress(total)
    }

    func report() {
        progress(state.withLock { $0.stored + $0.inFlight.values.reduce(0, +) })
    }
}
