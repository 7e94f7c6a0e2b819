import Foundation
import HTTP1
import Synchronization

/// What a download has received so far: shared by the engine, the response
/// sink (on the transport's thread) and, across pauses, the task.
final class DownloadCheckpoint: Sendable {
    struct State: Sendable {
        /// Bytes written to the destination, in order from 0.
        var received: Int64 = 0
        /// CRC32C of those bytes.
        var crc = CRC32C()
        /// The object's size, once a response said it.
        var totalSize: Int64?
        /// The object's generation, from the first response that named it.
        var generation: String?
        /// The CRC32C the server reported for the stored object.
        var serverCRC32C: UInt32?
        /// Whether the bytes arrive transformed (decompressed), so their checksum cannot match.
        var transformed = false
        /// Set when the object changed under a resumed download: start over.
        var restartRequested = false
        /// Bytes at the head of the current response's body that precede what the
        /// download wants next (a server answered a `Range` request with the whole
        /// object): dropped, never written.
        var skip: Int64 = 0
        /// Set when a response that runs past the wanted range has delivered all of it:
        /// the sink aborts the rest, and that abort is the download's success.
        var rangeComplete = false
        /// Set when a resumption pinned to the first generation was refused (it changed):
        /// the next answer starts over, so the bytes written before must go.
        var discardWritten = false
    }

    let state = Mutex(State())

    var received: Int64 { state.withLock { $0.received } }
}

/// Carries one download: GET the media (from the received offset with a
/// `Range` after a failure or a pause), stream it into the destination,
/// retry within the retry budget, and verify the CRC32C the server reports.
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

    private static let maxRestarts = 3

    /// Downloads, or continues downloading, every byte of the object.
    ///
    /// - Parameters:
    ///   - checkpoint: What earlier runs received; updated as bytes arrive.
    ///   - progress: Called with the received byte count and the size, when known.
    /// - Returns: The number of bytes downloaded.
    /// - Throws: The ``StorageError`` that ended the download;
    ///   ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    func run(
        checkpoint: DownloadCheckpoint,
        progress: @escaping @Sendable (_ received: Int64, _ total: Int64?) -> Void
    ) async throws(StorageError) -> Int64 {
        let (name, generation) = try StorageReference.validatedObject(
            path, generation: generation, on: storage.endpoint)
        try preconditions.validate(for: storage.endpoint)
        let wire = storage.endpoint.objectProtocol
        var runner = RequestRunner(storage: storage, operation: .download)
        var restarts = 0
        // The most bytes received in this run: only going past it restarts the retry deadline.
        var high = checkpoint.received
        while true {
            let (received, expected) = checkpoint.state.withLock { ($0.received, expectedLength($0)) }
            if received > 0, received == expected {
                // Every byte arrived before an earlier run was stopped: a range from the
                // end would be refused (416), and there is nothing left to ask for.
                return try verify(checkpoint)
            }
            let start = range?.start ?? 0
            let (conditions, pinned) = requestPreconditions(checkpoint)
            var request = wire.media(
                bucket: storage.bucket, name: name, generation: generation, offset: start + received,
                preconditions: conditions)
            if let end = range?.end {
                // The wire protocols ask for the rest of the object; a range with an end narrows it.
                request.headers.set("Range", "bytes=\(start + received)-\(end)")
            }
            request.responseSink = sink(checkpoint, progress: progress)
            let outcome: RequestRunner.Outcome
            do {
                outcome = try await runner.send(request, accepting: [200, 206], about: .object(name))
            } catch {
                var (restart, complete) = checkpoint.state.withLock { state in
                    defer { state.restartRequested = false }
                    return (state.restartRequested, state.rangeComplete)
                }
                if complete { return try verify(checkpoint) }
                if pinned && error.code == .preconditionFailed {
                    // Only the generation this download pinned failed: the object was replaced
                    // since its first bytes came. Start over, as for a changed answer, where the
                    // bytes handed on can be taken back.
                    guard destination.isRewindable, restarts < Self.maxRestarts else {
                        throw StorageError(
                            .objectChanged,
                            destination.isRewindable
                                ? "The object kept changing on the server during the download."
                                : "The object changed on the server during the download (another generation).",
                            httpStatus: error.httpStatus, serverMessage: error.serverMessage)
                    }
                    checkpoint.state.withLock { state in
                        state = DownloadCheckpoint.State()
                        state.discardWritten = true
                    }
                    restart = true
                }
                guard restart, restarts < Self.maxRestarts else { throw error }
                restarts += 1
                continue
            }
            switch outcome {
            case .answer:
                return try verify(checkpoint)
            case .retryable(let failure):
                let received = checkpoint.received
                if received > high {
                    high = received
                    runner.madeProgress()
                }
                try await runner.backOff(after: failure)
            }
        }
    }

    /// The caller's preconditions for the next request, plus, when it continues a
    /// download of a known generation, `ifGenerationMatch` on that generation, so the
    /// server refuses rather than serve another object's tail. A download of a pinned
    /// reference asks for its generation by number in every request, and needs no more.
    ///
    /// - Returns: The conditions, and whether the generation was pinned here
    ///   (so its failure means "the object changed", not the caller's precondition).
    private func requestPreconditions(_ checkpoint: DownloadCheckpoint) -> (StoragePreconditions, pinned: Bool) {
        let (received, generation) = checkpoint.state.withLock { ($0.received, $0.generation) }
        guard received > 0, self.generation == nil, preconditions.ifGenerationMatch == nil,
            storage.endpoint.wireProtocol == .gcsJSON,
            let generation = generation.flatMap({ Int64($0) }), generation > 0
        else { return (preconditions, false) }
        var pinned = preconditions
        pinned.ifGenerationMatch = generation
        return (pinned, true)
    }

    /// The sink that writes a response's body at the checkpoint's offset.
    private func sink(
        _ checkpoint: DownloadCheckpoint,
        progress: @escaping @Sendable (Int64, Int64?) -> Void
    ) -> HTTPResponseSink {
        let destination = destination
        let maxSize = maxSize
        let range = range
        let pinned = generation
        let changed = StorageError(
            .objectChanged,
            "The object changed on the server during the download (another generation, size or CRC32C).")
        return HTTPResponseSink(
            begin: { (status, headers) throws(StorageError) -> Bool in
                guard status == 200 || status == 206 else { return false }  // an error: collect its body
                let (total, restart, discard) = try checkpoint.state.withLock {
                    (state) throws(StorageError) -> (Int64?, Bool, Bool) in
                    let discard = state.discardWritten
                    state.discardWritten = false
                    let restart = try Self.begin(
                        &state, status: status, headers: headers, range: range, pinnedGeneration: pinned,
                        rewindable: destination.isRewindable)
                    return (restart ? nil : Self.expectedLength(state, range: range), restart, discard)
                }
                // The bytes of a generation that was replaced go before the new one's arrive.
                if discard && !restart { try destination.reset() }
                if restart {
                    // Bytes already handed on cannot be taken back from a stream: the download
                    // ends instead of starting over. File I/O outside the lock.
                    guard destination.isRewindable else { throw changed }
                    try destination.reset()
                    throw changed
                }
                if let maxSize, let total, total > maxSize {
                    throw Self.sizeExceeded(total: total, maxSize: maxSize)
                }
                progress(checkpoint.received, total)
                return true
            },
            receive: { (raw) throws(StorageError) in
                // Only this request's sink writes while it runs, so the offset read
                // here stays valid across the unlocked write.
                let (start, expected, running, skip) = checkpoint.state.withLock {
                    ($0.received, Self.expectedLength($0, range: range), $0.crc, $0.skip)
                }
                var bytes = raw
                if skip > 0 {
                    let dropped = Int(min(skip, Int64(bytes.count)))
                    bytes = UnsafeRawBufferPointer(rebasing: bytes[dropped...])
                    checkpoint.state.withLock { $0.skip -= Int64(dropped) }
                    if bytes.isEmpty { return }
                }
                var complete = false
                if let expected, Int64(bytes.count) > expected - start {
                    // A whole object answering a range: keep what the range wants, abort the rest.
                    bytes = UnsafeRawBufferPointer(rebasing: bytes[..<Int(max(0, expected - start))])
                    complete = true
                }
                let end = start + Int64(bytes.count)
                if let maxSize, end > maxSize {
                    throw Self.sizeExceeded(total: expected ?? end, maxSize: maxSize)
                }
                if !bytes.isEmpty { try destination.write(bytes, at: start) }
                var crc = running
                crc.update(bytes)
                checkpoint.state.withLock { state in
                    state.crc = crc
                    state.received = end
                    state.rangeComplete = complete
                }
                progress(end, expected)
                if complete { throw .cancelled() }  // the run loop sees `rangeComplete` and succeeds
            }
        )
    }

    /// Reads a successful answer's head: checks that it continues where the
    /// download stands, and learns the size, generation and checksum.
    ///
    /// - Parameter pinnedGeneration: The generation every request asked for, if any.
    /// - Returns: Whether the object changed under the download, which then
    ///   starts over (the state is reset and `restartRequested` set when `rewindable`).
    /// - Throws: ``StorageErrorCode/protocolViolation`` for an answer that breaks the protocol,
    ///   such as bytes of another generation than `pinnedGeneration`.
    static func begin(
        _ state: inout DownloadCheckpoint.State,
        status: Int,
        headers: HTTPHeaders,
        range: ByteRange?,
        pinnedGeneration: Int64? = nil,
        rewindable: Bool = true
    ) throws(StorageError) -> Bool {
        let generation = headers["x-goog-generation"]
        if let pinnedGeneration, let generation,
            Int64(generation.trimmingCharacters(in: .whitespaces)) != pinnedGeneration
        {
            // Not "the object changed": the server was asked for one generation's bytes and sent others.
            throw .protocolViolation(
                "The server was asked for generation \(pinnedGeneration) and answered with the bytes of generation \(generation)."
            )
        }
        let start = range?.start ?? 0
        // The absolute offset of the next byte wanted; both terms are bounded by sizes a response stated.
        let (wanted, overflow) = start.addingReportingOverflow(state.received)
        guard !overflow else { throw .protocolViolation("The download's offset overflows.") }
        var totalSize: Int64?
        var rangeTotal: Int64?
        var skip: Int64 = 0
        if status == 200 {
            // The whole object from its first byte, whatever was asked: skip to the wanted byte.
            totalSize = try byteCount(headers, "Content-Length")
            skip = wanted
        } else {
            guard let contentRange = ContentRangeHeader(headers["Content-Range"]) else {
                throw .protocolViolation(
                    "The server answered a ranged download with an unreadable Content-Range (\(headers["Content-Range"] ?? "none"))."
                )
            }
            guard contentRange.first == wanted else {
                throw .protocolViolation(
                    "The server answered a download from byte \(wanted) with bytes from \(contentRange.first).")
            }
            if let end = range?.end, contentRange.last > end {
                throw .protocolViolation(
                    "The server answered a download of bytes \(wanted)-\(end) with bytes up to \(contentRange.last).")
            }
            if let length = try byteCount(headers, "Content-Length"),
                length != contentRange.last - contentRange.first + 1
            {
                throw .protocolViolation(
                    "The server's Content-Length (\(length)) disagrees with its Content-Range (\(headers["Content-Range"] ?? ""))."
                )
            }
            totalSize = contentRange.total
            rangeTotal = contentRange.total
        }
        if let stored = try byteCount(headers, "x-goog-stored-content-length") {
            if let rangeTotal, rangeTotal != stored {
                throw .protocolViolation(
                    "The server's Content-Range total (\(rangeTotal)) and stored length (\(stored)) differ.")
            }
            totalSize = stored
        }
        let encoding = headers["Content-Encoding"]?.lowercased()
        let transformed = encoding != nil && encoding != "identity"
        if transformed { totalSize = nil }
        if let totalSize, range != nil, start >= totalSize {
            // A server that ignored the Range of a read starting past the end (GCS answers 416).
            throw .invalidArgument("The range starts at byte \(start), past the end of the \(totalSize)-byte object.")
        }
        var serverCRC32C: UInt32?
        for value in headers.values("x-goog-hash") {
            for part in value.split(separator: ",") {
                let pair = part.trimmingCharacters(in: .whitespaces)
                if pair.lowercased().hasPrefix("crc32c=") {
                    serverCRC32C = CRC32CEncoding.parse(String(pair.dropFirst("crc32c=".count)))
                }
            }
        }
        if state.received > 0 {
            // Bytes from an earlier response are kept only if this one serves the same object:
            // another generation, size or checksum means it was replaced in between.
            let changed =
                (state.generation != nil && generation != nil && state.generation != generation)
                || (!transformed && state.totalSize != nil && totalSize != nil && state.totalSize != totalSize)
                || (state.serverCRC32C != nil && serverCRC32C != nil && state.serverCRC32C != serverCRC32C)
            if changed {
                if rewindable {
                    state = DownloadCheckpoint.State()
                    state.restartRequested = true
                }
                return true
            }
        }
        state.generation = state.generation ?? generation
        state.skip = skip
        state.totalSize = totalSize
        state.transformed = transformed
        if let serverCRC32C { state.serverCRC32C = serverCRC32C }
        return false
    }

    /// How many bytes the download delivers in all, when known: the object's size for a
    /// whole object; for a range, its part inside the object (GCS serves a range that
    /// runs past the end up to the last byte), or its own length before the size is known.
    static func expectedLength(_ state: DownloadCheckpoint.State, range: ByteRange?) -> Int64? {
        guard let range else { return state.totalSize }
        guard let total = state.totalSize else { return range.end.map { $0 - range.start + 1 } }
        let last = min(range.end ?? (total - 1), total - 1)
        return max(0, last - range.start + 1)
    }

    private func expectedLength(_ state: DownloadCheckpoint.State) -> Int64? {
        Self.expectedLength(state, range: range)
    }

    /// A byte count header: nil when absent.
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation`` when present but not a non-negative integer.
    private static func byteCount(_ headers: HTTPHeaders, _ name: String) throws(StorageError) -> Int64? {
        guard let text = headers[name] else { return nil }
        guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
            throw .protocolViolation("The server sent an unreadable \(name) (\(text)).")
        }
        return value
    }

    /// Checks a finished download against the size and CRC32C the server reported.
    ///
    /// The CRC32C covers the whole object, so only a download that holds all of it
    /// (no range, or one that turned out to cover every byte) is checked against it.
    private func verify(_ checkpoint: DownloadCheckpoint) throws(StorageError) -> Int64 {
        let state = checkpoint.state.withLock { $0 }
        if let expected = expectedLength(state), expected != state.received {
            throw StorageError(
                .nonMatchingChecksum, "The server sent \(state.received) of the \(expected) bytes expected.")
        }
        let whole = (range?.start ?? 0) == 0 && state.totalSize == state.received
        if whole, !state.transformed, let expected = state.serverCRC32C, expected != state.crc.value {
            throw StorageError(
                .nonMatchingChecksum,
                "The downloaded bytes' CRC32C (\(CRC32CEncoding.base64(state.crc.value))) differs from the server's (\(CRC32CEncoding.base64(expected)))."
            )
        }
        return state.received
    }

    private static func sizeExceeded(total: Int64, maxSize: Int64) -> StorageError {
        StorageError(
            .downloadSizeExceeded,
            "The object (at least \(total) bytes) is larger than the \(maxSize) bytes the download allows.")
    }
}

/// `Content-Range: bytes a-b/N` (or `/*`) of a 206 answer.
struct ContentRangeHeader: Equatable {
    var first: Int64
    var last: Int64
    var total: Int64?

    init(first: Int64, last: Int64, total: Int64?) {
        self.first = first
        self.last = last
        self.total = total
    }

    init?(_ header: String?) {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst("bytes ".count)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, first <= last
        else {
            return nil
        }
        self.first = first
        self.last = last
        total = parts[1] == "*" ? nil : Int64(parts[1])
        if parts[1] != "*" && total == nil { return nil }
        // The range lies inside the object: `last < total` (which also keeps `last + 1` from overflowing).
        if let total, last >= total { return nil }
    }
}

/// The bytes of an object a download asks for: from `start`, to `end` inclusive
/// or to the object's end.
struct ByteRange: Sendable, Equatable {
    var start: Int64
    /// The last byte wanted (inclusive), or nil for every byte to the end.
    var end: Int64?

    /// A range from public range expressions; nil for one that means the whole object.
    ///
    /// - Throws: ``StorageErrorCode/invalidArgument`` for an empty range or a negative bound.
    init?(_ expression: some RangeExpression<Int64>) throws(StorageError) {
        let start: Int64
        let end: Int64?
        switch expression {
        case let closed as ClosedRange<Int64>:
            (start, end) = (closed.lowerBound, closed.upperBound)
        case let through as PartialRangeThrough<Int64>:
            (start, end) = (0, through.upperBound)
        case let from as PartialRangeFrom<Int64>:
            (start, end) = (from.lowerBound, nil)
        case let halfOpen as Range<Int64>:
            guard !halfOpen.isEmpty else {
                throw .invalidArgument("The range \(halfOpen) is empty; ask for at least one byte.")
            }
            (start, end) = (halfOpen.lowerBound, halfOpen.upperBound - 1)
        case let upTo as PartialRangeUpTo<Int64>:
            guard upTo.upperBound > 0 else {
                throw .invalidArgument("The range ..<\(upTo.upperBound) is empty; ask for at least one byte.")
            }
            (start, end) = (0, upTo.upperBound - 1)
        default:
            // Half-open shapes (`a..<b`, `..<b`): relative to every offset an object can have.
            let bounds = expression.relative(to: 0..<Int64.max)
            guard !bounds.isEmpty else {
                throw .invalidArgument("The range \(bounds) is empty; ask for at least one byte.")
            }
            (start, end) = (bounds.lowerBound, bounds.upperBound - 1)
        }
        guard start >= 0, end.map({ $0 >= 0 }) ?? true else {
            throw .invalidArgument("A byte range cannot have a negative bound (\(expression)).")
        }
        // No object reaches Int64.max bytes: such an end means "to the end", and keeps `end + 1` finite.
        let open = end == nil || end == Int64.max
        if start == 0 && open { return nil }
        self.start = start
        self.end = open ? nil : end
    }
}
