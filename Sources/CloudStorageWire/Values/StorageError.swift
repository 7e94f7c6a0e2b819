import Foundation

/// An error from a CloudStorage operation.
///
/// Every failure the SDK reports is a `StorageError`: switch over ``code`` to
/// decide what to do, and show ``description`` to a person. When a server
/// answered, ``httpStatus`` and ``serverMessage`` say what it said; when the
/// failure came from below (a socket, a file), ``underlyingError`` carries it.
///
/// ```swift
/// do {
///     let metadata = try await ref.putFileAsync(from: fileURL)
///     print("stored \(metadata.size) bytes")
/// } catch where error.code == .unreadableFile {
///     // `error` is a StorageError: the SDK's methods use typed throws.
///     print("cannot read the file: \(error)")
/// }
/// ```
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public let code: StorageErrorCode
    /// A sentence saying what went wrong, for people.
    public let message: String
    /// The HTTP status of the server's answer, when one caused this error.
    public let httpStatus: Int?
    /// The error message the server sent, when it sent one.
    public let serverMessage: String?
    /// The error this one wraps (a transport or file-system error, or the last
    /// cause of a ``StorageErrorCode/retryLimitExceeded`` failure).
    public let underlyingError: (any Error & Sendable)?

    /// Creates an error. The SDK creates these; tests and fakes may too.
    ///
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: A sentence for people.
    ///   - httpStatus: The server's HTTP status, if any.
    ///   - serverMessage: The server's own error text, if any.
    ///   - underlyingError: The wrapped cause, if any.
    public init(
        _ code: StorageErrorCode,
        _ message: String,
        httpStatus: Int? = nil,
        serverMessage: String? = nil,
        underlyingError: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.serverMessage = serverMessage
        self.underlyingError = underlyingError
    }

    /// The code, the message, and what the server or the underlying error said.
    public var description: String {
        var text = "StorageError.\(code): \(message)"
        if let httpStatus { text += " (HTTP \(httpStatus)" + (serverMessage.map { ": \($0)" } ?? "") + ")" }
        // A transport error the message was taken from ("tlsFailure: <message>") would only repeat it.
        if let underlyingError, !String(describing: underlyingError).hasSuffix(message) {
            text += " [caused by: \(underlyingError)]"
        }
        return text
    }
}

/// The kinds of ``StorageError``.
///
/// A struct with static members rather than an enum, so that new codes can be
/// added without breaking code that switches over them: compare with `==` or
/// use `switch` with a `default`.
public struct StorageErrorCode: Hashable, Sendable, CustomStringConvertible {
    package enum Kind: String, Hashable, Sendable {
        case unknown, objectNotFound, bucketNotFound, projectNotFound, quotaExceeded
        case unauthenticated, unauthorized, retryLimitExceeded, nonMatchingChecksum
        case cancelled, invalidArgument, bucketMismatch, internalError, pathError
        case unreadableFile, fileChanged, downloadSizeExceeded
        case protocolViolation, unwritableFile, objectChanged, tlsFailure, preconditionFailed
        case dataLoss, uploadSessionExpired, undecodableContent
    }

    package let kind: Kind

    /// The server answered with an error the SDK has no more specific code for.
    public static let unknown = Self(kind: .unknown)
    /// No object exists at the reference (HTTP 404 on an object).
    public static let objectNotFound = Self(kind: .objectNotFound)
    /// The bucket does not exist (HTTP 404 naming the bucket).
    public static let bucketNotFound = Self(kind: .bucketNotFound)
    /// The project does not exist or is not set up for Cloud Storage.
    public static let projectNotFound = Self(kind: .projectNotFound)
    /// The server kept answering HTTP 429 until the retry time ran out.
    public static let quotaExceeded = Self(kind: .quotaExceeded)
    /// The request had no valid credentials (HTTP 401).
    public static let unauthenticated = Self(kind: .unauthenticated)
    /// The credentials do not allow this operation (HTTP 403).
    public static let unauthorized = Self(kind: .unauthorized)
    /// Retryable failures went on for longer than the configured retry time;
    /// ``StorageError/underlyingError`` holds the last one.
    public static let retryLimitExceeded = Self(kind: .retryLimitExceeded)
    /// The server's checksum of the stored bytes differs from the SDK's own (for a compose,
    /// from the combination of the sources' checksums).
    public static let nonMatchingChecksum = Self(kind: .nonMatchingChecksum)
    /// The operation was cancelled by ``StorageUploadTask/cancel()`` or by
    /// cancelling the Swift task awaiting it.
    public static let cancelled = Self(kind: .cancelled)
    /// An argument or a setting is invalid, or the server rejected the request
    /// as malformed (HTTP 400).
    public static let invalidArgument = Self(kind: .invalidArgument)
    /// A URL names a different bucket from the ``Storage`` it was given to.
    public static let bucketMismatch = Self(kind: .bucketMismatch)
    /// The SDK broke its own rules, or the server gave up on a request in a
    /// way the protocol allows but the SDK cannot continue from (a session it
    /// forgot or finalized early again and again). An answer that breaks the
    /// protocol is ``protocolViolation`` instead.
    public static let internalError = Self(kind: .internalError)
    /// An object path breaks the path rules, or a URL cannot be parsed as one.
    public static let pathError = Self(kind: .pathError)
    /// The file to upload is missing, is not a regular file, or cannot be read, or the
    /// sequence of a streamed upload threw an error (the message names it; the session is
    /// discarded and no object is stored).
    /// (A download that cannot write its file is ``unwritableFile``.)
    public static let unreadableFile = Self(kind: .unreadableFile)
    /// A download cannot write its destination: the disk is full, permission
    /// is denied, or the directory vanished. The message names the system
    /// error (`errno`). Not retried: the server is not at fault, and the
    /// partial file is removed.
    public static let unwritableFile = Self(kind: .unwritableFile)
    /// The object changed on the server while it was being downloaded: an
    /// answer that continues the download (after a lost connection or a pause)
    /// names another generation, size or CRC32C than the answers before it, or
    /// (Google Cloud Storage) the server refuses a continuation pinned with
    /// `ifGenerationMatch` to the generation the download started with, as
    /// when another writer replaces the object mid-download. The download
    /// first starts over from the first byte (up to three times); this code
    /// means the object kept changing. Download again when the writer is done.
    /// (Bytes whose CRC32C differs from the one the server reported, with no
    /// sign of a new object, are ``nonMatchingChecksum``.)
    public static let objectChanged = Self(kind: .objectChanged)
    /// The server's answer breaks the wire protocol. Either it is malformed
    /// (an HTTP head or body that cannot be parsed, JSON cut short or of the
    /// wrong shape, a required header missing or unreadable; or, under TLS, a
    /// stream that breaks TLS after the handshake: bytes that are no TLS
    /// record, a record that fails decryption, one longer than TLS allows) or
    /// it is nonsensical (a number out of range, such as a negative size or a
    /// `Range` past `Int64.max`; an upload's committed offset that goes back
    /// below what the server reported before in the same session, or beyond
    /// the bytes sent; an answer longer than the 64 MiB any answer held in
    /// memory may have, which is refused as soon as it is announced).
    ///
    /// What is retried: an answer whose HTTP framing cannot be parsed is
    /// retried like a lost connection, within the operation's retry time
    /// (``StorageConfiguration/Retry/maxUploadTime``,
    /// ``StorageConfiguration/Retry/maxDownloadTime`` or
    /// ``StorageConfiguration/Retry/maxOperationTime``); when malformed answers
    /// last until that time runs out, the operation fails with this code
    /// (not ``retryLimitExceeded``). A success answer to an upload's
    /// finalizing request (or its one request) whose body cannot be read does
    /// not fail the upload: the server may have stored the object, so the
    /// upload asks the session (or reads the object's metadata), verifies
    /// size and CRC32C, and succeeds, or sends again, within
    /// ``StorageConfiguration/Retry/maxUploadTime``. Every other violation
    /// fails the operation at once: a server that breaks the protocol cannot
    /// be trusted to say what it stored.
    public static let protocolViolation = Self(kind: .protocolViolation)
    /// The file changed, shrank, grew or disappeared while it was being uploaded.
    public static let fileChanged = Self(kind: .fileChanged)
    /// The object is larger than the `maxSize` a download into memory allows;
    /// the download stopped before reading past that limit.
    public static let downloadSizeExceeded = Self(kind: .downloadSizeExceeded)

    /// The server could not be verified over TLS, or TLS could not be used at all, so no
    /// request was sent: the certificate's issuer is not trusted, it names another host,
    /// it has expired or is not valid yet, the server shares no TLS version of 1.2 or newer,
    /// an `https://` address points at a plain HTTP server, or (native transport) OpenSSL 3
    /// cannot be loaded or a trust root in ``StorageConfiguration/TLS/additionalTrustRoots``
    /// cannot be used. The message names the cause. Never retried: the next attempt would
    /// fail the same way. A private CA is trusted through
    /// ``StorageConfiguration/TLS/additionalTrustRoots``; there is no switch that turns
    /// verification off.
    public static let tlsFailure = Self(kind: .tlsFailure)

    /// A condition of the request's ``StoragePreconditions`` did not hold: the
    /// object has another generation or metageneration than the request
    /// required, exists when it had to be absent, or is absent when it had to
    /// exist. The object is as it was; nothing was written, changed or deleted.
    ///
    /// Google Cloud Storage answers HTTP 412, or HTTP 304 Not Modified for a
    /// download or metadata read whose `ifGenerationNotMatch` or
    /// `ifMetagenerationNotMatch` condition failed; both are this code. Never
    /// retried (the same request gets the same answer), including when the
    /// answer comes to the last request of a resumable upload, which checks
    /// the conditions again against the object stored then. Read the object's
    /// current metadata and decide again.
    public static let preconditionFailed = Self(kind: .preconditionFailed)

    /// A streamed upload (``StorageReference/putStream(_:size:metadata:preconditions:)``) cannot
    /// continue without bytes it no longer holds: the server lost bytes it had committed (it
    /// forgot the session, or reported a committed offset below what the upload had already
    /// dropped from its buffer), and a sequence cannot be read again. No object is stored and
    /// the session is discarded; upload again from the start of the data.
    public static let dataLoss = Self(kind: .dataLoss)

    /// An upload resumed from a ``StorageUploadSession`` (``Storage/resumeUpload(_:from:)``)
    /// cannot continue: the server no longer knows its session (it expired — about a week after
    /// it opened on Google Cloud Storage —, was cancelled, or the server forgot it). Nothing was
    /// stored; start the upload over with ``StorageReference/putFile(from:metadata:preconditions:)``
    /// and discard the saved description.
    public static let uploadSessionExpired = Self(kind: .uploadSessionExpired)

    /// An object stored gzip-compressed (`Content-Encoding: gzip`) cannot be decompressed: its
    /// bytes matched the server's CRC32C (so they are what is stored) but are not gzip, end
    /// inside a gzip member, or carry something after the last one; or the system's zlib could
    /// not be loaded. Nothing is delivered as a success: a file download leaves no file. Read
    /// the stored bytes with ``StorageConfiguration/decompressesDownloads`` set to false.
    public static let undecodableContent = Self(kind: .undecodableContent)

    /// The code's name, such as `objectNotFound`.
    public var description: String { kind.rawValue }
}

extension StorageError {
    package static func cancelled() -> StorageError {
        StorageError(.cancelled, "The operation was cancelled.")
    }

    package static func invalidArgument(_ message: String) -> StorageError {
        StorageError(.invalidArgument, message)
    }

    package static func pathError(_ message: String) -> StorageError {
        StorageError(.pathError, message)
    }

    package static func protocolViolation(_ message: String, underlyingError: (any Error & Sendable)? = nil) -> StorageError {
        StorageError(.protocolViolation, message, underlyingError: underlyingError)
    }

    package static func internalError(_ message: String, underlyingError: (any Error & Sendable)? = nil) -> StorageError {
        StorageError(.internalError, message, underlyingError: underlyingError)
    }
}
