import Foundation

/// The steps of an upload in one wire protocol, as requests to build and
/// responses to read. It performs no I/O: the engine sends the requests,
/// retries them and keeps the session's state.
protocol UploadWireProtocol: Sendable {
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

    /// Deletes one generation of an object (used to remove an object found to
    /// be wrong after the server finalized it).
    func deleteObject(bucket: String, name: String, generation: Int64) -> HTTPRequest

    /// Reads an answer to ``send(session:offset:body:isFinal:totalSize:crc32c:)``
    /// or ``query(session:)`` whose status the engine accepted as a success.
    func sessionState(from response: HTTPResponse) throws(StorageError) -> UploadSessionState

    /// The HTTP statuses that mean the request did what it should (the rest
    /// are errors, retried or reported by the engine).
    var successStatuses: Set<Int> { get }

    /// The statuses with which the server says a session no longer exists.
    var sessionGoneStatuses: Set<Int> { get }
}

/// What an upload is: where it goes and what it carries.
struct UploadDescription: Sendable {
    var bucket: String
    var objectName: String
    var metadata: StorageMetadata
    var contentType: String
    var size: Int64
    var crc32c: UInt32?
}

/// What a resumable session holds, as the server reports it.
enum UploadSessionState: Sendable, Equatable {
    /// The server has committed the first `committedBytes` bytes and waits for more.
    case active(committedBytes: Int64)
    /// The object is complete and stored with this metadata.
    case complete(StorageMetadata)
}
