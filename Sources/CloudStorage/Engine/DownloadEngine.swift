import HTTP1
import HTTPClient
import Synchronization
import SystemCalls

/// What a download has received so far: its state machine, shared by the engine, the response
/// sink (on the transport's thread) and, across pauses, the task.
///
/// A sliced download keeps one checkpoint per slice: this one's machine reads the first slice,
/// and ``slices`` holds the others' once the first answer planned them.
final class DownloadCheckpoint: Sendable {
    let machine: Mutex<RangedDownloadStateMachine>
    /// Where an inflated body stands (``RangedDownloadStateMachine/BodyCoding/inflates``).
    let inflater: DownloadInflater
    /// The checkpoints of the slices after the first (``RangedDownloadStateMachine/slicePlan``),
    /// in order; empty for a download that is not sliced.
    let slices = Mutex<[DownloadCheckpoint]>([])
    /// When the head of the answer being read arrived, and the process's processor time then,
    /// while the machine measures its first connection (``RangedDownloadStateMachine/probeStart``);
    /// nil otherwise.
    let probeBegan = Mutex<(instant: ContinuousClock.Instant, processorTime: Duration)?>(nil)

    init(_ setup: RangedDownloadStateMachine.Setup) {
        machine = Mutex(RangedDownloadStateMachine(setup: setup))
        inflater = DownloadInflater(maxSize: setup.maxSize)
    }

    /// Bytes written to the destination, in order from the range's start.
    var received: Int64 { machine.withLock { $0.received } }

    /// The bytes every slice received, and how many the download delivers in all when known:
    /// one number however many slices run.
    var progress: (received: Int64, total: Int64?) {
        let (received, expected, size) = machine.withLock { ($0.received, $0.expectedLength, $0.objectSize) }
        let slices = slices.withLock { $0 }
        guard !slices.isEmpty else { return (received, expected) }
        return (slices.reduce(received) { $0 + $1.received }, size)
    }

    /// The time since ``probeBegan`` once it reached `duration`, and the processor time the
    /// process used meanwhile (the measure then ends: later calls return nil); nil before, and
    /// when nothing is measured.
    func probeElapsed(atLeast duration: Duration) -> RangedDownloadStateMachine.ProbeMeasure? {
        probeBegan.withLock { began in
            guard let start = began else { return nil }
            let elapsed = ContinuousClock.now - start.instant
            guard elapsed >= duration else { return nil }
            began = nil
            return .init(elapsed: elapsed, processorTime: SystemCall.processCPUTime() - start.processorTime)
        }
    }

    /// Whether every byte the machine asks for arrived.
    var isComplete: Bool { machine.withLock { $0.received == $0.expectedLength } }

    /// Makes the checkpoints of the slices the first answer planned, once; the first call
    /// returns them, any later one nothing.
    func planSlices() -> [DownloadCheckpoint] {
        let (plan, pinned, setup) = machine.withLock { ($0.slicePlan, $0.pinnedObject, $0.setup) }
        guard let plan, let pinned else { return [] }
        return slices.withLock { slices in
            guard slices.isEmpty else { return [] }
            slices = plan.map { range in
                var slice = setup
                (slice.range, slice.pinned, slice.slicing, slice.isRewindable) = (range, pinned, nil, false)
                return DownloadCheckpoint(slice)
            }
            return slices
        }
    }
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
        let transportDecodes = storage.transport.carrier(for: storage.endpoint.baseURL).capabilities
            .contains(.decodesContentCoding)
        let downloads = storage.configuration.downloads
        // Slices write side by side, each asking for the generation the first answer named: a
        // destination that takes positioned writes, the whole object, and a protocol that pins.
        let slices =
            destination.writesAtAnyOffset && range == nil && maxSize == nil && storage.objectProtocol.pinsGenerations
            && downloads.sliceCount > 1
        return DownloadCheckpoint(
            RangedDownloadStateMachine.Setup(
                range: range, generation: generation,
                // A reference or a caller that names a generation needs no pin of its own; the
                // caller's `412` must stay a failed precondition, not an object that changed.
                pinsResumptions: storage.objectProtocol.pinsGenerations && generation == nil
                    && preconditions.ifGenerationMatch == nil,
                isRewindable: destination.isRewindable, maxSize: maxSize,
                decodesGzip: storage.configuration.decompressesDownloads, transportDecodes: transportDecodes,
                slicing: slices
                    ? RangedDownloadStateMachine.Slicing(
                        threshold: downloads.slicingThreshold, count: downloads.sliceCount,
                        probe: downloads.slicingProbe) : nil))
    }

    /// Downloads, or continues downloading, every byte of the object.
    ///
    /// A download that may be sliced runs the first slice's machine, and once its first answer
    /// planned the others (or, after a pause, at once), one more loop per slice beside it, each
    /// with its own requests and retries; the first failure stops the rest. The slices' CRC32Cs
    /// are combined into the object's and compared with the server's.
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
        let (name, _) = try path.validatedObject(generation: generation, on: storage.endpoint)
        try preconditions.validate(for: storage.endpoint)
        let events = storage.configuration.events.emitter()
        let received: Int64
        do throws(StorageError) {
            if checkpoint.machine.withLock({ $0.setup.slicing == nil }) {
                received = try await download(checkpoint, of: checkpoint, name: name, progress: progress, announce: nil)
            } else {
                received = try await downloadSlices(checkpoint, name: name, progress: progress)
            }
        } catch {
            reportVerdict(on: name, nil, error, events)
            throw error
        }
        let slices = checkpoint.slices.withLock { $0 }
        guard slices.isEmpty else {
            // The slices' combined CRC32C matched the server's, when it reported one.
            let reported = checkpoint.machine.withLock { $0.serverCRC32C } != nil
            reportVerdict(on: name, reported ? .matched : .notCheckable("the server reported no CRC32C"), nil, events)
            return received
        }
        guard checkpoint.machine.withLock({ $0.coding?.inflates }) == true else {
            reportVerdict(on: name, checkpoint.machine.withLock { $0.checksumVerdict }, nil, events)
            return received
        }
        do throws(StorageError) {
            try checkpoint.inflater.finish()
            // A body compressed on the way out is checked once inflated: the CRC32C describes those bytes.
            let crc = checkpoint.inflater.crc
            try checkpoint.machine.withLock { (machine) throws(StorageError) in try machine.checkInflated(crc: crc) }
        } catch {
            reportVerdict(on: name, nil, error, events)
            throw error
        }
        reportVerdict(on: name, checkpoint.machine.withLock { $0.checksumVerdict }, nil, events)
        return checkpoint.inflater.written
    }

    /// Runs `part`'s machine (the whole download's, or one slice's) until it finishes or fails.
    ///
    /// - Parameters:
    ///   - whole: The download's checkpoint, for progress across slices.
    ///   - announce: Takes the other slices' checkpoints once the first answer planned them.
    /// - Returns: The bytes `part` received.
    private func download(
        _ part: DownloadCheckpoint, of whole: DownloadCheckpoint, name: String,
        progress: @escaping @Sendable (Int64, Int64?) -> Void,
        announce: (@Sendable ([DownloadCheckpoint]) -> Void)?
    ) async throws(StorageError) -> Int64 {
        var executor = CallExecutor(storage: storage, operation: .download)
        var event = RangedDownloadStateMachine.Event.began
        while true {
            switch part.machine.withLock({ $0.next(event) }) {
            case .request(let read):
                let sink = sink(part, of: whole, answering: read, progress: progress, announce: announce)
                event = await send(read, name: name, sink: sink, &executor)
            case .backOff(let failure, let newHigh):
                if newHigh { executor.madeProgress() }
                try await executor.backOff(after: failure)
                event = .done
            case .finish(let received):
                return received
            case .fail(let error):
                throw error
            }
        }
    }

    /// Runs the first slice and, once it planned them, the others beside it; then checks the
    /// object's CRC32C from theirs. Below the threshold the first "slice" is the whole object.
    ///
    /// - Returns: The bytes received in all.
    private func downloadSlices(
        _ checkpoint: DownloadCheckpoint, name: String, progress: @escaping @Sendable (Int64, Int64?) -> Void
    ) async throws(StorageError) -> Int64 {
        let (planned, announcer) = AsyncStream.makeStream(of: [DownloadCheckpoint].self, bufferingPolicy: .unbounded)
        let failure = await withTaskGroup(of: StorageError?.self) { group -> StorageError? in
            group.addTask {
                defer { announcer.finish() }
                do throws(StorageError) {
                    _ = try await download(checkpoint, of: checkpoint, name: name, progress: progress) { slices in
                        announcer.yield(slices)
                        announcer.finish()
                    }
                    return nil
                } catch {
                    return error
                }
            }
            // After a pause the slices are known: they all continue at once.
            var slices = checkpoint.slices.withLock { $0 }
            if slices.isEmpty {
                for await announced in planned { slices = announced }
            }
            for slice in slices {
                group.addTask {
                    do throws(StorageError) {
                        _ = try await download(slice, of: checkpoint, name: name, progress: progress, announce: nil)
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            // The first failure ends the download; the other slices' cancellations follow it.
            var first: StorageError?
            for await failure in group {
                guard let failure, first == nil else { continue }
                first = failure
                group.cancelAll()
            }
            return first
        }
        if let failure { throw failure }
        let slices = checkpoint.slices.withLock { $0 }
        guard !slices.isEmpty else { return checkpoint.received }
        let parts = [checkpoint] + slices
        if parts.contains(where: { !$0.isComplete }) {
            // A pause or cancel stopped the wait for the plan before the other slices started
            // (the first may still have finished its own): they start with the next run.
            throw Task.isCancelled ? .cancelled() : .internalError("A slice of the download ended without its bytes.")
        }
        return try Self.verifySlices(parts)
    }

    /// Checks the object's CRC32C, as the server reported it, against the slices' combined.
    ///
    /// - Returns: The bytes received in all.
    /// - Throws: ``StorageErrorCode/nonMatchingChecksum`` when they differ.
    static func verifySlices(_ parts: [DownloadCheckpoint]) throws(StorageError) -> Int64 {
        var combined = CRC32C().value
        var total: Int64 = 0
        for part in parts {
            let (crc, received) = part.machine.withLock { ($0.crc.value, $0.received) }
            combined = CRC32C.combine(combined, crc, secondLength: received)
            total += received
        }
        let expected = parts.first?.machine.withLock { $0.serverCRC32C }
        if let expected, expected != combined {
            throw StorageError(
                .nonMatchingChecksum,
                "The downloaded slices' combined CRC32C (\(CRC32CEncoding.base64(combined))) differs from the server's (\(CRC32CEncoding.base64(expected)))."
            )
        }
        return total
    }

    /// Sends `read`, its answer streaming through the machine into the destination, and tells
    /// what came of it.
    private func send(
        _ read: MediaRead, name: String, sink: HTTPResponseSink, _ executor: inout CallExecutor
    ) async -> RangedDownloadStateMachine.Event {
        let wire = storage.objectProtocol
        var request = wire.media(bucket: storage.bucket, name: name, read, preconditions: preconditions)
        request.responseSink = sink
        do throws(StorageError) {
            switch try await executor.send(
                request, idempotency: .idempotent, accepting: wire.mediaAnswerStatuses, about: .object(name))
            {
            case .answer: return .answered
            case .retryable(let failure): return .retryableFailure(failure)
            }
        } catch {
            return .failed(error)
        }
    }

    /// The sink that hands an answer's head to the wire protocol and its verdict to the
    /// machine, then writes the body where the machine says.
    ///
    /// - Parameters:
    ///   - checkpoint: The machine the answer is for: the download's, or one slice's.
    ///   - whole: The download's checkpoint, whose progress counts every slice.
    ///   - announce: Takes the other slices once this answer planned them: at its head, or when
    ///     the measure of the first connection ended below the probe's rate.
    private func sink(
        _ checkpoint: DownloadCheckpoint,
        of whole: DownloadCheckpoint,
        answering read: MediaRead,
        progress: @escaping @Sendable (Int64, Int64?) -> Void,
        announce: (@Sendable ([DownloadCheckpoint]) -> Void)?
    ) -> HTTPResponseSink {
        HTTPResponseSink(
            begin: headHandler(checkpoint, of: whole, answering: read, progress: progress, announce: announce),
            receive: bodyHandler(checkpoint, of: whole, progress: progress, announce: announce))
    }

    /// The sink's `begin`: checks the answer's head, lets the machine judge it, and prepares the
    /// destination (starting it over, taking the metadata, planning the slices) as it says.
    ///
    /// Returns false for an error status, whose body is then collected rather than written.
    private func headHandler(
        _ checkpoint: DownloadCheckpoint,
        of whole: DownloadCheckpoint,
        answering read: MediaRead,
        progress: @escaping @Sendable (Int64, Int64?) -> Void,
        announce: (@Sendable ([DownloadCheckpoint]) -> Void)?
    ) -> @Sendable (Int, HTTPHeaders) throws(StorageError) -> Bool {
        let destination = destination
        let (bucket, path) = (storage.bucket, path.string)
        let inflater = checkpoint.inflater
        let wire = storage.objectProtocol
        let statuses = wire.mediaAnswerStatuses
        return { (status, headers) throws(StorageError) -> Bool in
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
                if let announce {
                    Self.announceSlices(of: whole, to: announce)
                    let measures = checkpoint.machine.withLock { $0.probeStart != nil }
                    let began = measures ? (ContinuousClock.now, SystemCall.processCPUTime()) : nil
                    checkpoint.probeBegan.withLock { $0 = began }
                }
                Self.reportProgress(progress, of: checkpoint, in: whole, own: (received, expected))
                return true
            case .startOver(let error):
                try destination.reset()
                inflater.reset()
                throw error
            case .abort(let error):
                throw error
            }
        }
    }

    /// The sink's `receive`: writes each piece of the body where the machine says (inflating it
    /// when it must), ends the request once the range is complete, and ends the measure of the
    /// first connection once it lasted the probe's duration (planning the slices it calls for).
    private func bodyHandler(
        _ checkpoint: DownloadCheckpoint,
        of whole: DownloadCheckpoint,
        progress: @escaping @Sendable (Int64, Int64?) -> Void,
        announce: (@Sendable ([DownloadCheckpoint]) -> Void)?
    ) -> @Sendable (UnsafeRawBufferPointer) throws(StorageError) -> HTTPResponseSink.Demand {
        let destination = destination
        let inflater = checkpoint.inflater
        let probe = checkpoint.machine.withLock { $0.setup.slicing?.probe }
        return { (raw) throws(StorageError) -> HTTPResponseSink.Demand in
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
                    try destination.write(bytes, at: delivery.sliceStart + delivery.offset)
                }
                var crc = delivery.crc
                crc.update(bytes)
                checkpoint.machine.withLock { $0.bodyWritten(delivery, crc: crc) }
                Self.reportProgress(
                    progress, of: checkpoint, in: whole,
                    own: delivery.sliceStart == 0 ? (delivery.end, delivery.expected) : nil)
                if let announce, let probe, let measure = checkpoint.probeElapsed(atLeast: probe.duration),
                    checkpoint.machine.withLock({ $0.probed(measure) })
                {
                    // This answer now ends where the first slice does.
                    Self.announceSlices(of: whole, to: announce)
                }
                // The rest of the answer is not wanted: the request ends as answered.
                return delivery.completesRange ? .enough : .more
            }
        }
    }

    /// Hands `announce` the slices `whole`'s machine planned, the first time it has any.
    private static func announceSlices(
        of whole: DownloadCheckpoint, to announce: @Sendable ([DownloadCheckpoint]) -> Void
    ) {
        let slices = whole.planSlices()
        if !slices.isEmpty { announce(slices) }
    }

    /// Reports the download's progress after `checkpoint` moved: its `own` count while it is
    /// the whole, unsliced download (and has one), else the sum over the whole's slices.
    private static func reportProgress(
        _ progress: @Sendable (Int64, Int64?) -> Void,
        of checkpoint: DownloadCheckpoint,
        in whole: DownloadCheckpoint,
        own: (received: Int64, expected: Int64?)?
    ) {
        if let own, whole === checkpoint, whole.slices.withLock({ $0.isEmpty }) {
            progress(own.received, own.expected)
        } else {
            let (received, total) = whole.progress
            progress(received, total)
        }
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
                ["object": .string(name), "verdict": "mismatched", "reason": .string(failure.message)])
            return
        }
        switch verdict {
        case .matched:
            events.emit(.checksumVerdict, .debug, "\(name): CRC32C matched", ["object": .string(name), "verdict": "matched"])
        case .notCheckable(let reason):
            events.emit(
                .checksumVerdict, .info, "\(name): not checkable: \(reason)",
                ["object": .string(name), "verdict": "not checkable", "reason": .string(reason)])
        case nil:
            break
        }
    }
}
