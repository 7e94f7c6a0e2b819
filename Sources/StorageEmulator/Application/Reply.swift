import Foundation
import HTTP1

/// What a handler answers: a complete body, or an object's bytes streamed from the store.
struct Reply {
    var status: Int
    var headers = HTTPHeaders()
    var body = Data()
    var stream: StreamedBody?

    init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON answer.
    static func json(_ status: Int, _ object: [String: Any], headers: HTTPHeaders = HTTPHeaders()) -> Reply {
        var reply = Reply(status: status, headers: headers, body: JSON.encode(object))
        reply.headers.set("Content-Type", "application/json; charset=UTF-8")
        return reply
    }
}

/// A byte range of a stored object, read while the response is written.
struct StreamedBody {
    let reader: any ObjectReader
    let offset: Int64
    let length: Int64
    /// Whether the stored bytes (gzip) are sent decompressed, in a body of unknown length
    /// (decompressive transcoding).
    var inflates = false
}

/// JSON for the emulator's answers and requests.
enum JSON {
    /// Serializes an answer: keys sorted by their UTF-8 bytes (so answers are stable), `/` not escaped.
    ///
    /// Written directly rather than with `JSONSerialization`, which on Linux bridges every value
    /// to Foundation objects and sorts keys with a locale-aware comparison: that was a fifth of
    /// the emulator's time per small upload. Values are what handlers build: strings, integers,
    /// booleans, `NSNull`, and arrays and dictionaries of those.
    static func encode(_ object: [String: Any]) -> Data {
        var output: [UInt8] = []
        output.reserveCapacity(1024)
        write(object, to: &output)
        return Data(output)
    }

    private static func write(_ value: Any, to output: inout [UInt8]) {
        switch value {
        case let text as String:
            write(string: text, to: &output)
        case let flag as Bool:
            output.append(contentsOf: (flag ? "true" : "false").utf8)
        case let number as any BinaryInteger:
            output.append(contentsOf: String(describing: number).utf8)
        case let number as Double:
            output.append(contentsOf: (number.isFinite ? String(describing: number) : "null").utf8)
        case let dictionary as [String: Any]:
            output.append(UInt8(ascii: "{"))
            for (index, key) in dictionary.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
                .enumerated()
            {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(string: key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(dictionary[key]!, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        case let array as [Any]:
            output.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        default:
            // NSNull, and anything a handler should not have put in an answer.
            output.append(contentsOf: "null".utf8)
        }
    }

    private static func write(string: String, to output: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                output.append(contentsOf: "\\u00".utf8)
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// Parses a JSON object; an empty body is an empty object.
    static func decodeObject(_ data: Data) throws -> [String: Any] {
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [:] }
        guard let object = try? JSONSerialization.jsonObject(with: data), let dictionary = object as? [String: Any]
        else { throw HTTPError.badRequest("The request body is not a JSON object.") }
        return dictionary
    }
}

/// Percent-encoding for names placed in URLs.
enum URLText {
    /// Encodes everything but RFC 3986 unreserved characters (so `/` becomes `%2F`).
    static func encodeComponent(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            let unreserved =
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "~")
            if unreserved {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    /// Decodes percent-escapes (a `+` stays a `+`).
    static func decode(_ text: Substring) throws -> String {
        guard let decoded = String(text).removingPercentEncoding else {
            throw HTTPError.badRequest("Invalid percent-encoding in the request path.")
        }
        return decoded
    }
}

/// RFC 3339 timestamps with milliseconds in UTC, as GCS writes them.
enum Timestamp {
    /// Such as `2026-11-21T09:05:03.042Z` (digits written directly: this runs on every answer).
    static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text: [UInt8] = []
        text.reserveCapacity(24)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                text.append(UInt8(ascii: "0") + UInt8((value / divisor) % 10))
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        text.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        text.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        text.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        text.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        text.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        text.append(UInt8(ascii: "."))
        digits(Int(milliseconds % 1000), 3)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }
}
