import CloudStorage
import Foundation

/// What identifies a stored object's contents: its size and the checksums
/// the server computed.
struct ObjectFacts: Sendable, Equatable, CustomStringConvertible {
    var size: Int64
    var md5Hash: String?
    var crc32c: String?

    init(size: Int64, md5Hash: String?, crc32c: String?) {
        self.size = size
        self.md5Hash = md5Hash
        self.crc32c = crc32c
    }

    /// The facts the SDK returned after an upload.
    init(_ metadata: StorageMetadata) {
        self.init(size: metadata.size, md5Hash: metadata.md5Hash, crc32c: metadata.crc32c)
    }

    /// The facts in an object resource (JSON API) sent by the server.
    ///
    /// - Throws: ``BenchmarkError`` when the JSON has no readable `size`.
    init(objectResource json: Data) throws {
        let object = try JSONSerialization.jsonObject(with: json) as? [String: Any]
        let sizeValue = object?["size"]
        var size: Int64?
        if let text = sizeValue as? String {
            size = Int64(text)
        } else if let number = sizeValue as? NSNumber {
            size = number.int64Value
        }
        guard let object, let size else {
            throw BenchmarkError(
                "the server's object resource has no size: \(String(decoding: json.prefix(512), as: UTF8.self))")
        }
        self.init(size: size, md5Hash: object["md5Hash"] as? String, crc32c: object["crc32c"] as? String)
    }

    var description: String {
        "size \(size), md5Hash \(md5Hash ?? "none"), crc32c \(crc32c ?? "none")"
    }

    /// Why these facts do not describe the same bytes as `reference`, or nil
    /// when they do.
    ///
    /// Sizes must be equal, and every checksum the reference has must be
    /// present and equal here, so an upload that lost or changed bytes (or
    /// whose checksums went missing) never passes.
    ///
    /// - Parameter reference: Facts of a known-good upload of the same bytes.
    /// - Returns: A sentence, or nil.
    func mismatch(against reference: ObjectFacts) -> String? {
        if size != reference.size { return "size \(size), expected \(reference.size)" }
        if let expected = reference.md5Hash, md5Hash != expected {
            return "md5Hash \(md5Hash ?? "missing"), expected \(expected)"
        }
        if let expected = reference.crc32c, crc32c != expected {
            return "crc32c \(crc32c ?? "missing"), expected \(expected)"
        }
        return nil
    }
}
