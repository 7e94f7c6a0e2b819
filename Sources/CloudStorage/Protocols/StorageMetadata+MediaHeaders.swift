import Foundation
import HTTP1

extension StorageMetadata {
    /// The object's metadata as a media answer's head tells it: what a download learns from the
    /// same response that carries the bytes, with no metadata request of its own.
    ///
    /// Cloud Storage (both APIs, and Firebase Storage in front of it) and the emulator send
    /// `x-goog-generation`, `x-goog-metageneration`, `x-goog-stored-content-length`,
    /// `x-goog-stored-content-encoding`, `x-goog-hash` (CRC32C and MD5), `x-goog-storage-class`,
    /// `x-goog-meta-*` (custom metadata), `Content-Type`, `Cache-Control`, `Content-Disposition`,
    /// `Content-Language`, `ETag` and `Last-Modified`; a field the server leaves out stays nil (and
    /// the size falls back to `Content-Length`, or 0 when the body's length is not given either).
    /// The size and encoding are the stored object's: a gzip-stored object says `gzip` and its
    /// compressed size, whatever form its bytes arrive in.
    init(mediaHeaders headers: HTTPHeaders, bucket: String, path: String) {
        self.init()
        self.bucket = bucket
        self.path = path
        name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        func number(_ field: String) -> Int64? {
            headers[field].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        }
        generation = number("x-goog-generation")
        metageneration = number("x-goog-metageneration")
        let storedEncoding = headers["x-goog-stored-content-encoding"] ?? headers["Content-Encoding"]
        contentEncoding = storedEncoding.flatMap { $0.lowercased() == "identity" ? nil : $0 }
        if let stored = number("x-goog-stored-content-length") {
            size = stored
        } else if let total = headers["Content-Range"].flatMap({ $0.split(separator: "/").last }).flatMap({ Int64($0) })
        {
            size = total
        } else {
            size = number("Content-Length") ?? 0
        }
        contentType = headers["Content-Type"]
        cacheControl = headers["Cache-Control"]
        contentDisposition = headers["Content-Disposition"]
        contentLanguage = headers["Content-Language"]
        storageClass = headers["x-goog-storage-class"]
        etag = headers["ETag"].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        updated = headers["Last-Modified"].flatMap(Self.httpDate)
        for value in headers.values("x-goog-hash") {
            for part in value.split(separator: ",") {
                let pair = part.trimmingCharacters(in: .whitespaces)
                if pair.lowercased().hasPrefix("crc32c=") { crc32c = String(pair.dropFirst("crc32c=".count)) }
                if pair.lowercased().hasPrefix("md5=") { md5Hash = String(pair.dropFirst("md5=".count)) }
            }
        }
        for (field, value) in headers where field.lowercased().hasPrefix("x-goog-meta-") {
            customMetadata[String(field.dropFirst("x-goog-meta-".count))] = value
        }
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only form servers send now.
    private static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}
