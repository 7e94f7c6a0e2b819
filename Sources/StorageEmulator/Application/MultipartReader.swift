import Foundation
import HTTP1

/// Reads a `multipart/related` body part by part, streaming part bodies so a
/// large media part is never held in memory.
final class MultipartReader {
    private let body: BodyReader
    private let delimiter: [UInt8]
    private var buffer: [UInt8] = []
    private var position = 0
    private var atEnd = false
    private var finished = false
    private var sawFirstDelimiter = false
    /// Whether a CR before a delimiter belongs to the delimiter's line break. Decided by the
    /// first delimiter line, as other readers (Go's `mime/multipart`) do: a body whose first
    /// delimiter line ends in LF alone (gcloud's, written by Python's email package) ends its
    /// lines in LF, so a part that ends in CR keeps it — with 1 in 256 random files ending in
    /// CR, dropping it would store the wrong bytes.
    private var lineBreaksAreCRLF = true
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    /// The boundary from a `Content-Type: multipart/related; boundary=…` value.
    static func boundary(contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2,
                pair[0].trimmingHTTPWhitespace().lowercased() == "boundary"
            else { continue }
            var value = String(pair[1].trimmingHTTPWhitespace())
            // Quoted in double quotes (RFC 2046), or in single quotes as gcloud sends it
            // (`boundary='===…=='`), which Cloud Storage accepts too.
            for quote in ["\"", "'"] where value.count >= 2 && value.hasPrefix(quote) && value.hasSuffix(quote) {
                value = String(value.dropFirst().dropLast())
                break
            }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    init(body: BodyReader, boundary: String) {
        self.body = body
        // Lines end in CRLF (RFC 2046) or, as gcloud writes them (Python's email package), in LF
        // alone, which Cloud Storage accepts too: the delimiter is found by its LF, and a CR
        // before it is part of the delimiter only in a body whose lines end in CRLF.
        delimiter = Array("\n--\(boundary)".utf8)
        // The first delimiter may sit at the very start, without a line break.
        buffer = Array("\n".utf8)
    }

    /// Reads the next part's header fields, or nil after the closing delimiter.
    func nextPart() throws -> [String: String]? {
        if finished { return nil }
        let isFirstPart = !sawFirstDelimiter
        if isFirstPart {
            // Skip the preamble up to the first delimiter.
            sawFirstDelimiter = true
            try streamUntilDelimiter { _ in }
        }
        // After a delimiter: `--` closes, CRLF (or LF) starts a part.
        try fill(2)
        guard buffer.count - position >= 2 else { throw malformed }
        if buffer[position] == UInt8(ascii: "-"), buffer[position + 1] == UInt8(ascii: "-") {
            finished = true
            return nil
        }
        if buffer[position] == 0x0D, buffer[position + 1] == 0x0A {
            position += 2
        } else if buffer[position] == 0x0A {
            position += 1
            if isFirstPart { lineBreaksAreCRLF = false }
        } else {
            throw malformed
        }
        var headers: [String: String] = [:]
        while true {
            let line = try readLine()
            if line.isEmpty { return headers }
            guard let colon = line.firstIndex(of: ":") else { throw malformed }
            headers[line[..<colon].trimmingHTTPWhitespace().lowercased()] = String(
                line[line.index(after: colon)...].trimmingHTTPWhitespace())
        }
    }

    /// Streams the current part's body into `sink`, up to the next delimiter.
    func readPartBody(into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        try streamUntilDelimiter(sink)
    }

    /// Reads the current part's body into memory.
    func readPartBody(limit: Int) throws -> Data {
        var data = Data()
        try streamUntilDelimiter { bytes in
            data.append(contentsOf: bytes)
            if data.count > limit { throw HTTPError(413, "A multipart part is too large.") }
        }
        return data
    }

    private var malformed: HTTPError { HTTPError.badRequest("Malformed multipart body.") }

    private func streamUntilDelimiter(_ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        while true {
            if let found = search(from: position) {
                let end =
                    lineBreaksAreCRLF && found > position && buffer[found - 1] == 0x0D ? found - 1 : found
                try emit(position..<end, sink)
                position = found + delimiter.count
                return
            }
            // Everything but a possible delimiter prefix at the end, and the byte before it
            // (a CR that belongs to the delimiter's line break), can go.
            let safeEnd = max(position, buffer.count - delimiter.count)
            try emit(position..<safeEnd, sink)
            position = safeEnd
            compact()
            if atEnd { throw malformed }
            try readMore()
        }
    }

    private func emit(_ range: Range<Int>, _ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard !range.isEmpty else { return }
        try buffer.withUnsafeBytes { try sink(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// The index of the next delimiter at or after `start`: `memchr` for its first byte, then `memcmp`.
    private func search(from start: Int) -> Int? {
        guard buffer.count - start >= delimiter.count else { return nil }
        return buffer.withUnsafeBytes { haystack -> Int? in
            delimiter.withUnsafeBytes { needle -> Int? in
                let base = haystack.baseAddress!
                let last = haystack.count - needle.count
                var index = start
                while index <= last {
                    guard let hit = memchr(base + index, Int32(needle[0]), last - index + 1) else { return nil }
                    index = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + index, needle.baseAddress!, needle.count) == 0 { return index }
                    index += 1
                }
                return nil
            }
        }
    }

    private func readLine() throws -> String {
        while true {
            if let newline = buffer[position...].firstIndex(of: 0x0A) {
                var end = newline
                if end > position, buffer[end - 1] == 0x0D { end -= 1 }
                let line = String(decoding: buffer[position..<end], as: UTF8.self)
                position = newline + 1
                return line
            }
            if buffer.count - position > 16 * 1024 || atEnd { throw malformed }
            try readMore()
        }
    }

    private func fill(_ count: Int) throws {
        while buffer.count - position < count, !atEnd { try readMore() }
    }

    private func compact() {
        if position > 0 {
            buffer.removeFirst(position)
            position = 0
        }
    }

    private func readMore() throws {
        compact()
        let count = try scratch.withUnsafeMutableBytes { try body.read(into: $0) }
        if count == 0 {
            atEnd = true
        } else {
            buffer.append(contentsOf: scratch[0..<count])
        }
    }
}
