import SystemCalls

/// A download of an object's bytes, or of one range of them, as a pure value: verdicts in,
/// actions out. ``DownloadEngine`` performs the actions (requests, waits, writes to the
/// destination) and feeds back what came of each; this type decides them, so every sequence
/// of server answers can be tested without a network, a clock or a lock.
///
/// It has two kinds of input, both under the lock of the ``DownloadCheckpoint`` that keeps it
/// across the runs (pauses) of one download:
/// - the run's events, through ``next(_:)``: the run began, a request's answer ended, it failed;
/// - while an answer streams, on the transport's thread: its head, as the wire protocol's
///   verdict (``MediaHead``, from ``ObjectWireProtocol/mediaHead(status:headers:answering:)``),
///   through ``headArrived(_:)``; its body, chunk by chunk, through ``bodyArrived(_:)`` and
///   ``bodyWritten(_:crc:)``.
///
/// The machine never reads HTTP. It pins the generation the first answer came from, so a
/// resumption never mixes two generations' bytes: later requests ask for it
/// (``MediaRead/expectedGeneration``, where the protocol can), and an answer that names another
/// generation, size or checksum means the object changed. A destination that can take its
/// bytes back then starts over (a few times at most); one that cannot (a stream) ends with
/// ``StorageErrorCode/objectChanged``. The end is checked: the length the answers promised and,
/// for the whole object, the CRC32C the server reported. An event the machine did not ask for
/// ends the download with ``StorageErrorCode/internalError``; nothing traps.
///
/// A range is a ``Setup`` value, so a download cut into slices is one machine per slice, each
/// resuming on its own. A download that may be sliced (``Setup/slicing``) decides it on its
/// first answer: an object of at least the threshold, stored as it is served, with a
/// generation, keeps only the first slice for itself (the rest of that answer is cut off) and
/// names the others in ``slicePlan``; the engine runs one machine for each, set up with the
/// object the first answer described (``Setup/pinned``). Every request of a slice asks for that
/// generation, and a slice never starts over: its bytes sit beside other slices' in one file,
/// so an object that changed ends the download with ``StorageErrorCode/objectChanged``. The verdict carries how the object is stored
/// (``MediaHead/storedEncoding``) beside how the body is encoded, and the machine decides the
/// answer's ``BodyCoding`` from both: stored bytes as they are, stored gzip bytes the engine
/// inflates (the default for a gzip object: the CRC32C checks the bytes that crossed the wire
/// and a `Range` continues them), or bytes someone else decoded (Cloud Storage's decompressive
/// transcoding, or a transport that decodes), which no checksum or size describes and which a
/// resumption asks for whole, skipping what it already has.
///
/// The retry time is not the machine's: it says when to back off and whether the bytes
/// received reached a new high (which restarts the retry deadline), and
/// ``CallExecutor/backOff(after:)`` measures the time.
struct RangedDownloadStateMachine: Sendable {
    /// What one download is; the same for every run.
    struct Setup: Sendable, Equatable {
        /// The bytes wanted, or nil for the whole object (verified with its CRC32C).
        var range: ByteRange?
        /// The generation the reference names; nil for the live object.
        var generation: Int64?
        /// Whether a resumption asks for the generation the first answer came from: the
        /// protocol can (``ObjectWireProtocol/pinsGenerations``), and neither the reference nor
        /// the caller's preconditions name one already.
        var pinsResumptions = false
        /// Whether the destination can take back what was written (``DownloadDestination/isRewindable``).
        var isRewindable = true
        /// The most bytes the download may hold.
        var maxSize: Int64?
        /// Whether a gzip-stored object is delivered decoded (its original bytes) rather than as
        /// stored. A range always addresses, and delivers, the stored bytes.
        var decodesGzip = true
        /// Whether the download delivers the stored bytes as they are, whatever their encoding:
        /// asked for (``decodesGzip`` off), or a range, which addresses the stored bytes. Bytes
        /// someone else decoded (``BodyCoding/transcoded``) can then not be delivered.
        var wantsStoredBytes: Bool { !decodesGzip || range != nil }
        /// Whether the transport decodes gzip bodies itself (``HTTPClient/HTTPTransportCapabilities/decodesContentCoding``).
        var transportDecodes = false
        /// When the first answer cuts the download into slices; nil never slices.
        var slicing: Slicing?
        /// For a slice after the first: the object the first answer described, which every
        /// answer must serve.
        var pinned: PinnedObject?
    }

    /// When a download is cut into slices: objects of at least `threshold` bytes, into `count`,
    /// once `probe` found the first connection not enough (nil: at the first answer).
    struct Slicing: Sendable, Equatable {
        var threshold: Int64
        var count: Int
        var probe: StorageConfiguration.Downloads.SlicingProbe? = nil
    }

    /// The object a sliced download reads, as its first answer described it.
    struct PinnedObject: Sendable, Equatable {
        var generation: Int64
        var size: Int64
        var crc32c: UInt32?
    }

    /// What an answer's body is, next to the stored object's bytes.
    enum BodyCoding: Sendable, Equatable {
        /// The stored bytes, delivered as they are.
        case stored
        /// The stored bytes, gzip, which the engine inflates before delivering them.
        case inflated
        /// Decoded before it arrived (the server's decompressive transcoding, or the
        /// transport): neither the stored size nor the CRC32C describes it, and a `Range`
        /// would address other bytes than those delivered.
        case transcoded
        /// gzip made on the way out of bytes stored uncompressed, which the engine inflates:
        /// unverifiable, and not resumable (another answer may compress differently).
        case compressedInTransit

        /// Whether the stored size and CRC32C describe the body.
        var isStoredBytes: Bool { self == .stored || self == .inflated }
        /// Whether the engine inflates the body before delivering it.
        var inflates: Bool { self == .inflated || self == .compressedInTransit }
    }

    /// What the engine does next. Each is answered by the ``Event`` its description names.
    enum Action: Sendable {
        /// Send the read, streaming the answer's head and body to the machine
        /// → ``Event/answered``, ``Event/retryableFailure(_:)`` or ``Event/failed(_:)``.
        case request(MediaRead)
        /// Wait before retrying after `failure`, or end the download when the retry time ran
        /// out (``CallExecutor/backOff(after:)``); `newHigh` first restarts the retry deadline
        /// (``CallExecutor/madeProgress()``) → ``Event/done``.
        case backOff(after: StorageError, newHigh: Bool)
        /// Every byte arrived and was verified: the download holds this many.
        case finish(Int64)
        /// End the download with this error.
        case fail(StorageError)
    }

    /// What came of an action.
    enum Event: Sendable {
        /// A run begins (the first event of every run).
        case began
        /// The answer to the request ended after its whole body.
        case answered
        /// The request failed in a way that may pass (a retryable status, a lost connection).
        case retryableFailure(StorageError)
        /// The request failed for good: an error status, or what the response sink threw
        /// (including the abort that ends an answer running past the range).
        case failed(StorageError)
        /// A back-off was waited out.
        case done
    }

    /// What to do with an answer whose head arrived.
    enum HeadAction: Sendable {
        /// Stream its body, coded as `coding` says: first reset the destination (and the
        /// engine's inflater) when `discardingWritten` (the bytes of a replaced generation),
        /// then report `received` of `expected` as progress.
        case deliver(received: Int64, expected: Int64?, discardingWritten: Bool, coding: BodyCoding)
        /// The object changed: reset the destination, then abort the answer with this error
        /// (the run's next request starts over).
        case startOver(StorageError)
        /// Abort the answer with this error.
        case abort(StorageError)
    }

    /// What to do with a chunk of an answer's body.
    enum BodyAction: Sendable {
        /// Write part of it (then report ``bodyWritten(_:crc:)``).
        case write(Delivery)
        /// Drop all of it: it precedes the bytes wanted.
        case skip
        /// Abort the answer with this error.
        case abort(StorageError)
    }

    /// The part of a chunk to write: `count` bytes after the first `dropped`, at `offset`.
    struct Delivery: Sendable, Equatable {
        var dropped: Int
        var count: Int
        var offset: Int64
        /// The CRC32C of the bytes before `offset`, to extend with these.
        var crc: CRC32C
        /// How many bytes the download delivers in all, when known.
        var expected: Int64?
        /// Whether these bytes complete the range, so the rest of the answer is not wanted:
        /// the sink tells the transport it has enough, and the answer ends there.
        var completesRange: Bool
        /// Whether the engine inflates these stored gzip bytes before writing them (at the
        /// inflater's own offset, not `offset`).
        var inflates = false
        /// Where the slice starts in the destination, for a slice of a sliced download (whose
        /// `offset` counts from its own start); 0 otherwise.
        var sliceStart: Int64 = 0

        /// The offset after the last byte written.
        var end: Int64 { offset + Int64(count) }
    }

    /// How many times an object that changed under the download is downloaded again from its
    /// first byte in one run before the download fails.
    static let maxRestarts = 3

    let setup: Setup
    /// The bytes this machine downloads: the setup's range, or the first slice once the first
    /// answer cut the download into slices.
    private(set) var range: ByteRange?
    /// Whether this machine downloads one slice of a sliced download.
    private(set) var isSlice: Bool
    /// The slices after the first, once the first answer (or the probe) cut the download into slices.
    private(set) var slicePlan: [ByteRange]?
    /// While a download that may be sliced measures its first connection: the bytes received
    /// when the answer being read began (``probed(elapsed:)`` ends it).
    private(set) var probeStart: Int64?
    /// Bytes written to the destination, in order from the range's start.
    private(set) var received: Int64 = 0
    /// CRC32C of those bytes (what a download cut into ranged slices combines).
    private(set) var crc = CRC32C()
    /// The object's size, once an answer said it (nil while the bytes arrive transformed).
    private(set) var objectSize: Int64?
    /// The generation of the first answer that named one: every later answer must serve it.
    private var generation: Int64?
    /// The CRC32C the server reported for the stored object.
    private(set) var serverCRC32C: UInt32?
    /// What the answers' bodies are, once one arrived: every later answer must be the same.
    private(set) var coding: BodyCoding?
    /// Whether the transport, not the server, decoded a ``BodyCoding/transcoded`` body.
    private var transportDecoded = false
    /// Whether the bytes written came from a generation that was replaced: the next answer's
    /// head resets the destination (on the transport's thread, not the cooperative pool).
    private var discardPending = false
    private var restarts = 0
    /// What ``verify()`` concluded about the CRC32C of a download that finished, for events.
    private(set) var checksumVerdict: ChecksumVerdict?
    /// The most bytes received in this run: only passing it restarts the retry deadline.
    private var high: Int64 = 0
    private var phase = Phase.ready

    init(setup: Setup) {
        self.setup = setup
        range = setup.range
        isSlice = setup.pinned != nil
        if let pinned = setup.pinned {
            (generation, objectSize, serverCRC32C, coding) = (pinned.generation, pinned.size, pinned.crc32c, .stored)
        }
    }

    /// The ranges of `count` slices of an object of `size` bytes, in order, as even as can be
    /// (the first `size % count` one byte longer); fewer when the object has fewer bytes.
    static func slices(of size: Int64, count: Int) -> [ByteRange] {
        let count = Int64(max(1, min(Int64(count), size)))
        let (length, longer) = size.quotientAndRemainder(dividingBy: count)
        var start: Int64 = 0
        return (0..<count).map { index in
            let end = start + length + (index < longer ? 1 : 0) - 1
            defer { start = end + 1 }
            return ByteRange(start: start, end: end)
        }
    }

    /// Whether a finished download's bytes were checked against the server's CRC32C (a mismatch
    /// is no verdict here: the download fails with ``StorageErrorCode/nonMatchingChecksum``).
    enum ChecksumVerdict: Sendable, Equatable {
        case matched
        /// Why not.
        case notCheckable(String)
    }

    /// How many bytes the download delivers in all, when known: the object's size for the
    /// whole object; for a range, its part inside the object (Cloud Storage serves a range
    /// that runs past the end up to the last byte), or its own length before the size is known.
    var expectedLength: Int64? {
        guard let range else { return objectSize }
        guard let total = objectSize else { return range.end.map { $0 - range.start + 1 } }
        let last = min(range.end ?? (total - 1), total - 1)
        return max(0, last - range.start + 1)
    }

    /// Takes what came of the last action (``Event/began`` first in every run) and returns the next one.
    mutating func next(_ event: Event) -> Action {
        switch (phase, event) {
        case (_, .began):
            restarts = 0
            high = received
            return request()
        case (.waiting, .done):
            return request()
        case (.awaitingAnswer, .answered):
            return verify()
        case (.awaitingAnswer, .retryableFailure(let failure)):
            let newHigh = received > high
            high = max(high, received)
            phase = .waiting
            return .backOff(after: failure, newHigh: newHigh)
        case (.awaitingAnswer(let read, let answer), .failed(let error)):
            return recover(from: error, read, answer)
        default:
            return fail(.internalError("The download's state machine received an event it did not ask for."))
        }
    }

    /// The read that continues from the bytes received, or the end when there is none.
    private mutating func request() -> Action {
        // Every byte arrived before an earlier run was stopped, or before the connection broke:
        // a range from the end would be refused (416), and there is nothing left to ask for.
        if received > 0, received == expectedLength { return verify() }
        let start = range?.start ?? 0
        // Both terms are bounded by sizes an answer stated.
        let (offset, overflow) = start.addingReportingOverflow(received)
        guard !overflow else { return fail(.protocolViolation("The download's offset overflows.")) }
        if received > 0, coding == .compressedInTransit {
            // Compressed on the way out: another answer need not compress alike, so no byte of
            // this one can be continued. Start over where the destination can take them back.
            guard setup.isRewindable else {
                return fail(
                    .protocolViolation(
                        "The server compressed the download on the way out and the connection broke; a stream cannot start over."
                    ))
            }
            forgetReceived()
            discardPending = true
            return request()
        }
        // A slice pins from its first request: the other slices' bytes are of that generation.
        let pins = (received > 0 && setup.pinsResumptions) || isSlice
        let pinned = pins ? generation.flatMap { $0 > 0 ? $0 : nil } : nil
        var read = MediaRead(
            generation: setup.generation, offset: offset, last: range?.end, expectedGeneration: pinned)
        // Decoded bytes cannot be continued with a Range over the stored ones (Cloud Storage
        // ignores it while transcoding anyway): ask for the whole body and skip what arrived.
        read.wholeObject = received > 0 && coding == .transcoded
        phase = .awaitingAnswer(read, Answer())
        return .request(read)
    }

    /// Decides what a failed request means: the end of a range that was complete, an object
    /// that changed (start over, within the restart budget), or the download's end.
    private mutating func recover(from error: StorageError, _ read: MediaRead, _ answer: Answer) -> Action {
        var restart = answer.restartRequested
        if read.expectedGeneration != nil && error.code == .preconditionFailed {
            // Only the generation this download pinned failed: the object was replaced since
            // its first bytes came. Start over, where the bytes handed on can be taken back.
            guard isRewindable, restarts < Self.maxRestarts else {
                return fail(
                    StorageError(
                        .objectChanged,
                        isRewindable
                            ? "The object kept changing on the server during the download."
                            : "The object changed on the server during the download (another generation).",
                        httpStatus: error.httpStatus, serverMessage: error.serverMessage))
            }
            forgetReceived()
            discardPending = true
            restart = true
        }
        guard restart, restarts < Self.maxRestarts else { return fail(error) }
        restarts += 1
        return request()
    }

    /// Takes the verdict on the head of the answer to the read in flight: checks that it
    /// continues where the download stands, and learns the size, generation and checksum.
    mutating func headArrived(_ head: MediaHead) -> HeadAction {
        guard case .awaitingAnswer(let read, var answer) = phase else {
            return .abort(.internalError("The download's state machine received an answer it did not ask for."))
        }
        let bodyCoding = coding(of: head)
        if let refusal = decodedRefusal(bodyCoding) { return .abort(refusal) }
        let discard = discardPending
        discardPending = false
        let size = bodyCoding.isStoredBytes ? head.objectSize : nil
        if let size, let range, range.start >= size {
            // A server that ignored the Range of a read starting past the end (GCS answers 416).
            return .abort(
                .invalidArgument("The range starts at byte \(range.start), past the end of the \(size)-byte object."))
        }
        if received > 0 || isSlice, changed(head, size: size) || bodyCoding != coding {
            // Bytes from an earlier answer (or slice) are kept only if this one serves the same object.
            guard isRewindable else { return .abort(Self.changed) }
            forgetReceived()
            answer.restartRequested = true
            phase = .awaitingAnswer(read, answer)
            return .startOver(Self.changed)
        }
        generation = generation ?? head.generation
        // The whole object from its first byte, whatever was asked: skip to the byte wanted.
        answer.skip = head.content == .whole ? read.offset : 0
        phase = .awaitingAnswer(read, answer)
        objectSize = size
        coding = bodyCoding
        transportDecoded = setup.transportDecodes && head.contentEncoding == "gzip"
        if let crc32c = head.crc32c { serverCRC32C = crc32c }
        if received == 0, slicePlan == nil, let plan = slicing(head, coding: bodyCoding, size: size) {
            if setup.slicing?.probe != nil {
                // First measure this connection alone.
                probeStart = 0
            } else {
                // The first slice is this machine's; the rest of this answer is not read.
                range = plan[0]
                slicePlan = Array(plan.dropFirst())
                isSlice = true
            }
        } else if probeStart != nil {
            // A resumed answer while measuring: the measure starts again with it.
            probeStart = received
        }
        let expected = expectedLength
        // The engine holds an inflated download to maxSize: the stored size says nothing of it.
        if !bodyCoding.inflates, let maxSize = setup.maxSize, let expected, expected > maxSize {
            return .abort(Self.sizeExceeded(total: expected, maxSize: maxSize))
        }
        return .deliver(received: received, expected: expected, discardingWritten: discard, coding: bodyCoding)
    }

    /// Why a body someone else decoded cannot be delivered, or nil: the download wants the
    /// stored bytes (as they are, or a range of them, which would be other bytes of decoded ones).
    private func decodedRefusal(_ coding: BodyCoding) -> StorageError? {
        guard setup.wantsStoredBytes, coding == .transcoded else { return nil }
        return .protocolViolation(
            setup.range == nil
                ? "The server (or the transport) decompressed the gzip-stored object, whose stored bytes were asked for."
                : "The server (or the transport) decompressed the gzip-stored object, whose range addresses the stored bytes: the bytes received are not the ones asked for."
        )
    }

    /// What the engine measured while the first connection of a download that may be sliced
    /// read alone (the machine reads no clock).
    struct ProbeMeasure: Sendable, Equatable {
        /// The time since the head of the answer being read arrived.
        var elapsed: Duration
        /// The processor time the whole process used in that time.
        var processorTime: Duration
    }

    /// Ends the measure of the first connection of a download that may be sliced: in
    /// `measure.elapsed` since the head of the answer being read, `received` − ``probeStart``
    /// bytes arrived.
    ///
    /// At the probe's rate or more the download stays on this connection; so does a download
    /// whose process kept more than the probe's ``StorageConfiguration/Downloads/SlicingProbe/maximumClientLoad``
    /// processors busy meanwhile: then the client's own work (decrypting, writing), not the
    /// connection, holds the rate back, and more connections would add work without speed.
    /// Otherwise the bytes still to come are cut into slices: this machine keeps the first (the
    /// rest of its answer is not read) and ``slicePlan`` names the others.
    ///
    /// - Returns: Whether it planned slices.
    mutating func probed(_ measure: ProbeMeasure) -> Bool {
        guard let start = probeStart, let slicing = setup.slicing, let probe = slicing.probe,
            let size = objectSize, case .awaitingAnswer = phase
        else { return false }
        probeStart = nil
        let seconds = measure.elapsed.inSeconds
        let bytes = Double(received - start)
        guard bytes < Double(probe.rate) * seconds else { return false }
        if let maximum = probe.maximumClientLoad, measure.processorTime.inSeconds > maximum * seconds { return false }
        let rest = Self.slices(of: size - received, count: slicing.count)
        guard rest.count > 1 else { return false }
        range = ByteRange(start: 0, end: received + (rest[0].end ?? 0))
        slicePlan = rest.dropFirst().map { ByteRange(start: received + $0.start, end: $0.end.map { received + $0 }) }
        isSlice = true
        return true
    }

    /// The slices of the download, when its first answer is one to slice: the whole object,
    /// large enough, stored and served as it is (an inflated or transcoded body must arrive in
    /// order), with a generation the other slices can ask for.
    private func slicing(_ head: MediaHead, coding: BodyCoding, size: Int64?) -> [ByteRange]? {
        guard let slicing = setup.slicing, !isSlice, setup.range == nil, head.content == .whole,
            coding == .stored, head.storedEncoding == nil, head.contentEncoding == nil,
            let size, size >= slicing.threshold, let generation = head.generation, generation > 0
        else { return nil }
        let plan = Self.slices(of: size, count: slicing.count)
        return plan.count > 1 ? plan : nil
    }

    /// Whether the destination can take back what was written: a slice cannot, since other
    /// slices' bytes of the same generation lie beside its own.
    private var isRewindable: Bool { setup.isRewindable && !isSlice }

    /// The object every slice reads, once the first answer cut the download into slices.
    var pinnedObject: PinnedObject? {
        guard slicePlan != nil, let generation, let objectSize else { return nil }
        return PinnedObject(generation: generation, size: objectSize, crc32c: serverCRC32C)
    }

    /// What the body of the answer whose head is `head` is.
    private func coding(of head: MediaHead) -> BodyCoding {
        let gzipOnWire = head.contentEncoding == "gzip"
        if gzipOnWire && setup.transportDecodes { return .transcoded }
        switch (head.storedEncoding == "gzip", gzipOnWire) {
        case (true, true): return setup.wantsStoredBytes ? .stored : .inflated
        case (true, false): return .transcoded
        case (false, true): return head.storedEncoding == nil ? .compressedInTransit : .transcoded
        case (false, false):
            // Another coding served as stored (say br), or none: the bytes as they are.
            return head.contentEncoding == head.storedEncoding ? .stored : .transcoded
        }
    }

    /// Whether an answer serves another object than the earlier ones: another generation, size or checksum.
    private func changed(_ head: MediaHead, size: Int64?) -> Bool {
        (generation != nil && head.generation != nil && generation != head.generation)
            || (objectSize != nil && size != nil && objectSize != size)
            || (serverCRC32C != nil && head.crc32c != nil && serverCRC32C != head.crc32c)
    }

    /// Decides what to do with the next `count` bytes of the answer's body.
    mutating func bodyArrived(_ count: Int) -> BodyAction {
        guard case .awaitingAnswer(let read, var answer) = phase else {
            return .abort(.internalError("The download's state machine received bytes it did not ask for."))
        }
        var dropped = 0
        if answer.skip > 0 {
            dropped = Int(min(answer.skip, Int64(count)))
            answer.skip -= Int64(dropped)
            phase = .awaitingAnswer(read, answer)
            if dropped == count { return .skip }
        }
        var kept = count - dropped
        let expected = expectedLength
        var completes = false
        if let expected, Int64(kept) > expected - received {
            // A whole object answering a range: keep what the range wants, abort the rest.
            kept = Int(max(0, expected - received))
            completes = true
        }
        let end = received + Int64(kept)
        if coding?.inflates != true, let maxSize = setup.maxSize, end > maxSize {
            return .abort(Self.sizeExceeded(total: expected ?? end, maxSize: maxSize))
        }
        return .write(
            Delivery(
                dropped: dropped, count: kept, offset: received, crc: crc, expected: expected,
                completesRange: completes, inflates: coding?.inflates ?? false,
                sliceStart: isSlice ? (range?.start ?? 0) : 0))
    }

    /// Records that `delivery` was written, and the CRC32C of every byte up to its end.
    mutating func bodyWritten(_ delivery: Delivery, crc: CRC32C) {
        guard case .awaitingAnswer = phase else { return }
        self.crc = crc
        received = delivery.end
    }

    /// Checks a finished download against the size and CRC32C the server reported.
    ///
    /// The CRC32C covers the whole object, so only a download that holds all of it (no range,
    /// or one that turned out to cover every byte) is checked against it.
    private mutating func verify() -> Action {
        if let expected = expectedLength, expected != received {
            return fail(
                StorageError(.nonMatchingChecksum, "The server sent \(received) of the \(expected) bytes expected."))
        }
        let whole = (range?.start ?? 0) == 0 && objectSize == received
        if whole, coding?.isStoredBytes ?? true, let expected = serverCRC32C, expected != crc.value {
            return fail(
                StorageError(
                    .nonMatchingChecksum,
                    "The downloaded bytes' CRC32C (\(CRC32CEncoding.base64(crc.value))) differs from the server's (\(CRC32CEncoding.base64(expected)))."
                ))
        }
        checksumVerdict = verdict(whole: whole)
        phase = .ended
        return .finish(received)
    }

    /// Why a finished download's bytes were or were not checked against the server's CRC32C;
    /// nil while the engine has yet to inflate a body compressed on the way out (``checkInflated(crc:)``).
    private func verdict(whole: Bool) -> ChecksumVerdict? {
        switch coding {
        case .transcoded?:
            return .notCheckable(
                transportDecoded
                    ? "the transport decompressed the gzip body, and the server's CRC32C describes the compressed bytes, which it did not hand on"
                    : "the server decompressed the object on the way out (decompressive transcoding), and its CRC32C describes the stored, compressed bytes, which did not arrive"
            )
        case .compressedInTransit? where range == nil:
            return nil
        default:
            if !whole { return .notCheckable("only part of the object was read; its CRC32C covers all of it") }
            return serverCRC32C == nil ? .notCheckable("the server reported no CRC32C") : .matched
        }
    }

    /// Checks the bytes the engine inflated from a whole object the server compressed on the
    /// way out (``BodyCoding/compressedInTransit``) against the CRC32C it reported, which
    /// describes the stored bytes: the inflated ones. Other downloads were checked when they
    /// finished (``Action/finish(_:)``), and this does nothing for them.
    ///
    /// - Parameter crc: The CRC32C of every inflated byte, once the last gzip member ended.
    /// - Throws: ``StorageErrorCode/nonMatchingChecksum`` when they differ.
    mutating func checkInflated(crc: UInt32) throws(StorageError) {
        guard case .ended = phase, coding == .compressedInTransit, range == nil else { return }
        guard let expected = serverCRC32C else {
            checksumVerdict = .notCheckable("the server reported no CRC32C")
            return
        }
        guard expected == crc else {
            throw StorageError(
                .nonMatchingChecksum,
                "The inflated bytes' CRC32C (\(CRC32CEncoding.base64(crc))) differs from the server's (\(CRC32CEncoding.base64(expected))), which describes the stored bytes (the server compressed them on the way out)."
            )
        }
        checksumVerdict = .matched
    }

    /// Forgets every byte received and what the answers said: the download starts over.
    private mutating func forgetReceived() {
        received = 0
        crc = CRC32C()
        objectSize = nil
        generation = nil
        serverCRC32C = nil
        coding = nil
    }

    private mutating func fail(_ error: StorageError) -> Action {
        phase = .ended
        return .fail(error)
    }

    private static let changed = StorageError(
        .objectChanged,
        "The object changed on the server during the download (another generation, size or CRC32C).")

    static func sizeExceeded(total: Int64, maxSize: Int64) -> StorageError {
        StorageError(
            .downloadSizeExceeded,
            "The object (at least \(total) bytes) is larger than the \(maxSize) bytes the download allows.")
    }
}

extension RangedDownloadStateMachine {
    /// What the answer in flight has shown so far.
    private struct Answer: Sendable {
        /// Bytes at the head of its body that precede what the download wants next (a server
        /// answered a `Range` request with the whole object): dropped, never written.
        var skip: Int64 = 0
        /// Set when it showed that the object changed: the download starts over.
        var restartRequested = false
    }

    /// Where the download is between two events.
    private enum Phase: Sendable {
        /// No run has begun.
        case ready
        /// A read is in flight; its answer, as far as it arrived.
        case awaitingAnswer(MediaRead, Answer)
        case waiting
        /// The run ended (``Action/finish(_:)`` or ``Action/fail(_:)``).
        case ended
    }
}

extension RangedDownloadStateMachine.Action: Equatable {
    /// Equal cases with equal values; errors are equal when their code, message and HTTP status are.
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.request(let a), .request(let b)): a == b
        case (.backOff(let a, let c), .backOff(let b, let d)): c == d && a.isSame(as: b)
        case (.finish(let a), .finish(let b)): a == b
        case (.fail(let a), .fail(let b)): a.isSame(as: b)
        default: false
        }
    }
}

extension RangedDownloadStateMachine.HeadAction: Equatable {
    /// Equal cases with equal values; errors are equal when their code, message and HTTP status are.
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.deliver(let a, let c, let e, let g), .deliver(let b, let d, let f, let h)):
            a == b && c == d && e == f && g == h
        case (.startOver(let a), .startOver(let b)), (.abort(let a), .abort(let b)): a.isSame(as: b)
        default: false
        }
    }
}

extension RangedDownloadStateMachine.BodyAction: Equatable {
    /// Equal cases with equal values; errors are equal when their code, message and HTTP status are.
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.write(let a), .write(let b)): a == b
        case (.skip, .skip): true
        case (.abort(let a), .abort(let b)): a.isSame(as: b)
        default: false
        }
    }
}

extension StorageError {
    /// Whether `other` has the same code, message and HTTP status (what an action's equality compares).
    fileprivate func isSame(as other: StorageError) -> Bool {
        code == other.code && message == other.message && httpStatus == other.httpStatus
    }
}
