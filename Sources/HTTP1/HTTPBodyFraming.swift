/// How a message body is delimited on the wire (RFC 9112 §6).
package enum HTTPBodyFraming: Hashable, Sendable {
    /// Exactly this many bytes (zero for no body).
    case length(Int64)
    /// The chunked transfer coding; see ``ChunkedBodyDecoder``.
    case chunked
    /// Everything until the server closes the connection (responses only).
    case untilClose

    /// The framing of a request body.
    ///
    /// Transfer-Encoding together with Content-Length is rejected outright, as
    /// RFC 9112 §6.1 permits and request smuggling demands; so is
    /// Transfer-Encoding in an HTTP/1.0 request. No framing header means no body.
    ///
    /// - Throws: ``HTTP1Error/conflictingFraming``, ``HTTP1Error/invalidContentLength``,
    ///   ``HTTP1Error/invalidTransferEncoding`` (answer 400) or
    ///   ``HTTP1Error/unsupportedTransferCoding`` (answer 501).
    package static func request(_ head: HTTPRequestHead) throws(HTTP1Error) -> HTTPBodyFraming {
        let hasTransferEncoding = !head.headers.values("Transfer-Encoding").isEmpty
        let contentLength = try contentLength(head.headers)
        if hasTransferEncoding {
            if contentLength != nil { throw .conflictingFraming }
            if head.version == .http10 { throw .invalidTransferEncoding }
            guard try isChunked(head.headers) else { throw .invalidTransferEncoding }
            return .chunked
        }
        return .length(contentLength ?? 0)
    }

    /// The framing of a response body to a request with `requestMethod` (RFC 9112 §6.3).
    ///
    /// - Throws: ``HTTP1Error/invalidContentLength`` when the length is unusable
    ///   (the connection cannot be reused), or an error about Transfer-Encoding.
    package static func response(_ head: HTTPResponseHead, requestMethod: String) throws(HTTP1Error) -> HTTPBodyFraming
    {
        if requestMethod == "HEAD" || head.status < 200 || head.status == 204 || head.status == 304 {
            return .length(0)
        }
        if !head.headers.values("Transfer-Encoding").isEmpty {
            // Transfer-Encoding overrides Content-Length in a response; a final coding
            // other than chunked means the body runs until the connection closes.
            do {
                return try isChunked(head.headers) ? .chunked : .untilClose
            } catch {
                return .untilClose
            }
        }
        if let length = try contentLength(head.headers) { return .length(length) }
        return .untilClose
    }

    /// The one Content-Length value, or nil when there is none.
    ///
    /// Repeated identical values (`5, 5`, or two fields of `5`) count as one, as
    /// RFC 9110 §8.6 allows; different values, signs, spaces inside the number,
    /// an empty value or a value beyond `Int64.max` are errors.
    ///
    /// - Throws: ``HTTP1Error/invalidContentLength``.
    package static func contentLength(_ headers: HTTPHeaders) throws(HTTP1Error) -> Int64? {
        var result: Int64?
        for value in headers.values("Content-Length") {
            for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = element.trimmingHTTPWhitespace().utf8
                guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy(ASCII.isDigit) else {
                    throw .invalidContentLength
                }
                var number: Int64 = 0
                for digit in digits {
                    let (times10, overflow1) = number.multipliedReportingOverflow(by: 10)
                    let (sum, overflow2) = times10.addingReportingOverflow(Int64(digit - ASCII.zero))
                    guard !overflow1, !overflow2 else { throw .invalidContentLength }
                    number = sum
                }
                if let previous = result, previous != number { throw .invalidContentLength }
                result = number
            }
        }
        return result
    }

    /// Whether the transfer codings end with exactly one `chunked`.
    ///
    /// - Throws: ``HTTP1Error/unsupportedTransferCoding`` for any coding but `chunked`,
    ///   ``HTTP1Error/invalidTransferEncoding`` when `chunked` repeats or is not last.
    private static func isChunked(_ headers: HTTPHeaders) throws(HTTP1Error) -> Bool {
        let codings = headers.tokens("Transfer-Encoding").map { coding in
            // Parameters (";q=…") do not change which coding it is.
            String(coding.split(separator: ";").first.map { $0.trimmingHTTPWhitespace() } ?? "")
        }
        guard !codings.isEmpty else { throw .invalidTransferEncoding }
        if codings.contains(where: { $0 != "chunked" }) { throw .unsupportedTransferCoding }
        guard codings.count == 1 else { throw .invalidTransferEncoding }
        return true
    }
}
