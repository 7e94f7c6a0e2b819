internal import CZlibLoader

/// Why gzip bytes could not be encoded or decoded.
package struct GzipError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Hashable, Sendable {
        /// The system's zlib could not be loaded.
        case unavailable
        /// The bytes are not gzip, or are corrupt (a bad header, block, CRC-32 or length).
        case badData
        /// The bytes ended inside a gzip member.
        case truncated
        /// zlib refused for another reason (out of memory).
        case failed
    }

    /// What went wrong.
    package let kind: Kind
    /// zlib's or the loader's words.
    package let detail: String

    package var description: String {
        switch kind {
        case .unavailable: "gzip is unavailable: \(detail)"
        case .badData: "the gzip data is invalid: \(detail)"
        case .truncated: "the gzip data ends inside a member"
        case .failed: "gzip failed: \(detail)"
        }
    }
}

/// Decodes gzip (RFC 1952) as its bytes arrive, in bounded memory: each ``decode(_:into:)``
/// hands the decoded bytes on in pieces of at most ``outputSize`` bytes, so a body that inflates a
/// thousandfold (a "gzip bomb") never holds more than one piece. Concatenated members decode as
/// one stream, as gzip(1) does; anything after a member that is not another member is an error.
///
/// Not thread-safe: one thread at a time (it is `~Copyable` and owns the zlib stream).
package struct GzipDecoder: ~Copyable {
    private let stream: OpaquePointer
    /// Where zlib writes decoded bytes; owned, freed with the decoder.
    private let buffer: UnsafeMutableRawBufferPointer
    /// Whether the current member ended (its CRC-32 and length checked) and no byte of another arrived.
    private var atMemberEnd = false
    /// Whether any byte was decoded into a member (an empty body is not a gzip stream).
    private var sawMember = false
    /// The most bytes handed on at once.
    package let outputSize: Int

    /// A decoder at the start of a gzip stream.
    ///
    /// - Throws: ``GzipError/Kind/unavailable`` when the system's zlib cannot be loaded.
    package init(outputSize: Int = 64 * 1024) throws(GzipError) {
        try Self.checkAvailable()
        guard let stream = cs_gzip_inflater() else { throw GzipError(kind: .failed, detail: "no memory for inflate") }
        self.stream = stream
        self.outputSize = max(1, outputSize)
        buffer = .allocate(byteCount: self.outputSize, alignment: 1)
    }

    deinit {
        cs_gzip_free(stream)
        buffer.deallocate()
    }

    /// Throws unless the system's zlib loads.
    package static func checkAvailable() throws(GzipError) {
        var message = [CChar](repeating: 0, count: 256)
        guard cs_gzip_load(&message, message.count) == 1 else {
            throw GzipError(
                kind: .unavailable,
                detail: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    /// Decodes `input`, handing every decoded piece to `output` before it returns.
    ///
    /// - Parameter failure: Turns a gzip error into the caller's error type.
    /// - Throws: `failure(_:)` of ``GzipError/Kind/badData`` for bytes that are not gzip;
    ///   whatever `output` throws.
    package mutating func decode<E: Error>(
        _ input: UnsafeRawBufferPointer, failure: (GzipError) -> E,
        into output: (UnsafeRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        var rest = input
        while !rest.isEmpty {
            if atMemberEnd {
                // Another member follows.
                guard cs_gzip_restart(stream) == CS_GZIP_OK else {
                    throw failure(GzipError(kind: .failed, detail: "inflateReset"))
                }
                atMemberEnd = false
            }
            var consumed = 0
            var produced = 0
            var message = [CChar](repeating: 0, count: 128)
            let result = cs_gzip_inflate(
                stream, rest.baseAddress!.assumingMemoryBound(to: UInt8.self), rest.count, &consumed,
                buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count, &produced, &message,
                message.count)
            sawMember = true
            if result < 0 {
                let detail = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw failure(GzipError(kind: result == CS_GZIP_BAD_DATA ? .badData : .failed, detail: detail))
            }
            rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            if produced > 0 {
                try output(UnsafeRawBufferPointer(rebasing: buffer[..<produced]))
            }
            if result == CS_GZIP_MEMBER_END { atMemberEnd = true }
            if consumed == 0 && produced == 0 && result == CS_GZIP_OK {
                // zlib keeps no more than it can: no progress with input left means it needs output room
                // it already had, which cannot happen; refuse rather than loop.
                throw failure(GzipError(kind: .failed, detail: "inflate made no progress"))
            }
        }
        // Input ended: output zlib still holds (a full buffer last time) is drained by the next call or `finish`.
        try drain(failure: failure, into: output)
    }

    /// Hands on what zlib holds back when the last call filled the whole output buffer.
    private mutating func drain<E: Error>(
        failure: (GzipError) -> E, into output: (UnsafeRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        guard !atMemberEnd else { return }
        while true {
            var consumed = 0
            var produced = 0
            var message = [CChar](repeating: 0, count: 128)
            var none: UInt8 = 0
            let result = cs_gzip_inflate(
                stream, &none, 0, &consumed, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count,
                &produced, &message, message.count)
            if result < 0 {
                let detail = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw failure(GzipError(kind: result == CS_GZIP_BAD_DATA ? .badData : .failed, detail: detail))
            }
            if produced > 0 {
                try output(UnsafeRawBufferPointer(rebasing: buffer[..<produced]))
            }
            if result == CS_GZIP_MEMBER_END { atMemberEnd = true }
            if produced < buffer.count || atMemberEnd { return }
        }
    }

    /// `bytes` decoded whole, refusing more than `limit` decoded bytes.
    package static func decode(_ bytes: UnsafeRawBufferPointer, limit: Int = .max) throws(GzipError) -> [UInt8] {
        var decoder = try GzipDecoder()
        var result: [UInt8] = []
        try decoder.decode(bytes, failure: { $0 }) { (piece) throws(GzipError) in
            guard result.count + piece.count <= limit else {
                throw GzipError(kind: .failed, detail: "more than \(limit) decoded bytes")
            }
            result.append(contentsOf: piece)
        }
        try decoder.finish()
        return result
    }

    /// Checks that the input ended at the end of a member.
    ///
    /// - Throws: ``GzipError/Kind/truncated`` when it ended inside one (or there was none).
    package func finish() throws(GzipError) {
        guard sawMember, atMemberEnd else { throw GzipError(kind: .truncated, detail: "") }
    }
}

/// Encodes bytes as one gzip member, deterministically: the header carries no name and a zero
/// time, so the same bytes at the same level always encode to the same bytes (a resumable
/// upload can re-encode from the start and skip what the server already has).
///
/// Not thread-safe: one thread at a time.
package struct GzipEncoder: ~Copyable {
    private let stream: OpaquePointer
    /// Where zlib writes encoded bytes; owned, freed with the encoder.
    private let buffer: UnsafeMutableRawBufferPointer

    /// An encoder at `level` (1 fastest … 9 smallest; 6 is gzip(1)'s default).
    ///
    /// - Throws: ``GzipError/Kind/unavailable`` when the system's zlib cannot be loaded.
    package init(level: Int = 6, outputSize: Int = 64 * 1024) throws(GzipError) {
        try GzipDecoder.checkAvailable()
        guard let stream = cs_gzip_deflater(Int32(min(9, max(0, level)))) else {
            throw GzipError(kind: .failed, detail: "no memory for deflate")
        }
        self.stream = stream
        buffer = .allocate(byteCount: max(64, outputSize), alignment: 1)
    }

    deinit {
        cs_gzip_free(stream)
        buffer.deallocate()
    }

    /// Encodes `input`; with `finish`, also the member's end. Every encoded piece goes to `output`
    /// before this returns.
    ///
    /// - Parameter failure: Turns a gzip error into the caller's error type.
    package mutating func encode<E: Error>(
        _ input: UnsafeRawBufferPointer, finish: Bool, failure: (GzipError) -> E,
        into output: (UnsafeRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        var rest = input
        var none: UInt8 = 0
        while true {
            var consumed = 0
            var produced = 0
            let result = withUnsafePointer(to: &none) { empty in
                cs_gzip_deflate(
                    stream, rest.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? empty, rest.count, &consumed,
                    buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count, &produced, finish ? 1 : 0)
            }
            guard result >= 0 else { throw failure(GzipError(kind: .failed, detail: "deflate")) }
            if consumed > 0 { rest = UnsafeRawBufferPointer(rebasing: rest[consumed...]) }
            if produced > 0 {
                try output(UnsafeRawBufferPointer(rebasing: buffer[..<produced]))
            }
            if result == CS_GZIP_DONE { return }
            // Without `finish`, zlib holds the tail until later: done once input is taken and the buffer not full.
            if !finish && rest.isEmpty && produced < buffer.count { return }
        }
    }

    /// `bytes` as one gzip member.
    package static func encode(_ bytes: UnsafeRawBufferPointer, level: Int = 6) throws(GzipError) -> [UInt8] {
        var encoder = try GzipEncoder(level: level)
        var result: [UInt8] = []
        try encoder.encode(bytes, finish: true, failure: { $0 }) { (piece) throws(GzipError) in
            result.append(contentsOf: piece)
        }
        return result
    }
}

// SAFETY (`@unchecked Sendable`): each is ~Copyable, so exactly one owner holds the zlib stream
// and its buffer at any time; moving that owner to another thread moves the whole state, which
// zlib does not tie to a thread.
extension GzipDecoder: @unchecked Sendable {}  // SAFETY: see the note above
extension GzipEncoder: @unchecked Sendable {}  // SAFETY: see the note above
