import Foundation

/// One run of a resumable upload as a pure value: events in, actions out. ``UploadEngine``
/// performs the actions (requests, waits, reads of the source) and feeds back what came of
/// each; this type decides them, so every sequence of server answers can be tested without a
/// network, a clock or a lock.
///
/// It starts from the ``Session`` earlier runs left (a pause keeps it; another process may have
/// opened it, see ``Session/adopted(_:size:)``) and the ``Plan`` that cuts the object into
/// requests. What the server says arrives as the wire protocol's verdict
/// (``UploadSessionState``, from ``UploadWireProtocol/sessionState(from:after:)``): the machine
/// never reads HTTP, it enforces the protocol's invariants on the verdicts. A committed offset
/// that shrinks within a session or passes the bytes sent ends the upload with
/// ``StorageErrorCode/protocolViolation``; so does an event the machine did not ask for, as
/// ``StorageErrorCode/internalError``. Nothing traps.
///
/// Every action but ``Action/finish(_:)`` and ``Action/fail(_:)`` is answered by exactly one
/// event: ``next(_:)`` takes it and returns the following action. The retry time is not the
/// machine's: it says when to back off and when the committed offset reached a new high
/// (which restarts the retry deadline), and ``CallExecutor/backOff(after:)`` measures the
/// time. The one budget it counts is the number of sessions that may replace lost ones.
struct ResumableUploadStateMachine: Sendable {
    /// What a session has achieved: kept across the runs (pauses) of one upload in
    /// ``UploadCheckpoint``, and what ``UploadSessionDescriber`` describes to other processes.
    struct Session: Sendable, Equatable {
        /// The session's URL, once the server opened one; nil again once it is final or replaced.
        var url: URL?
        /// The bytes the server last reported committed; it may never report fewer in this session.
        var committedBytes: Int64 = 0
        /// The end of the furthest request sent in this session: the server cannot have committed more.
        var sentBytes: Int64 = 0
        /// Whether the server answered a finalizing request with success and an unreadable body:
        /// the object may be stored, so the session is never deleted (that could delete the
        /// object's upload), only forgotten.
        var mayBeFinalized = false
        /// Whether the session came from a ``StorageUploadSession`` (another process opened it):
        /// no new session can replace it (the metadata and preconditions its start sent are
        /// unknown here), so losing it ends the upload.
        var isAdopted = false

        /// A session another process opened for a source of `size` bytes: the server may hold
        /// any number of them, so the first request asks, and every byte counts as sent.
        static func adopted(_ url: URL, size: Int64) -> Session {
            Session(url: url, committedBytes: 0, sentBytes: size, mayBeFinalized: false, isAdopted: true)
        }
    }

    /// How the object is cut into requests; the same for every run of one upload.
    struct Plan: Sendable, Equatable {
        /// The most bytes one request carries (a multiple of 256 KiB); nil sends the rest in one.
        var chunkSize: Int64?
        /// The object's size; nil for a stream of unknown size until it ends.
        var size: Int64?
        /// Whether the finalizing request carries the CRC32C (the upload has one, and the
        /// protocol checks it: ``UploadWireProtocol/checksFinalChecksum``).
        var finalCarriesChecksum = false
        /// Whether the checksum may still be computed when the last request is due (a file or
        /// `Data`, not a stream): then all but a tail goes out first, so hashing and sending overlap.
        var checksumMayLag = false
    }

    /// One request of the session: `length` bytes from `offset`.
    struct Chunk: Sendable, Equatable {
        var session: URL
        var offset: Int64
        var length: Int64
        /// Whether it ends the object (then `offset + length` is the object's size).
        var finalizes: Bool
        /// The object's CRC32C, on the finalizing request when the plan carries it.
        var crc32c: UInt32?

        /// The offset after the chunk's last byte.
        var end: Int64 { offset + length }
    }

    /// A verdict on an answer to ``Action/query(_:)`` or ``Action/send(_:)``, with what an error
    /// about it quotes.
    struct Answer: Sendable, Equatable {
        var state: UploadSessionState
        var httpStatus: Int
        var serverMessage: String?
    }

    /// What the engine does next. Each is answered by the ``Event`` its description names.
    enum Action: Sendable {
        /// Open a session (shielded: its URL must arrive) → ``Event/sessionStarted(_:)`` or
        /// ``Event/retryableFailure(_:)``.
        case startSession
        /// Ask the session what it holds → ``Event/answered(_:)`` or ``Event/retryableFailure(_:)``.
        case query(URL)
        /// Check that the source is unchanged and holds the bytes from `offset` up to `through`
        /// (a stream drops what is below `offset` and buffers up to `through`, one byte past the
        /// chunk, to learn whether it ends there) → ``Event/sourceReady(end:finished:)``.
        case prepareSource(offset: Int64, through: Int64)
        /// Read the object's CRC32C: wait for it, or take it only if it is known now
        /// → ``Event/checksumRead(_:)``.
        case readChecksum(wait: Bool)
        /// Send the chunk → ``Event/answered(_:)`` or ``Event/retryableFailure(_:)``.
        case send(Chunk)
        /// Report the committed offset as progress; `newHigh` restarts the retry deadline
        /// (``CallExecutor/madeProgress()``) → ``Event/done``.
        case report(committed: Int64, newHigh: Bool)
        /// Wait before retrying after `failure`, or end the upload when the retry time ran out
        /// (``CallExecutor/backOff(after:)``) → ``Event/done``.
        case backOff(after: StorageError)
        /// Read the metadata of the object the session stored → ``Event/storedObjectRead(_:)``.
        case readStoredObject
        /// Delete this generation, an incomplete object a server finalized early (best effort)
        /// → ``Event/done``.
        case deleteObject(StorageMetadata)
        /// Rewind the source to its first byte for a new session (a stream that dropped
        /// committed bytes cannot: ``StorageErrorCode/dataLoss``) → ``Event/done``.
        case rewindSource
        /// The session is final and stored this: verify it against what was sent, and end.
        case finish(StorageMetadata)
        /// End the upload with this error.
        case fail(StorageError)
    }

    /// What came of an action.
    enum Event: Sendable {
        /// The run begins (the first event).
        case began
        /// The server opened the session at this URL.
        case sessionStarted(URL)
        /// The source holds its bytes up to `end`; `finished` when it ends there.
        case sourceReady(end: Int64, finished: Bool)
        /// The object's CRC32C, or nil when it is not known yet.
        case checksumRead(UInt32?)
        /// The wire protocol's verdict on the answer to a query or a chunk.
        case answered(Answer)
        /// The stored object's metadata.
        case storedObjectRead(StorageMetadata)
        /// A request failed in a way that may pass (a retryable status, a lost connection).
        case retryableFailure(StorageError)
        /// An action with nothing to tell was performed.
        case done
    }

    /// How many times a session the server forgot, or finalized too early, is replaced by a
    /// new one in one run before the upload fails.
    static let maxSessionRestarts = 3

    let plan: Plan
    /// The session as it stands; the engine publishes it to the ``UploadCheckpoint`` after each step.
    private(set) var session: Session
    /// The object's size, once known (a stream of unknown size tells it when it ends).
    private var size: Int64?
    /// How many times this run replaced a lost session, and why the last time.
    private(set) var restarts = 0
    private(set) var lastRestartReason: String?
    /// The most bytes the server has committed in this run: passing it is progress, which
    /// restarts the retry deadline; regaining lost ground is not.
    private var high: Int64
    /// Whether the next request asks the session what it holds instead of sending.
    private var mustQuery: Bool
    private var phase = Phase.ready

    /// A run that continues `session` (a session from an earlier run may hold more, or less,
    /// than it recorded: the first request asks).
    init(plan: Plan, session: Session) {
        self.plan = plan
        self.session = session
        size = plan.size
        high = session.committedBytes
        mustQuery = session.url != nil
    }

    /// Takes what came of the last action (``Event/began`` first) and returns the next one.
    mutating func next(_ event: Event) -> Action {
        switch (phase, event) {
        case (.ready, .began), (.waiting, .done), (.reporting(nil), .done):
            return nextRequest()
        case (.reporting(let failure?), .done):
            phase = .waiting
            return .backOff(after: failure)
        case (.startingSession, .sessionStarted(let url)):
            session = Session(url: url)
            mustQuery = false
            return nextRequest()
        case (.startingSession, .retryableFailure(let failure)), (.awaitingAnswer, .retryableFailure(let failure)):
            mustQuery = true  // what did the server keep? (no session yet: it starts one)
            phase = .waiting
            return .backOff(after: failure)
        case (.preparingSource(let offset, let end), .sourceReady(let filled, let finished)):
            return chunk(from: offset, to: end, filled: filled, finished: finished)
        case (.readingChecksum(let offset, let end, let aligned), .checksumRead(let crc32c)):
            // Not known yet: send all but the tail without finalizing, and ask again for the tail.
            if crc32c == nil, let aligned { return send(from: offset, to: aligned, finalizes: false, crc32c: nil) }
            return send(from: offset, to: end, finalizes: true, crc32c: crc32c)
        case (.awaitingAnswer(let request), .answered(let answer)):
            return interpret(answer.state, request, answer)
        case (.readingStoredObject(let request, let answer), .storedObjectRead(let stored)):
            return interpret(.complete(stored), request, answer)
        case (.deletingTruncated(let restart), .done):
            phase = .rewinding(restart)
            return .rewindSource
        case (.rewinding(let restart), .done):
            return restartSession(restart)
        default:
            // Never a session URL in the message: it is a bearer capability.
            return fail(.internalError("The upload's state machine received an event it did not ask for."))
        }
    }

    /// Starts a session, asks the session, or prepares the next chunk.
    private mutating func nextRequest() -> Action {
        guard let url = session.url else {
            phase = .startingSession
            return .startSession
        }
        let offset = session.committedBytes
        if mustQuery {
            phase = .awaitingAnswer(Request(offset: offset, queried: true, finalizes: false))
            return .query(url)
        }
        let limit = size ?? .max
        var end = limit
        if let chunkSize = plan.chunkSize {
            let (sum, overflow) = offset.addingReportingOverflow(chunkSize)
            end = overflow ? limit : min(sum, limit)
        }
        phase = .preparingSource(offset: offset, end: end)
        return .prepareSource(offset: offset, through: end == .max ? end : end + 1)
    }

    /// The chunk from `offset` to `end`, once the source holds its bytes up to `filled`.
    private mutating func chunk(from offset: Int64, to end: Int64, filled: Int64, finished: Bool) -> Action {
        var end = end
        if finished && size == nil {
            size = filled  // the request that reaches the end finalizes, with the total it tells
            end = min(end, filled)
        }
        guard filled >= end else {
            return fail(.internalError("The stream ended at \(filled) bytes, before the \(end) to send."))
        }
        let finalizes = end == size
        guard finalizes && plan.finalCarriesChecksum else {
            return send(from: offset, to: end, finalizes: finalizes, crc32c: nil)
        }
        let aligned = plan.checksumMayLag ? Self.lastAlignedOffset(after: offset, before: end) : nil
        phase = .readingChecksum(offset: offset, end: end, aligned: aligned)
        return .readChecksum(wait: aligned == nil)
    }

    private mutating func send(from offset: Int64, to end: Int64, finalizes: Bool, crc32c: UInt32?) -> Action {
        guard let url = session.url else {
            return fail(.internalError("The upload's state machine lost its session before sending."))
        }
        session.sentBytes = max(session.sentBytes, end)
        phase = .awaitingAnswer(Request(offset: offset, queried: false, finalizes: finalizes))
        return .send(Chunk(session: url, offset: offset, length: end - offset, finalizes: finalizes, crc32c: crc32c))
    }

    /// Acts on the wire protocol's verdict on the answer to `request`.
    private mutating func interpret(_ state: UploadSessionState, _ request: Request, _ answer: Answer) -> Action {
        switch state {
        case .completeUnreadable(let failure) where !request.queried:
            // Treated as a failed request: ask the session what it holds, and never delete it.
            session.mayBeFinalized = true
            mustQuery = true
            phase = .waiting
            return .backOff(after: failure)
        case .completeUnreadable, .completeWithoutMetadata:
            // The session is final (a query said so): read the object instead.
            phase = .readingStoredObject(request, answer)
            return .readStoredObject
        case .gone where session.isAdopted:
            // No new session can replace it: the first start's metadata and preconditions are unknown here.
            session.url = nil
            return fail(
                StorageError(
                    .uploadSessionExpired,
                    "The server no longer knows the upload session being resumed (it expired or was cancelled); upload the file again.",
                    httpStatus: answer.httpStatus, serverMessage: answer.serverMessage))
        case .gone:
            // The server forgot the session (expired or deleted): start a new one, unless the
            // bytes it held came from a stream and were dropped.
            phase = .rewinding(Restart(reason: "lost the upload session", answer: answer))
            return .rewindSource
        case .complete(let stored) where stored.size != size && !request.finalizes:
            // The server finalized the object before it had every byte (lenient servers do so on
            // a status query): remove the truncated object and upload again in a new session,
            // rather than report a wrong object.
            phase = .deletingTruncated(Restart(reason: "finalized an incomplete object", answer: answer))
            return .deleteObject(stored)
        case .complete(let stored):
            session.url = nil  // finalized: nothing left to discard
            phase = .ended
            return .finish(stored)
        case .active(let committed):
            return record(committed, request, answer)
        }
    }

    /// Records the committed offset a session reported, once it keeps the protocol's invariants:
    /// a session's committed bytes never shrink (a `308` without `Range` after a positive offset
    /// included), and never exceed the bytes sent. A server that loses committed bytes, or claims
    /// bytes it never got, cannot be trusted with the rest: that is not retried.
    private mutating func record(_ committed: Int64, _ request: Request, _ answer: Answer) -> Action {
        let problem: String?
        if committed < request.offset {
            problem = "The server's committed offset went back from \(request.offset) to \(committed) bytes."
        } else if committed > session.sentBytes {
            problem = "The server claims to have committed \(committed) bytes, but only \(session.sentBytes) were sent."
        } else {
            problem = nil
        }
        if let problem {
            return fail(
                StorageError(
                    .protocolViolation, problem, httpStatus: answer.httpStatus, serverMessage: answer.serverMessage))
        }
        session.mayBeFinalized = false  // the session says it is still open
        session.committedBytes = committed
        mustQuery = false
        let newHigh = committed > high
        high = max(high, committed)
        // Bytes went out and none were kept: count it as a failure, so a server that never
        // commits cannot keep the upload looping.
        let noneKept =
            !newHigh && committed == request.offset && !request.queried
            ? StorageError(.unknown, "The server committed none of the bytes sent.", httpStatus: answer.httpStatus)
            : nil
        phase = .reporting(then: noneKept)
        return .report(committed: committed, newHigh: newHigh)
    }

    /// Replaces a session that is lost, once the source was rewound, within the restart budget.
    private mutating func restartSession(_ restart: Restart) -> Action {
        restarts += 1
        lastRestartReason = restart.reason
        session.sentBytes = 0
        if session.isAdopted {
            return fail(
                StorageError(
                    .uploadSessionExpired,
                    "The server \(restart.reason) of the upload session being resumed; upload the file again.",
                    httpStatus: restart.answer.httpStatus, serverMessage: restart.answer.serverMessage))
        }
        guard restarts <= Self.maxSessionRestarts else {
            return fail(
                StorageError(
                    .internalError, "The server \(restart.reason) \(restarts) times; giving up.",
                    httpStatus: restart.answer.httpStatus, serverMessage: restart.answer.serverMessage))
        }
        session.url = nil
        session.committedBytes = 0
        phase = .reporting(then: nil)
        return .report(committed: 0, newHigh: false)
    }

    private mutating func fail(_ error: StorageError) -> Action {
        phase = .ended
        return .fail(error)
    }

    /// The largest offset below `size` that is a whole number (at least one) of 256 KiB units
    /// after `offset` (where a request that does not finalize may end), or nil when there is none.
    static func lastAlignedOffset(after offset: Int64, before size: Int64) -> Int64? {
        let granularity = StorageConfiguration.Uploads.chunkGranularity
        guard size - offset > granularity else { return nil }
        return offset + (size - offset - 1) / granularity * granularity
    }
}

extension ResumableUploadStateMachine {
    /// A request whose answer is awaited.
    private struct Request {
        /// The committed offset it was sent from (a query's: the one recorded before it).
        var offset: Int64
        var queried: Bool
        /// Whether it was the finalizing chunk: every byte went out.
        var finalizes: Bool
    }

    /// Why a session is being replaced, and the answer that said so (for the error if it cannot be).
    private struct Restart {
        var reason: String
        var answer: Answer
    }

    /// Where the run is between two events.
    private enum Phase {
        /// Nothing in flight: the next request follows from the session.
        case ready
        case startingSession
        case preparingSource(offset: Int64, end: Int64)
        /// The finalizing chunk waits for the checksum; a chunk sent without it ends at `aligned`.
        case readingChecksum(offset: Int64, end: Int64, aligned: Int64?)
        case awaitingAnswer(Request)
        case readingStoredObject(Request, Answer)
        /// The committed offset is being reported; then a back-off after this failure, if any.
        case reporting(then: StorageError?)
        case waiting
        case deletingTruncated(Restart)
        case rewinding(Restart)
        /// The run ended (``Action/finish(_:)`` or ``Action/fail(_:)``).
        case ended
    }
}

extension ResumableUploadStateMachine.Action: Equatable {
    /// Equal cases with equal values; errors are equal when their code, message and HTTP status are.
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.startSession, .startSession), (.readStoredObject, .readStoredObject), (.rewindSource, .rewindSource):
            true
        case (.query(let a), .query(let b)): a == b
        case (.prepareSource(let a, let c), .prepareSource(let b, let d)): a == b && c == d
        case (.readChecksum(let a), .readChecksum(let b)): a == b
        case (.send(let a), .send(let b)): a == b
        case (.report(let a, let c), .report(let b, let d)): a == b && c == d
        case (.deleteObject(let a), .deleteObject(let b)), (.finish(let a), .finish(let b)): a == b
        case (.backOff(let a), .backOff(let b)), (.fail(let a), .fail(let b)):
            a.code == b.code && a.message == b.message && a.httpStatus == b.httpStatus
        default: false
        }
    }
}
