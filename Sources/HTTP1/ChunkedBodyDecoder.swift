/// Decodes the chunked transfer coding incrementally, over input split anywhere.
///
/// The decoder never copies: ``decode(_:)`` consumes framing bytes and points
/// at the chunk data inside the input it was given. A reader that wants to
/// receive chunk data straight into its destination may instead read up to
/// ``dataRemainingInChunk`` bytes itself and report them with ``consumeData(_:)``.
///
/// Chunk extensions are ignored (within ``Limits/maxLineBytes``); trailer
/// fields are skipped (within ``Limits/maxTrailerBytes``). Bare LF or CR in the
/// framing, a chunk size without hexadecimal digits, or one beyond `Int64.max`
/// are errors.
///
/// ```swift
/// var decoder = ChunkedBodyDecoder()
/// let (used, data) = try decoder.decode(input)   // input[data] is body; input[used...] is not yet decoded
/// ```
package struct ChunkedBodyDecoder: Sendable {
    /// Bounds on the framing that is not body.
    package struct Limits: Hashable, Sendable {
        /// The most bytes a chunk size line may take, extensions included.
        package var maxLineBytes: Int
        /// The most bytes the trailer section may take.
        package var maxTrailerBytes: Int

        package init(maxLineBytes: Int = 4096, maxTrailerBytes: Int = 16 * 1024) {
            self.maxLineBytes = maxLineBytes
            self.maxTrailerBytes = maxTrailerBytes
        }
    }

    private enum State: Hashable, Sendable {
        case sizeStart
        case size(Int64)
        case sizeWhitespace(Int64)
        case chunkExtension(Int64)
        case sizeLF(Int64)
        case data(remaining: Int64)
        case dataCR
        case dataLF
        case trailerLineStart
        case trailerLine
        case trailerLF
        case finalLF
        case done
    }

    package let limits: Limits
    private var state = State.sizeStart
    private var lineBytes = 0
    private var trailerBytes = 0

    package init(limits: Limits = .init()) {
        self.limits = limits
    }

    /// Whether the last chunk and the trailer section have been read.
    package var isComplete: Bool { state == .done }

    /// Data bytes left in the current chunk when the decoder is inside one, else 0.
    package var dataRemainingInChunk: Int64 {
        if case .data(let remaining) = state { return remaining }
        return 0
    }

    /// Records that the caller read `count` bytes of chunk data itself (at most ``dataRemainingInChunk``).
    package mutating func consumeData(_ count: Int) {
        guard case .data(let remaining) = state, count > 0 else { return }
        let left = remaining - Int64(min(Int64(count), remaining))
        state = left == 0 ? .dataCR : .data(remaining: left)
    }

    /// Consumes framing at the start of `input` up to and including the next stretch of chunk data.
    ///
    /// - Parameters:
    ///   - input: Bytes that follow what was consumed before.
    ///   - maxDataBytes: The most chunk data to take; 0 stops at the start of the data, so that
    ///     the caller can read it with ``consumeData(_:)`` into its own buffer.
    /// - Returns: How many bytes of `input` were used, and the range of chunk data among them
    ///   (empty when the input held framing only). Call again with the rest of the input.
    ///   Nothing after the end of the body is consumed.
    /// - Throws: ``HTTP1Error`` when the framing is invalid or beyond the limits.
    package mutating func decode(
        _ input: UnsafeRawBufferPointer,
        maxDataBytes: Int = .max
    ) throws(HTTP1Error) -> (consumed: Int, data: Range<Int>) {
        var index = 0
        while index < input.count {
            if case .data(let remaining) = state {
                let count = Int(min(remaining, Int64(min(input.count - index, maxDataBytes))))
                consumeData(count)
                return (index + count, index..<index + count)
            }
            if state == .done { break }
            try step(input[index])
            index += 1
        }
        return (index, index..<index)
    }

    private mutating func step(_ byte: UInt8) throws(HTTP1Error) {
        switch state {
        case .sizeStart:
            guard let digit = Self.hexValue(byte) else { throw .invalidChunkSize }
            lineBytes = 1
            state = .size(Int64(digit))
        case .size(let value):
            try stepInSize(value, byte)
        case .sizeWhitespace(let value):
            try stepAfterSize(value, byte)
        case .chunkExtension(let value):
            try stepInExtension(value, byte)
        case .sizeLF(let value):
            guard byte == ASCII.lf else { throw .invalidLineEnding }
            state = value == 0 ? .trailerLineStart : .data(remaining: value)
        case .data:
            break  // handled by decode(_:)
        case .dataCR:
            guard byte == ASCII.cr else { throw .invalidChunkFraming }
            state = .dataLF
        case .dataLF:
            guard byte == ASCII.lf else { throw .invalidChunkFraming }
            state = .sizeStart
        case .trailerLineStart:
            try stepInTrailerLine(byte, atStart: true)
        case .trailerLine:
            try stepInTrailerLine(byte, atStart: false)
        case .trailerLF:
            try countTrailerByte()
            guard byte == ASCII.lf else { throw .invalidLineEnding }
            state = .trailerLineStart
        case .finalLF:
            guard byte == ASCII.lf else { throw .invalidLineEnding }
            state = .done
        case .done:
            break
        }
    }

    /// After a hexadecimal digit of the size: more digits, or what may end the size.
    private mutating func stepInSize(_ value: Int64, _ byte: UInt8) throws(HTTP1Error) {
        try countLineByte()
        if let digit = Self.hexValue(byte) {
            guard value <= (Int64.max - Int64(digit)) / 16 else { throw .invalidChunkSize }
            state = .size(value * 16 + Int64(digit))
        } else if byte == UInt8(ascii: ";") {
            state = .chunkExtension(value)
        } else if byte == ASCII.space || byte == ASCII.tab {
            state = .sizeWhitespace(value)
        } else if byte == ASCII.cr {
            state = .sizeLF(value)
        } else if byte == ASCII.lf {
            throw .invalidLineEnding
        } else {
            throw .invalidChunkSize
        }
    }

    /// In the whitespace after the size: no more digits, only an extension or the line's end.
    private mutating func stepAfterSize(_ value: Int64, _ byte: UInt8) throws(HTTP1Error) {
        try countLineByte()
        if byte == UInt8(ascii: ";") {
            state = .chunkExtension(value)
        } else if byte == ASCII.cr {
            state = .sizeLF(value)
        } else if byte == ASCII.lf {
            throw .invalidLineEnding
        } else if byte != ASCII.space && byte != ASCII.tab {
            throw .invalidChunkSize
        }
    }

    /// In a chunk extension: skipped up to the line's end, but only field-value bytes may be in it.
    private mutating func stepInExtension(_ value: Int64, _ byte: UInt8) throws(HTTP1Error) {
        try countLineByte()
        if byte == ASCII.cr {
            state = .sizeLF(value)
        } else if byte == ASCII.lf {
            throw .invalidLineEnding
        } else if !ASCII.isFieldValueChar(byte) {
            throw .invalidChunkSize
        }
    }

    /// In a trailer field's line, which is skipped; CR at its start ends the trailer section.
    private mutating func stepInTrailerLine(_ byte: UInt8, atStart: Bool) throws(HTTP1Error) {
        try countTrailerByte()
        if byte == ASCII.cr {
            state = atStart ? .finalLF : .trailerLF
        } else if byte == ASCII.lf {
            throw .invalidLineEnding
        } else {
            state = .trailerLine
        }
    }

    private mutating func countLineByte() throws(HTTP1Error) {
        lineBytes += 1
        if lineBytes > limits.maxLineBytes { throw .chunkLineTooLong }
    }

    private mutating func countTrailerByte() throws(HTTP1Error) {
        trailerBytes += 1
        if trailerBytes > limits.maxTrailerBytes { throw .trailersTooLarge }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
