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
    let destination: any DownloadDestination
    /// The most bytes the download may hold (``StorageReference/getData(maxSize:preconditions:)``).
    let maxSize: Int64?
    /// The caller's conditions, sent with every request.
    var preconditions = StoragePreconditions.none

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
        let name = try path.validatedObjectName()
        try preconditions.validate(for: storage.endpoint)
        let wire = storage.endpoint.objectProtocol
        var runner = RequestRunner(storage: storage, operation: .download)
        var restarts = 0
        // The most bytes received in this run: only going past it restarts the retry deadline.
        var high = checkpoint.received
        while true {
            let (offset, total) = checkpoint.state.withLock { ($0.received, $0.totalSize) }
            if offset > 0, offset == total {
                // Every byte arrived before an earlier run was stopped: a range from the
                // end would be refused (416), and there is nothing left to ask for.
                return try verify(checkpoint)
            }
            let (conditions, pinned) = requestPreconditions(checkpoint, offset: offset)
            var request = wire.media(bucket: storage.bucket, name: name, offset: offset, preconditions: conditions)
            request.responseSink = sink(checkpoint, progress: progress)
            let outcome: RequestRunner.Outcome
            do {
                outcome = try await runner.send(request, accepting: [200, 206], about: .object(name))
            } catch {
                var restart = checkpoint.state.withLock { state in
                    defer { state.restartRequested = false }
                    return state.restartRequested
                }
                if pinned && error.code == .preconditionFailed {
                    // Only the generation this download pinned failed: the object was
                    // replaced since its first bytes came. Start over, as for a changed answer.
                    guard restarts < Self.maxRestarts else {
                        throw StorageError(
                            .objectChanged, "The object kept changing on the server during the download.",
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

    /// The caller's preconditions for a request from `offset`, plus, when it
    /// continues a download of a known generation, `ifGenerationMatch` on that
    /// generation, so the server refuses rather than serve another object's tail.
    ///
    /// - Returns: The conditions, and whether the generation was pinned here
    ///   (so its failure means "the object changed", not the caller's precondition).
    private func requestPreconditions(
        _ checkpoint: DownloadCheckpoint, offset: Int64
    ) -> (StoragePreconditions, pinned: Bool) {
        guard offset > 0, preconditions.ifGenerationMatch == nil, storage.endpoint.wireProtocol == .gcsJSON,
            let generation = checkpoint.state.withLock({ $0.generation }).flatMap({ Int64($0) }), generation > 0
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
        return HTTPResponseSink(
            begin: { (status, headers) throws(StorageError) -> Bool in
                guard status == 200 || status == 206 else { return false }  // an error: collect its body
                let (total, reset) = try checkpoint.state.withLock {
                    (state) throws(StorageError) -> (Int64?, Reset) in
                    try Self.begin(&state, status: status, headers: headers)
                }
                // File I/O outside the lock.
                if reset != .none { try destination.reset() }
                if reset == .restart {
                    throw StorageError(
                        .objectChanged,
                        "The object changed on the server during the download (another generation, size or CRC32C).")
                }
                if let maxSize, let total, total > maxSize {
                    throw Self.sizeExceeded(total: total, maxSize: maxSize)
                }
                progress(checkpoint.received, total)
                return true
            },
            receive: { (bytes) throws(StorageError) in
                // Only this request's sink writes while it runs, so the offset read
                // here stays valid across the unlocked write.
                let (start, total, running) = checkpoint.state.withLock { ($0.received, $0.totalSize, $0.crc) }
                let end = start + Int64(bytes.count)
                if let maxSize, end > maxSize {
                    throw Self.sizeExceeded(total: total ?? end, maxSize: maxSize)
                }
                try destination.write(bytes, at: start)
                var crc = running
                crc.update(bytes)
                checkpoint.state.withLock { state in
                    state.crc = crc
                    state.received = end
                }
                progress(end, total)
            }
        )
    }

    /// Reads a successful answer's head: checks that it continues where the
    /// download stands, and learns the size, generation and checksum.
    ///
    /// - Returns: The object's size, when the answer says it, and what to do
    ///   with the bytes already written.
    private static func begin(
        _ state: inout DownloadCheckpoint.State,
        status: Int,
        headers: HTTPHeaders
    ) throws(StorageError) -> (Int64?, Reset) {
        let generation = headers["x-goog-generation"]
        var totalSize: Int64?
        var rangeTotal: Int64?
        if status == 200 {
            totalSize = try byteCount(headers, "Content-Length")
        } else {
            guard let range = ContentRangeHeader(headers["Content-Range"]) else {
                throw .protocolViolation(
                    "The server answered a ranged download with an unreadable Content-Range (\(headers["Content-Range"] ?? "none"))."
                )
            }
            guard range.first == state.received else {
                throw .protocolViolation(
                    "The server answered a download from byte \(state.received) with bytes from \(range.first).")
            }
            totalSize = range.total
            rangeTotal = range.total
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
                state = DownloadCheckpoint.State()
                state.restartRequested = true
                return (nil, .restart)
            }
        }
        state.generation = state.generation ?? generation
        var reset = Reset.none
        if state.discardWritten {
            state.discardWritten = false
            reset = .discard
        }
        if status == 200 && state.received > 0 {
            // The whole object (a server may ignore the Range): start from the first byte.
            reset = .discard
            state.received = 0
            state.crc = CRC32C()
        }
        state.totalSize = totalSize
        state.transformed = transformed
        if let serverCRC32C { state.serverCRC32C = serverCRC32C }
        return (state.totalSize, reset)
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

    /// What happens to bytes already written when a response begins.
    private enum Reset { case none, discard, restart }

    /// Checks a finished download against the size and CRC32C the server reported.
    private func verify(_ checkpoint: DownloadCheckpoint) throws(StorageError) -> Int64 {
        let state = checkpoint.state.withLock { $0 }
        if let total = state.totalSize, total != state.received {
            throw StorageError(
                .nonMatchingChecksum, "The server sent \(state.received) bytes of a \(total)-byte object.")
        }
        if !state.transformed, let expected = state.serverCRC32C, expected != state.crc.value {
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
