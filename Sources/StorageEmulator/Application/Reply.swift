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
}

/// JSON with Foundation's serializer (sorted keys, so answers are stable).
enum JSON {
    static func encode(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
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
    static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds % 1000))
    }
}
