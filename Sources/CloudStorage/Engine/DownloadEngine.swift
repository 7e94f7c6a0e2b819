import HTTPClient
import Synchronization

/// What a download has received so far: its state machine, shared by the engine, the response
/// sink (on the transport's thread) and, across pauses, the task.
final class DownloadCheckpoint: Sendable {
    let machine: Mutex<RangedDownloadStateMachine>
    /// Where an inflated body stands (``RangedDownloadStateMachine/BodyCoding/inflates``).
    let inflater: DownloadInflater

    init(_ setup: RangedDownloadStateMachine.Setup) {
        machine = Mutex(RangedDownloadStateMachine(setup: setup))
        inflater = DownloadInflater(maxSize: setup.maxSize)
    }

    /// Bytes written to the destination, in order from the range's start.
    var received: Int64 { machine.withLock { $0.received } }
}

/// Carries one download: performs what its ``RangedDownloadStateMachine`` decides — GET the
/// media the wire protocol builds for each read, stream the body into the destination, back off
/// between retries — and hands the machine the wire protocol's verdict on each answer, never
/// the answer.
struct DownloadEngine: Sendable {
    let storage: Storage
    let path: StoragePath
    /// The generation the reference is pinned to; nil for the live object.
    var generation: Int64? = nil
    let destination: any DownloadDestination
    /// The most bytes the download may hold (``StorageReference/getData(maxSize:preconditions:)``).
    let maxSize: Int64?
    /// The caller's conditions, sent with every request.
    var preconditions = StoragePreconditions.none
    /// The bytes wanted, or nil for the whole object (verified with its CRC32C).
    var range: ByteRange? = nil

    /// A checkpoint for a download of this engine's object into its destination, with nothing received.
    func makeCheckpoint() -> DownloadCheckpoint {
        DownloadCheckpoint(
            RangedDownloadStateMachine.Setup(
                range: range, generation: generation,
                // A reference or a caller that names a generation needs no pin of its own; the
                // caller's `412` must stay a failed precondition, not an object that changed.
                pinsResumptions: storage.objectProtocol.pinsGenerations && generation == nil
                    && preconditions.ifGenerationMatch == nil,
                isRewindable: destination.isRewindable, maxSize: maxSize,
                decodesGzip: storage.configuration.decompressesDownloads,
                transportDecodes: storage.transport.carrier(for: storage.endpoint.baseURL).capabilities
                    .contains(.decodesContentCoding)))
    }

    /// Downloads, or continues downloading, every byte of the object.
    ///
    /// - Parameters:
    ///   - checkpoint: What earlier runs received (from ``makeCheckpoint()``); updated as bytes arrive.
    ///   - progress: Called with the received byte count and the size, when known.
    /// - Returns: The number of bytes downloaded (decoded, for an inflated gzip object).
    /// - Throws: The ``StorageError`` that ended the download;
    ///   ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    func run(
        checkpoint: DownloadCheckpoint,
        progress: @escaping @Sendable (_ received: Int64, _ total: Int64?) -> Void
    ) async throws(StorageError) -> Int64 {
        let (name, _) = try StorageReference.validatedObject(path, generation: generation, on: storage.endpoint)
        try preconditions.validate(for: storage.endpoint)
        var runner = RequestRunner(storage: storage, operation: .download)
        var event = RangedDownloadStateMachine.Event.began
        while true {
            switch checkpoint.machine.withLock({ $0.next(event) }) {
            case .request(let read):
                event = await send(read, name: name, checkpoint, &runner, progress: progress)
            case .backOff(let failure, let newHigh):
                if newHigh { runner.madeProgress() }
                try await runner.backOff(after: failure)
                event = .done
            case .finish(let received):
                reportVerdict(on: name, checkpoint.machine.withLock { $0.checksumVerdict }, nil, runner.events)
                guard checkpoint.machine.withLock({ $0.coding?.inflates }) == true else { return received }
                try checkpoint.inflater.finish()
                return checkpoint.inflater.written
            case .fail(let error):
                reportVerdict(on: name, nil, error, runner.events)
                throw error
            }
        }
    }

    /// Sends `read`, its answer streaming through the machine into the destination, and tells
    /// what came of it.
    private func send(
        _ read: MediaRead,
        name: String,
        _ checkpoint: DownloadCheckpoint,
        _ runner: inout RequestRunner,
        progress: @escaping @Sendable (Int64, Int64?) -> Void
    ) async -> RangedDownloadStateMachine.Event {
        let wire = storage.objectProtocol
        var request = wire.media(bucket: storage.bucket, name: name, read, preconditions: preconditions)
        request.responseSink = sink(checkpoint, answering: read, progress: progress)
        do throws(StorageError) {
            switch try await runner.send(request, accepting: wire.mediaAnswerStatuses, about: .object(name)) {
            case .answer: return .answered
            case .retryable(let failure): return .retryableFailure(failure)
            }
        } catch {
            return .failed(error)
        }
    }

    /// The sink that hands an answer's head to the wire protocol and its verdict to the
    /// machine, then writes the body where the machine says.
    private func sink(
        _ checkpoint: DownloadCheckpoint,
        answering read: MediaRead,
        progress: @escaping @Sendable (Int64, Int64?) -> Void
    ) -> HTTPResponseSink {
        let destination = destination
        let (bucket, path) = (storage.bucket, path.string)
        let inflater = checkpoint.inflater
        let wire = storage.objectProtocol
        let statuses = wire.mediaAnswerStatuses
        return HTTPResponseSink(
            begin: { (status, headers) throws(StorageError) -> Bool in
                guard statuses.contains(status) else { return false }  // an error: collect its body
                let head = try wire.mediaHead(status: status, headers: headers, answering: read)
                // File I/O outside the lock, on the transport's thread.
                switch checkpoint.machine.withLock({ $0.headArrived(head) }) {
                case .deliver(let received, let expected, let discardingWritten, _):
                    if discardingWritten {
                        try destination.reset()
                        inflater.reset()
                    }
                    if destination.wantsMetadata {
                        destination.received(StorageMetadata(mediaHeaders: headers, bucket: bucket, path: path))
                    }
                    progress(received, expected)
                    return true
                case .startOver(let error):
                    try destination.reset()
                    inflater.reset()
                    throw error
                case .abort(let error):
                    throw error
                }
            },
            receive: { (raw) throws(StorageError) -> HTTPResponseSink.Demand in
                // Only this request's sink writes while it runs, so the offset the machine
                // gives stays valid across the unlocked write.
                switch checkpoint.machine.withLock({ $0.bodyArrived(raw.count) }) {
                case .skip:
                    return .more
                case .abort(let error):
                    throw error
                case .write(let delivery):
                    let bytes = UnsafeRawBufferPointer(
                        rebasing: raw[delivery.dropped..<(delivery.dropped + delivery.count)])
                    if delivery.inflates {
                        try inflater.write(bytes, to: destination)
                    } else if !bytes.isEmpty {
                        try destination.write(bytes, at: delivery.offset)
                    }
                    var crc = delivery.crc
                    crc.update(bytes)
                    checkpoint.machine.withLock { $0.bodyWritten(delivery, crc: crc) }
                    progress(delivery.end, delivery.expected)
                    // The rest of the answer is not wanted: the request ends as answered.
                    return delivery.completesRange ? .enough : .more
                }
            }
        )
    }

    /// Reports what the download concluded about its checksum: matched, not checkable (and why),
    /// or mismatched when it failed with ``StorageErrorCode/nonMatchingChecksum``.
    private func reportVerdict(
        on name: String, _ verdict: RangedDownloadStateMachine.ChecksumVerdict?, _ failure: StorageError?,
        _ events: StorageEventEmitter
    ) {
        if let failure {
            guard failure.code == .nonMatchingChecksum else { return }
            events.emit(
                .checksumVerdict, .warning, "\(name): mismatched: \(failure.message)",
                ["object": name, "verdict": "mismatched", "reason": failure.message])
            return
        }
        switch verdict {
        case .matched:
            events.emit(.checksumVerdict, .debug, "\(name): CRC32C matched", ["object": name, "verdict": "matched"])
        case .notCheckable(let reason):
            events.emit(
                .checksumVerdict, .info, "\(name): not checkable: \(reason)",
                ["object": name, "verdict": "not checkable", "reason": reason])
        case nil:
            break
        }
    }
}
