/// Why bytes could not be read or written as HTTP/1.1.
///
/// An opaque struct over a private code, so that codes can be added without
/// breaking exhaustive switches; compare with the static members.
package struct HTTP1Error: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable {
        case headTooLarge = "the message head exceeds the size limit"
        case tooManyFields = "the message head has too many header fields"
        case notHTTP = "the bytes are not an HTTP/1.x message"
        case unsupportedVersion = "the HTTP version is not 1.x"
        case invalidStartLine = "the request line or status line is malformed"
        case invalidLineEnding = "a line does not end with CRLF"
        case obsoleteLineFolding = "a header field is folded over several lines (obs-fold)"
        case invalidFieldName = "a header field name is malformed"
        case invalidFieldValue = "a header field value contains a forbidden character"
        case invalidContentLength = "Content-Length is not one non-negative decimal number"
        case conflictingFraming = "both Transfer-Encoding and Content-Length frame the body"
        case unsupportedTransferCoding = "a transfer coding other than chunked is used"
        case invalidTransferEncoding = "chunked is not the final transfer coding, or appears twice"
        case invalidChunkSize = "a chunk size is missing, not hexadecimal or too large"
        case invalidChunkFraming = "chunk data is not followed by CRLF"
        case chunkLineTooLong = "a chunk size line or its extensions are too long"
        case trailersTooLarge = "the chunked trailer section is too large"
        case invalidStatus = "the status code is not a three-digit number"
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// The head did not end within ``HTTPHeadLimits/maxHeadBytes``.
    package static let headTooLarge = HTTP1Error(.headTooLarge)
    /// The head has more than ``HTTPHeadLimits/maxFields`` field lines.
    package static let tooManyFields = HTTP1Error(.tooManyFields)
    /// The first bytes cannot start an HTTP/1.x message (TLS, binary garbage).
    package static let notHTTP = HTTP1Error(.notHTTP)
    /// `HTTP/2.0` (the HTTP/2 connection preface) or another major version.
    package static let unsupportedVersion = HTTP1Error(.unsupportedVersion)
    /// The request line or status line does not follow the grammar.
    package static let invalidStartLine = HTTP1Error(.invalidStartLine)
    /// A bare LF or a bare CR inside the head or chunk framing.
    package static let invalidLineEnding = HTTP1Error(.invalidLineEnding)
    /// A field line starting with whitespace; RFC 9112 §5.2 lets a recipient reject it.
    package static let obsoleteLineFolding = HTTP1Error(.obsoleteLineFolding)
    /// A field name that is not a token, or whitespace before the colon.
    package static let invalidFieldName = HTTP1Error(.invalidFieldName)
    /// A field value with a control character (NUL, CR, LF, DEL, …).
    package static let invalidFieldValue = HTTP1Error(.invalidFieldValue)
    /// Content-Length with a sign, spaces, several different values or a value beyond `Int64.max`.
    package static let invalidContentLength = HTTP1Error(.invalidContentLength)
    /// A request with both Transfer-Encoding and Content-Length (a request-smuggling shape).
    package static let conflictingFraming = HTTP1Error(.conflictingFraming)
    /// A transfer coding this codec does not implement (`gzip`, `compress`, …).
    package static let unsupportedTransferCoding = HTTP1Error(.unsupportedTransferCoding)
    /// `chunked` not last, repeated, or Transfer-Encoding in an HTTP/1.0 request.
    package static let invalidTransferEncoding = HTTP1Error(.invalidTransferEncoding)
    /// A chunk size that is empty, not hexadecimal, or overflows `Int64`.
    package static let invalidChunkSize = HTTP1Error(.invalidChunkSize)
    /// Chunk data not followed by CRLF.
    package static let invalidChunkFraming = HTTP1Error(.invalidChunkFraming)
    /// A chunk size line (with its extensions) beyond the decoder's limit.
    package static let chunkLineTooLong = HTTP1Error(.chunkLineTooLong)
    /// A trailer section beyond the decoder's limit.
    package static let trailersTooLarge = HTTP1Error(.trailersTooLarge)
    /// A status code outside 100...999, or not three digits.
    package static let invalidStatus = HTTP1Error(.invalidStatus)

    package var description: String { "HTTP/1.1: \(code.rawValue)" }
}
