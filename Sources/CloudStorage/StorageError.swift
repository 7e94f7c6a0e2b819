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
        if let underlyingError { text += " [caused by: \(underlyingError)]" }
        return text
    }
}

/// The kinds of ``StorageError``.
///
/// A struct with static members rather than an enum, so that new codes can be
/// added without breaking code that switches over them: compare with `==` or
/// use `switch` with a `default`.
public struct StorageErrorCode: Hashable, Sendable, CustomStringConvertible {
    enum Kind: String, Hashable, Sendable {
        case unknown, objectNotFound, bucketNotFound, projectNotFound, quotaExceeded
        case unauthenticated, unauthorized, retryLimitExceeded, nonMatchingChecksum
        case cancelled, invalidArgument, bucketMismatch, internalError, pathError
        case unreadableFile, fileChanged, downloadSizeExceeded
    }

    let kind: Kind

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
    /// The server's checksum of the stored bytes differs from the SDK's own.
    public static let nonMatchingChecksum = Self(kind: .nonMatchingChecksum)
    /// The operation was cancelled by ``StorageUploadTask/cancel()`` or by
    /// cancelling the Swift task awaiting it.
    public static let cancelled = Self(kind: .cancelled)
    /// An argument or a setting is invalid, or the server rejected the request
    /// as malformed (HTTP 400).
    public static let invalidArgument = Self(kind: .invalidArgument)
    /// A URL names a different bucket from the ``Storage`` it was given to.
    public static let bucketMismatch = Self(kind: .bucketMismatch)
    /// The server or the SDK broke its own rules: an answer that makes no
    /// sense for the protocol.
    public static let internalError = Self(kind: .internalError)
    /// An object path breaks the path rules, or a URL cannot be parsed as one.
    public static let pathError = Self(kind: .pathError)
    /// The file to upload is missing, is not a regular file, or cannot be read.
    public static let unreadableFile = Self(kind: .unreadableFile)
    /// The file changed, shrank, grew or disappeared while it was being uploaded.
    public static let fileChanged = Self(kind: .fileChanged)
    /// The object is larger than the `maxSize` a download into memory allows;
    /// the download stopped before reading past that limit.
    public static let downloadSizeExceeded = Self(kind: .downloadSizeExceeded)

    /// The code's name, such as `objectNotFound`.
    public var description: String { kind.rawValue }
}

extension StorageError {
    static func cancelled() -> StorageError {
        StorageError(.cancelled, "The operation was cancelled.")
    }

    static func invalidArgument(_ message: String) -> StorageError {
        StorageError(.invalidArgument, message)
    }

    static func pathError(_ message: String) -> StorageError {
        StorageError(.pathError, message)
    }

    static func internalError(_ message: String, underlyingError: (any Error & Sendable)? = nil) -> StorageError {
        StorageError(.internalError, message, underlyingError: underlyingError)
    }
}
