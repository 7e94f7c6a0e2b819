import Foundation
import HTTP1

/// The wire protocol's verdict on the head of a successful answer to a ``MediaRead``: where the
/// body's bytes lie in the object, and what the answer says about the object they come from.
///
/// Made by ``ObjectWireProtocol/mediaHead(status:headers:answering:)``, which has already
/// checked the answer against the read (right generation, bytes from the offset asked,
/// lengths that agree); what it means for the download is ``RangedDownloadStateMachine``'s call.
struct MediaHead: Sendable, Equatable {
    /// Where the body's bytes lie in the object.
    enum Content: Sendable, Equatable {
        /// The whole object from its first byte (a `200`), whatever the read asked for.
        case whole
        /// The bytes `first...last` (a `206`).
        case part(first: Int64, last: Int64)
    }

    var content: Content
    /// The stored object's size in bytes, when the answer says it.
    var objectSize: Int64?
    /// The generation of the object the bytes come from, when the answer says it.
    var generation: Int64?
    /// The stored object's CRC32C, when the answer says it.
    var crc32c: UInt32?
    /// The stored object's MD5, base64 as sent, when the answer says it.
    var md5: String?
    /// How the body is encoded on the wire (`Content-Encoding`, lowercased); nil when its
    /// bytes are sent as they are.
    var contentEncoding: String?
    /// How the object is stored (`x-goog-stored-content-encoding`, lowercased); nil for
    /// bytes stored as they are. A server that decompresses a gzip object on the way out
    /// says `gzip` here, and its size and hashes then describe the stored bytes. A server that
    /// does not send the header is taken to serve the bytes as stored: this is then
    /// ``contentEncoding``.
    var storedEncoding: String?
}

extension MediaHead {
    /// Reads the head of a `200` or `206` answer to `read` in the headers Cloud Storage
    /// serves media with through either API (`Content-Range`, `x-goog-generation`,
    /// `x-goog-stored-content-length`, `x-goog-stored-content-encoding`, `x-goog-hash`).
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation`` for an answer that breaks the protocol:
    ///   another generation than the one `read` names, a `206` whose `Content-Range` is
    ///   unreadable, starts elsewhere than `read.offset` or ends past `read.last`, lengths that
    ///   disagree, or an unreadable number.
    init(googleMediaStatus status: Int, headers: HTTPHeaders, answering read: MediaRead) throws(StorageError) {
        let generation = try Self.number(headers, "x-goog-generation")
        if let asked = read.generation, let generation, generation != asked {
            // Not "the object changed": the server was asked for one generation's bytes and sent others.
            throw .protocolViolation(
                "The server was asked for generation \(asked) and answered with the bytes of generation \(headers["x-goog-generation"] ?? "")."
            )
        }
        var objectSize: Int64?
        if status == 206 {
            let range = try Self.contentRange(headers, answering: read)
            content = .part(first: range.first, last: range.last)
            objectSize = range.total
        } else {
            content = .whole
            objectSize = try Self.number(headers, "Content-Length")
        }
        if let stored = try Self.number(headers, "x-goog-stored-content-length") {
            if status == 206, let total = objectSize, total != stored {
                throw .protocolViolation(
                    "The server's Content-Range total (\(total)) and stored length (\(stored)) differ.")
            }
            objectSize = stored
        }
        self.objectSize = objectSize
        self.generation = generation
        contentEncoding = Self.encoding(headers["Content-Encoding"])
        storedEncoding =
            headers["x-goog-stored-content-encoding"] == nil
            ? contentEncoding : Self.encoding(headers["x-goog-stored-content-encoding"])
        (crc32c, md5) = Self.hashes(headers)
    }

    /// The `Content-Range` of a `206`, checked against what `read` asked for.
    private static func contentRange(
        _ headers: HTTPHeaders, answering read: MediaRead
    ) throws(StorageError) -> ContentRangeHeader {
        guard let range = ContentRangeHeader(headers["Content-Range"]) else {
            throw .protocolViolation(
                "The server answered a ranged download with an unreadable Content-Range (\(headers["Content-Range"] ?? "none"))."
            )
        }
        guard range.first == read.offset else {
            throw .protocolViolation(
                "The server answered a download from byte \(read.offset) with bytes from \(range.first).")
        }
        if let last = read.last, range.last > last {
            throw .protocolViolation(
                "The server answered a download of bytes \(read.offset)-\(last) with bytes up to \(range.last).")
        }
        if let length = try number(headers, "Content-Length"), length != range.last - range.first + 1 {
            throw .protocolViolation(
                "The server's Content-Length (\(length)) disagrees with its Content-Range (\(headers["Content-Range"] ?? ""))."
            )
        }
        return range
    }

    /// The CRC32C and MD5 of `x-goog-hash` (one header or several, each `crc32c=…,md5=…`).
    private static func hashes(_ headers: HTTPHeaders) -> (crc32c: UInt32?, md5: String?) {
        var crc32c: UInt32?
        var md5: String?
        for value in headers.values("x-goog-hash") {
            for part in value.split(separator: ",") {
                let pair = part.trimmingCharacters(in: .whitespaces)
                let lowered = pair.lowercased()
                if lowered.hasPrefix("crc32c=") {
                    crc32c = CRC32CEncoding.parse(String(pair.dropFirst("crc32c=".count)))
                } else if lowered.hasPrefix("md5=") {
                    md5 = String(pair.dropFirst("md5=".count))
                }
            }
        }
        return (crc32c, md5)
    }

    /// A content coding, lowercased; nil when absent or `identity`.
    private static func encoding(_ value: String?) -> String? {
        guard let value = value?.trimmingCharacters(in: .whitespaces).lowercased(), !value.isEmpty,
            value != "identity"
        else { return nil }
        return value
    }

    /// A non-negative number header: nil when absent.
    ///
    /// - Throws: ``StorageErrorCode/protocolViolation`` when present but not a non-negative integer.
    private static func number(_ headers: HTTPHeaders, _ name: String) throws(StorageError) -> Int64? {
        guard let text = headers[name] else { return nil }
        guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
            throw .protocolViolation("The server sent an unreadable \(name) (\(text)).")
        }
        return value
    }
}
