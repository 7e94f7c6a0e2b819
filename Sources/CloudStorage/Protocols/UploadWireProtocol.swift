import Foundation
import HTTPClient

/// The steps of an upload in one wire protocol, as requests to build and
/// responses to read. It performs no I/O: the engine sends the requests and
/// retries them, and ``ResumableUploadStateMachine`` keeps the session's state.
///
/// An implementation must guarantee:
/// - Every request it builds targets the endpoint's base URL or the session
///   URL the server handed out, and never puts a credential in a URL.
/// - ``sessionState(from:after:)`` decides from the protocol's own signals
///   (an HTTP status, a header) whether the session is active, complete or
///   gone; neither the engine nor the state machine reads a session answer itself.
/// - Error messages never contain a session URL (it is a bearer capability).
protocol UploadWireProtocol: Sendable {
    /// Whether the server checks the CRC32C that the request finalizing a session carries
    /// (``send(session:offset:body:isFinal:totalSize:crc32c:)``). When it does not, the engine
    /// checks the stored object's checksum itself afterwards, and need not have the value earlier.
    var checksFinalChecksum: Bool { get }

    /// One request carrying metadata and every byte, for small objects.
    func singleRequestUpload(_ upload: UploadDescription, body: HTTPRequestBody) -> HTTPRequest

    /// The request that opens a resumable session.
    func startSession(_ upload: UploadDescription) -> HTTPRequest

    /// The session URL from a successful answer to ``startSession(_:)``.
    func sessionURL(from response: HTTPResponse) throws(StorageError) -> URL

    /// Sends `body`, the bytes of the object from `offset` on; `isFinal` when
    /// they reach the end of the object, whose size is `totalSize`.
    func send(
        session: URL,
        offset: Int64,
        body: HTTPRequestBody,
        isFinal: Bool,
        totalSize: Int64,
        crc32c: UInt32?
    ) -> HTTPRequest

    /// Asks how many bytes the server has committed, without finalizing.
    func query(session: URL) -> HTTPRequest

    /// Ends the session and discards what it stored.
    func cancel(session: URL) -> HTTPRequest

    /// Reads the metadata of a stored object (for a session the server
    /// reports complete without saying what it stored).
    func objectMetadata(bucket: String, name: String) -> HTTPRequest

    /// Deletes one generation of an object (used to remove an object found to
    /// be wrong after the server finalized it). A protocol that cannot target
    /// a generation deletes the live object and says so in its documentation.
    func deleteObject(bucket: String, name: String, generation: Int64) -> HTTPRequest

    /// Reads an answer to ``send(session:offset:body:isFinal:totalSize:crc32c:)``
    /// or ``query(session:)`` whose HTTP status is in ``sessionAnswerStatuses``.
    ///
    /// - Parameters:
    ///   - response: The answer.
    ///   - step: The request it answers.
    /// - Returns: The session's state. A success answer whose body cannot be read
    ///   is ``UploadSessionState/completeUnreadable(_:)``, never an error: the
    ///   object may well be stored.
    /// - Throws: ``StorageErrorCode/protocolViolation`` when the answer breaks the
    ///   protocol (a header missing, unreadable or out of range); a committed
    ///   offset is never negative and never `Int64.max + 1`.
    func sessionState(
        from response: HTTPResponse, after step: UploadSessionStep
    ) throws(StorageError)
        -> UploadSessionState

    /// The HTTP statuses of session answers that ``sessionState(from:after:)``
    /// reads (including the ones meaning the session is gone); any other
    /// status is an error, retried or reported by the engine.
    var sessionAnswerStatuses: Set<Int> { get }
}

/// What an upload is: where it goes and what it carries.
struct UploadDescription: Sendable {
    var bucket: String
    var objectName: String
    var metadata: StorageMetadata
    var contentType: String
    /// The object's size; meaningless when ``declaresSize`` is false.
    var size: Int64
    /// Whether the size is known when the session starts (false for a stream of unknown
    /// size: the request that finalizes the session says it).
    var declaresSize = true
    var crc32c: UInt32?
    /// Conditions the server checks before it stores the object (already
    /// validated for the endpoint: a protocol without them never sees any).
    var preconditions = StoragePreconditions.none
}

/// A request to a resumable session whose answer is being read.
enum UploadSessionStep: Sendable, Equatable {
    /// ``UploadWireProtocol/query(session:)``.
    case query
    /// ``UploadWireProtocol/send(session:offset:body:isFinal:totalSize:crc32c:)``
    /// with `length` bytes from `offset`.
    case send(offset: Int64, length: Int64)
}

/// What a resumable session holds, as the server reports it.
enum UploadSessionState: Sendable, Equatable {
    /// The server has committed the first `committedBytes` bytes and waits for more.
    case active(committedBytes: Int64)
    /// The object is complete and stored with this metadata.
    case complete(StorageMetadata)
    /// The object is complete, but the answer does not say what was stored:
    /// read it with ``UploadWireProtocol/objectMetadata(bucket:name:)``.
    case completeWithoutMetadata
    /// The server says the object is complete, but the answer's body that
    /// should describe it cannot be read (cut short, not JSON). The object may
    /// well be stored: the engine treats the request as failed and asks the
    /// session again, never discarding it.
    case completeUnreadable(StorageError)
    /// The server no longer knows the session (expired, cancelled or deleted).
    case gone
}

extension UploadSessionState {
    /// Equal cases with equal values; two unreadable completions are equal when
    /// their errors have the same code and message.
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.active(let a), .active(let b)): a == b
        case (.complete(let a), .complete(let b)): a == b
        case (.completeWithoutMetadata, .completeWithoutMetadata), (.gone, .gone): true
        case (.completeUnreadable(let a), .completeUnreadable(let b)): a.code == b.code && a.message == b.message
        default: false
        }
    }
}

/// The session URL a server handed out, refused when it would leave TLS: over
/// `https://` every request stays encrypted, and a session URL is a bearer
/// capability (a server or a proxy downgrading it is treated as breaking the protocol).
///
/// - Throws: ``StorageErrorCode/protocolViolation`` for an `http://` session of an `https://` endpoint.
func sessionURLKeepingTLS(_ session: URL, base: URL) throws(StorageError) -> URL {
    if base.scheme?.lowercased() == "https" && session.scheme?.lowercased() != "https" {
        throw .protocolViolation(
            "The server handed out an upload session that is not over https; refusing to leave TLS.")
    }
    return session
}
