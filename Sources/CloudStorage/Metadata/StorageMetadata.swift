// PLACEHOLDER: replaced by the metadata work (same signatures).
import Foundation
public struct StorageMetadata: Sendable, Hashable {
    public init() {}
    public var contentType: String?
    public var customMetadata: [String: String] = [:]
    public internal(set) var size: Int64 = 0
    public internal(set) var crc32c: String?
    public internal(set) var generation: Int64?
    public internal(set) var path: String?
    var crc32cValue: UInt32? { crc32c.flatMap(CRC32CEncoding.parse) }
    init(objectResource json: Data) throws(StorageError) {
        guard let o = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else { throw .internalError("bad") }
        size = Int64(o["size"] as? String ?? "0") ?? 0
        crc32c = o["crc32c"] as? String
        generation = Int64(o["generation"] as? String ?? "")
        path = o["name"] as? String
        contentType = o["contentType"] as? String
        customMetadata = o["metadata"] as? [String: String] ?? [:]
    }
    func resourceJSON(name: String, crc32c: UInt32?) -> Data {
        var o: [String: Any] = ["name": name]
        if let contentType { o["contentType"] = contentType }
        if !customMetadata.isEmpty { o["metadata"] = customMetadata }
        if let crc32c { o["crc32c"] = CRC32CEncoding.base64(crc32c) }
        return (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
    }
}
enum CRC32CEncoding {
    static func base64(_ v: UInt32) -> String { Data([UInt8(v >> 24), UInt8((v >> 16) & 0xff), UInt8((v >> 8) & 0xff), UInt8(v & 0xff)]).base64EncodedString() }
    static func parse(_ s: String) -> UInt32? {
        guard let d = Data(base64Encoded: s), d.count == 4 else { return UInt32(s) }
        return d.reduce(0) { $0 << 8 | UInt32($1) }
    }
}
enum ContentTypes { static func forPath(_ path: String) -> String? { nil } }
