/// Writes the chunked transfer coding (RFC 9112 §7.1).
///
/// A chunk is ``chunkHeader(length:)``, the data, then ``chunkEnd``; the body
/// ends with ``lastChunk``. Sending the three parts separately (for example
/// with `writev`) avoids copying the data.
///
/// ```swift
/// var wire: [UInt8] = []
/// ChunkedBodyEncoder.appendChunk(bytes, to: &wire)
/// wire += ChunkedBodyEncoder.lastChunk
/// ```
package enum ChunkedBodyEncoder {
    /// `<hex length>\r\n`. A length of zero would end the body, so callers skip empty chunks.
    package static func chunkHeader(length: Int) -> [UInt8] {
        Array(String(length, radix: 16).utf8) + [ASCII.cr, ASCII.lf]
    }

    /// The CRLF that follows a chunk's data.
    package static let chunkEnd: [UInt8] = [ASCII.cr, ASCII.lf]

    /// The last chunk with an empty trailer section: `0\r\n\r\n`.
    package static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    /// Appends `bytes` as one chunk (nothing when `bytes` is empty).
    package static func appendChunk(_ bytes: UnsafeRawBufferPointer, to buffer: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        buffer += chunkHeader(length: bytes.count)
        buffer += bytes
        buffer += chunkEnd
    }

    /// Appends the last chunk followed by `trailers`.
    ///
    /// - Throws: ``HTTP1Error/invalidFieldName`` or ``HTTP1Error/invalidFieldValue`` for a field that cannot be sent.
    package static func appendLastChunk(trailers: HTTPHeaders = [:], to buffer: inout [UInt8]) throws(HTTP1Error) {
        buffer += Array("0\r\n".utf8)
        try HTTPHeadSerializer.appendFields(trailers, to: &buffer)
        buffer += [ASCII.cr, ASCII.lf]
    }
}
