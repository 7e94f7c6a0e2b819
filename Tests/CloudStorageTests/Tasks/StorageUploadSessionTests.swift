import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Decoding a saved ``StorageUploadSession``: what this SDK wrote round-trips, and anything else
/// (a tampered or hostile file) is refused with a clear error, never a crash.
@Suite("Upload session descriptions")
struct StorageUploadSessionTests {
    static let sample = StorageUploadSession(
        sessionURL: URL(
            string: "https://storage.example/upload/storage/v1/b/b/o?uploadType=resumable&upload_id=SECRET")!,
        endpoint: .gcs(URL(string: "https://storage.example")!),
        bucket: "b",
        objectPath: "dir/object.bin",
        source: .init(
            path: "/tmp/object.bin", size: 123, modificationSeconds: 1_700_000_000,
            modificationNanoseconds: 123_456_789, device: 2049, inode: 42),
        chunkSize: 256 * 1024,
        crc32c: 0xDEAD_BEEF
    )

    static func json(_ session: StorageUploadSession = sample) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(session)) as? [String: Any])
    }

    static func decode(_ json: [String: Any]) -> Result<StorageUploadSession, StorageError> {
        Result { () throws(StorageError) in
            let data: Data
            do {
                data = try JSONSerialization.data(withJSONObject: json)
            } catch {
                throw .internalError("test JSON")
            }
            return try StorageUploadSession.decode(data, from: "test")
        }
    }

    @Test func roundTripsThroughJSON() throws {
        let data = try JSONEncoder().encode(Self.sample)
        #expect(try StorageUploadSession.decode(data, from: "test") == Self.sample)
        let firebase = StorageUploadSession(
            sessionURL: URL(string: "https://fb.example/v0/b/b/o?name=o&upload_id=X&upload_protocol=resumable")!,
            endpoint: .firebase(URL(string: "https://fb.example")!),
            bucket: "b", objectPath: "o", source: Self.sample.source, chunkSize: nil, crc32c: nil)
        #expect(try StorageUploadSession.decode(JSONEncoder().encode(firebase), from: "test") == firebase)
    }

    /// Each case changes one field of a valid description to something this SDK never writes.
    static let tampered: [(String, String, any Sendable)] = [
        ("unknown format version", "formatVersion", 2),
        ("non-http session", "sessionURL", "ftp://storage.example/upload?upload_id=x"),
        ("session without host", "sessionURL", "https:///upload"),
        ("session leaving TLS", "sessionURL", "http://storage.example/upload?upload_id=x"),
        ("session on another host", "sessionURL", "https://attacker.example/upload?upload_id=x"),
        ("session on another port", "sessionURL", "https://storage.example:8443/upload?upload_id=x"),
        ("non-http endpoint", "endpoint", "file:///etc"),
        ("unknown protocol", "wireProtocol", "s3"),
        ("empty bucket", "bucket", ""),
        ("bucket with slash", "bucket", "a/b"),
        ("empty path", "objectPath", ""),
        ("chunk size not a multiple of 256 KiB", "chunkSize", 1000),
        ("negative chunk size", "chunkSize", -262_144),
        ("CRC32C not base64", "crc32c", "not a checksum!"),
        ("version of the wrong type", "formatVersion", "1"),
    ]

    @Test(arguments: 0..<tampered.count)
    func aTamperedFieldIsRefused(index: Int) throws {
        let (label, key, value) = Self.tampered[index]
        var json = try Self.json()
        json[key] = value
        let result = Self.decode(json)
        #expect(result.failureCode == .invalidArgument, "\(label)")
    }

    static let tamperedSource: [(String, String, any Sendable)] = [
        ("negative size", "size", -1),
        ("size beyond Int64", "size", 1e30),
        ("relative path", "path", "relative/file"),
        ("nanoseconds too large", "modificationNanoseconds", 1_000_000_000),
        ("negative nanoseconds", "modificationNanoseconds", -1),
        ("negative inode", "inode", -5),
    ]

    @Test(arguments: 0..<tamperedSource.count)
    func aTamperedSourceIsRefused(index: Int) throws {
        let (label, key, value) = Self.tamperedSource[index]
        var json = try Self.json()
        var source = try #require(json["source"] as? [String: Any])
        source[key] = value
        json["source"] = source
        #expect(Self.decode(json).failureCode == .invalidArgument, "\(label)")
    }

    @Test func anUnknownVersionSaysSo() throws {
        var json = try Self.json()
        json["formatVersion"] = 7
        guard case .failure(let error) = Self.decode(json) else {
            Issue.record("decoded")
            return
        }
        #expect(error.message.contains("format version 7"))
    }

    @Test func missingFieldsAndGarbageAreRefused() throws {
        var json = try Self.json()
        json["sessionURL"] = nil
        #expect(Self.decode(json).failureCode == .invalidArgument)
        for text in ["", "null", "[]", "{", "\u{0}", String(repeating: "[", count: 10_000)] {
            #expect(
                Result { () throws(StorageError) in try StorageUploadSession.decode(Data(text.utf8), from: "t") }
                    .failureCode == .invalidArgument)
        }
    }

    @Test func aFileTooLargeOrMissingIsRefused() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let large = directory.appendingPathComponent("large.json")
        try Data(repeating: 0x20, count: 65 * 1024).write(to: large)
        let missing = directory.appendingPathComponent("missing.json")
        #expect(
            Result { () throws(StorageError) in try StorageUploadSession(contentsOf: large) }
                .failureCode == .invalidArgument)
        #expect(
            Result { () throws(StorageError) in try StorageUploadSession(contentsOf: missing) }
                .failureCode == .unreadableFile)
    }

    @Test func writeRefusesAMissingDirectoryAndReadsBack() throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let nowhere = directory.appendingPathComponent("absent/record.json")
        #expect(
            Result { () throws(StorageError) in try Self.sample.write(to: nowhere) }
                .failureCode == .unwritableFile)
        let record = directory.appendingPathComponent("record.json")
        try Self.sample.write(to: record)
        #expect(try StorageUploadSession(contentsOf: record) == Self.sample)
        // The encoded form does hold the capability (that is its purpose)...
        #expect(try String(contentsOf: record, encoding: .utf8).contains("upload_id=SECRET"))
        // ...but no description of it does.
        #expect(!Self.sample.description.contains("SECRET"))
        #expect(!String(reflecting: Self.sample).contains("SECRET"))
        #expect(Self.sample.description.contains("?<redacted>"))
    }
}
