/// Finds and parses a message head at the start of a growing byte buffer.
///
/// Feed it the same buffer again each time more bytes arrive (the bytes already
/// seen must not change); it resumes scanning where it stopped, so feeding a
/// head one byte at a time costs linear time. When the head is complete it
/// returns the head and how many bytes it used; the bytes after that belong to
/// the body or to the next message. Call ``reset()`` before the next head.
///
/// Rules (RFC 9112): lines end with CRLF (a bare LF or CR is rejected, not
/// guessed at); field names are tokens followed directly by `:`; leading and
/// trailing spaces and tabs of a value are dropped; obs-fold is rejected;
/// control characters in values are rejected. Empty lines before a request
/// line are skipped (§2.2).
///
/// ```swift
/// var parser = HTTPHeadParser()
/// if let (head, used) = try buffer.withUnsafeBytes({ try parser.parseRequest($0) }) { … }
/// ```
package struct HTTPHeadParser: Sendable {
    package let limits: HTTPHeadLimits
    /// Bytes already scanned without finding the end of the head.
    private var scanned = 0
    /// Where the first non-empty line starts (after skipped empty lines).
    private var headStart = 0
    private var lineStart = 0
    private var lines = 0

    package init(limits: HTTPHeadLimits = .init()) {
        self.limits = limits
    }

    /// Forgets progress, to parse the next head from the start of a new buffer.
    package mutating func reset() {
        scanned = 0
        headStart = 0
        lineStart = 0
        lines = 0
    }

    /// Parses a request head at the start of `bytes`.
    ///
    /// - Returns: The head and the number of bytes it took, or nil if the head is not complete yet.
    /// - Throws: ``HTTP1Error`` when the bytes can never become a valid head.
    package mutating func parseRequest(
        _ bytes: UnsafeRawBufferPointer
    ) throws(HTTP1Error) -> (head: HTTPRequestHead, consumed: Int)? {
        guard let end = try scan(bytes, isRequest: true) else { return nil }
        var lines = Self.lines(bytes, from: headStart, to: end)
        let startLine = lines.removeFirst()
        let (method, target, version) = try Self.requestLine(bytes, startLine)
        let headers = try Self.fields(bytes, lines)
        return (HTTPRequestHead(method: method, target: target, version: version, headers: headers), end)
    }

    /// Parses a response head at the start of `bytes`.
    ///
    /// - Returns: The head and the number of bytes it took, or nil if the head is not complete yet.
    /// - Throws: ``HTTP1Error`` when the bytes can never become a valid head.
    package mutating func parseResponse(
        _ bytes: UnsafeRawBufferPointer
    ) throws(HTTP1Error) -> (head: HTTPResponseHead, consumed: Int)? {
        guard let end = try scan(bytes, isRequest: false) else { return nil }
        var lines = Self.lines(bytes, from: headStart, to: end)
        let startLine = lines.removeFirst()
        let (version, status, reason) = try Self.statusLine(bytes, startLine)
        let headers = try Self.fields(bytes, lines)
        return (HTTPResponseHead(status: status, headers: headers, version: version, reason: reason), end)
    }

    // MARK: - Scanning

    /// Returns the offset just past the empty line ending the head, or nil if not there yet.
    private mutating func scan(_ bytes: UnsafeRawBufferPointer, isRequest: Bool) throws(HTTP1Error) -> Int? {
        var index = scanned
        defer { scanned = index }
        while index < bytes.count {
            if index >= limits.maxHeadBytes { throw .headTooLarge }
            let byte = bytes[index]
            if index == headStart {
                // The first byte of a message tells HTTP from TLS or binary garbage at once,
                // instead of waiting for a line ending that may never come.
                if isRequest && (byte == ASCII.cr || byte == ASCII.lf) {
                    // An empty line before the request line (§2.2): skipped below.
                } else if isRequest ? !ASCII.isTokenChar(byte) : byte != UInt8(ascii: "H") {
                    throw .notHTTP
                }
            }
            if byte == ASCII.lf {
                guard index > 0, bytes[index - 1] == ASCII.cr, index - 1 >= lineStart else {
                    throw .invalidLineEnding
                }
                let lineLength = index - 1 - lineStart
                index += 1
                if lineLength == 0 {
                    if lines == 0 {
                        guard isRequest else { throw .invalidStartLine }
                        headStart = index
                        lineStart = index
                        continue
                    }
                    return index
                }
                lines += 1
                lineStart = index
                if lines - 1 > limits.maxFields { throw .tooManyFields }
                continue
            }
            index += 1
        }
        if !isRequest {
            // A response must start with "HTTP/": check the prefix we have.
            let prefix = Array("HTTP/".utf8)
            for offset in 0..<min(prefix.count, bytes.count - headStart)
            where bytes[headStart + offset] != prefix[offset] {
                throw .notHTTP
            }
        }
        return nil
    }

    /// The byte ranges of the lines between `start` and `end`, without their CRLF and without the final empty line.
    private static func lines(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var lineStart = start
        var index = start
        while index < end - 2 {
            if bytes[index] == ASCII.cr && bytes[index + 1] == ASCII.lf {
                result.append(lineStart..<index)
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        return result
    }

    // MARK: - Start lines

    private static func requestLine(
        _ bytes: UnsafeRawBufferPointer,
        _ line: Range<Int>
    ) throws(HTTP1Error) -> (String, String, HTTPVersion) {
        let slice = bytes[line]
        let parts = slice.split(separator: ASCII.space, omittingEmptySubsequences: false)
        if parts.count == 3, let version = try version(parts[2]) {
            let method = parts[0]
            let target = parts[1]
            guard !method.isEmpty, method.allSatisfy(ASCII.isTokenChar) else { throw .invalidStartLine }
            guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw .invalidStartLine }
            return (string(method), string(target), version)
        }
        // "PRI * HTTP/2.0" and friends have three parts; anything else that ends in a version of
        // another major is still not ours to answer.
        if let last = parts.last { _ = try version(last) }
        throw .invalidStartLine
    }

    private static func statusLine(
        _ bytes: UnsafeRawBufferPointer,
        _ line: Range<Int>
    ) throws(HTTP1Error) -> (HTTPVersion, Int, String) {
        let slice = bytes[line]
        guard slice.count >= 12 else { throw .invalidStartLine }
        let start = slice.startIndex
        guard let version = try version(slice[start..<start + 8]) else { throw .notHTTP }
        guard slice[start + 8] == ASCII.space else { throw .invalidStartLine }
        let code = slice[start + 9..<start + 12]
        guard code.allSatisfy(ASCII.isDigit) else { throw .invalidStatus }
        let status = code.reduce(0) { $0 * 10 + Int($1 - ASCII.zero) }
        guard status >= 100 else { throw .invalidStatus }
        var reason = ""
        if slice.count > 12 {
            // Some servers omit the space and reason; when present the space is required.
            guard slice[start + 12] == ASCII.space else { throw .invalidStatus }
            let phrase = slice[(start + 13)...]
            guard phrase.allSatisfy(ASCII.isFieldValueChar) else { throw .invalidStartLine }
            reason = string(phrase)
        }
        return (version, status, reason)
    }

    /// `HTTP/d.d`; nil if the bytes do not have that shape; throws for another major version.
    private static func version(_ bytes: Slice<UnsafeRawBufferPointer>) throws(HTTP1Error) -> HTTPVersion? {
        guard bytes.count == 8, bytes.starts(with: "HTTP/".utf8) else { return nil }
        let start = bytes.startIndex
        let major = bytes[start + 5]
        let dot = bytes[start + 6]
        let minor = bytes[start + 7]
        guard ASCII.isDigit(major), dot == UInt8(ascii: "."), ASCII.isDigit(minor) else { return nil }
        guard major == UInt8(ascii: "1") else { throw .unsupportedVersion }
        return HTTPVersion(major: 1, minor: Int(minor - ASCII.zero))
    }

    // MARK: - Fields

    private static func fields(_ bytes: UnsafeRawBufferPointer, _ lines: [Range<Int>]) throws(HTTP1Error) -> HTTPHeaders
    {
        var headers = HTTPHeaders()
        for line in lines {
            let slice = bytes[line]
            guard let first = slice.first else { continue }
            if first == ASCII.space || first == ASCII.tab { throw .obsoleteLineFolding }
            guard let colon = slice.firstIndex(of: UInt8(ascii: ":")) else { throw .invalidFieldName }
            let name = slice[slice.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(ASCII.isTokenChar) else { throw .invalidFieldName }
            var value = slice[(colon + 1)...]
            while let byte = value.first, byte == ASCII.space || byte == ASCII.tab { value.removeFirst() }
            while let byte = value.last, byte == ASCII.space || byte == ASCII.tab { value.removeLast() }
            guard value.allSatisfy(ASCII.isFieldValueChar) else { throw .invalidFieldValue }
            headers.add(string(name), string(value))
        }
        return headers
    }

    /// UTF-8 when valid, else ISO-8859-1 (obs-text), so no byte is lost or replaced.
    private static func string(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }
}

/// Byte classes from RFC 9110 §5.6.
package enum ASCII {
    package static let cr = UInt8(ascii: "\r")
    package static let lf = UInt8(ascii: "\n")
    package static let space = UInt8(ascii: " ")
    package static let tab = UInt8(ascii: "\t")
    package static let zero = UInt8(ascii: "0")

    package static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// tchar: `!#$%&'*+-.^_`|~`, digits and letters.
    package static func isTokenChar(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// field-vchar, SP or HTAB: everything but controls and DEL.
    package static func isFieldValueChar(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte != 0x7F)
    }
}
