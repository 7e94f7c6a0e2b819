import CloudStorage
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorageCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store of `cp`'s upload sessions: where it is, who may read it, which record is whose.
@Suite("cp's upload session records")
struct UploadSessionRecordsTests {
    static let key = UploadSessionRecords.Key(
        endpoint: "gcs http://127.0.0.1:9", bucket: "demo-bucket", objectPath: "a/b.bin", sourcePath: "/data/b.bin")

    static func session(
        bucket: String = "demo-bucket", path: String = "a/b.bin", source: String = "/data/b.bin"
    ) throws -> StorageUploadSession {
        let json = """
            {"formatVersion": 1, "sessionURL": "http://127.0.0.1:9/upload/storage/v1/b/\(bucket)/o?upload_id=secret",
             "endpoint": "http://127.0.0.1:9", "wireProtocol": "gcsJSON", "bucket": "\(bucket)", "objectPath": "\(path)",
             "source": {"path": "\(source)", "size": 10485760, "modificationSeconds": 1, "modificationNanoseconds": 2}}
            """
        return try JSONDecoder().decode(StorageUploadSession.self, from: Data(json.utf8))
    }

    static func withDirectory(_ body: (URL) throws -> Void) throws {
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(directory)
    }

    static func mode(_ url: URL) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
    }

    @Test func aSavedRecordIsOwnerOnlyInAnOwnerOnlyDirectoryAndReadsBack() throws {
        try Self.withDirectory { base in
            let records = UploadSessionRecords(environment: ["XDG_STATE_HOME": base.path + "/state", "HOME": "/none"])
            #expect(records.directory.path == base.path + "/state/cloud-storage/uploads")
            let session = try Self.session()
            try records.save(session, for: Self.key)
            #expect(try Self.mode(records.directory) == 0o700)
            #expect(try Self.mode(records.directory.deletingLastPathComponent()) == 0o700)
            let files = try FileManager.default.contentsOfDirectory(atPath: records.directory.path)
            #expect(files == [Self.key.fileName])
            #expect(!Self.key.fileName.contains("b.bin"), "the name is a hash, not the paths")
            #expect(try Self.mode(records.directory.appendingPathComponent(Self.key.fileName)) == 0o600)
            #expect(records.load(Self.key) == session)
            records.remove(Self.key)
            #expect(records.load(Self.key) == nil)
            #expect(try FileManager.default.contentsOfDirectory(atPath: records.directory.path).isEmpty)
        }
    }

    @Test func theDefaultIsUnderHomeAndARelativeStateHomeIsIgnored() {
        let records = UploadSessionRecords(environment: ["XDG_STATE_HOME": "relative/state", "HOME": "/home/someone"])
        #expect(records.directory.path == "/home/someone/.local/state/cloud-storage/uploads")
    }

    @Test func eachPartOfTheKeySeparatesRecords() throws {
        let key = Self.key
        let others = [
            UploadSessionRecords.Key(
                endpoint: "firebase http://127.0.0.1:9", bucket: key.bucket, objectPath: key.objectPath,
                sourcePath: key.sourcePath),
            UploadSessionRecords.Key(
                endpoint: key.endpoint, bucket: "other-bucket", objectPath: key.objectPath, sourcePath: key.sourcePath),
            UploadSessionRecords.Key(
                endpoint: key.endpoint, bucket: key.bucket, objectPath: "a/c.bin", sourcePath: key.sourcePath),
            UploadSessionRecords.Key(
                endpoint: key.endpoint, bucket: key.bucket, objectPath: key.objectPath, sourcePath: "/data/c.bin"),
            // Field boundaries count: the same characters split differently are another upload.
            UploadSessionRecords.Key(
                endpoint: key.endpoint, bucket: key.bucket, objectPath: "a/b.bin/data", sourcePath: "/b.bin"),
        ]
        #expect(Set(others.map(\.fileName) + [key.fileName]).count == others.count + 1)
        #expect(
            key.fileName
                == UploadSessionRecords.Key(
                    endpoint: key.endpoint, bucket: key.bucket, objectPath: key.objectPath, sourcePath: key.sourcePath
                ).fileName)
        try Self.withDirectory { base in
            let records = UploadSessionRecords(directory: base.appendingPathComponent("uploads"))
            try records.save(try Self.session(), for: key)
            for other in others { #expect(records.load(other) == nil) }
            #expect(records.load(key) != nil)
        }
    }

    @Test func aCorruptRecordIsRemovedAndReadsAsNone() throws {
        try Self.withDirectory { base in
            let records = UploadSessionRecords(directory: base.appendingPathComponent("uploads"))
            try records.checkedDirectory()
            let file = records.directory.appendingPathComponent(Self.key.fileName)
            try Data("{\"formatVersion\": 1, \"sessionURL\": ".utf8).write(to: file)
            #expect(records.load(Self.key) == nil)
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
    }

    @Test func aRecordOfAnotherUploadUnderTheKeysNameIsRemoved() throws {
        try Self.withDirectory { base in
            let records = UploadSessionRecords(directory: base.appendingPathComponent("uploads"))
            try records.save(try Self.session(source: "/data/elsewhere.bin"), for: Self.key)
            #expect(records.load(Self.key) == nil)
            #expect(try FileManager.default.contentsOfDirectory(atPath: records.directory.path).isEmpty)
        }
    }

    @Test func aWidenedDirectoryIsNarrowedAndASymbolicLinkIsRefused() throws {
        try Self.withDirectory { base in
            let records = UploadSessionRecords(directory: base.appendingPathComponent("uploads"))
            try FileManager.default.createDirectory(
                at: records.directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
            try records.save(try Self.session(), for: Self.key)
            #expect(try Self.mode(records.directory) == 0o700)

            let elsewhere = base.appendingPathComponent("elsewhere", isDirectory: true)
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: false)
            let linked = UploadSessionRecords(directory: base.appendingPathComponent("linked"))
            try FileManager.default.createSymbolicLink(at: linked.directory, withDestinationURL: elsewhere)
            #expect(throws: UploadSessionRecords.Refusal.self) { try linked.save(try Self.session(), for: Self.key) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
        }
    }

    @Test func onlyRetriesRunningOutKeepARecord() {
        #expect(ResumableUploads.keepsRecord(after: StorageError(.retryLimitExceeded, "gave up")))
        #expect(ResumableUploads.keepsRecord(after: StorageError(.quotaExceeded, "throttled")))
        for code in [
            StorageErrorCode.cancelled, .fileChanged, .uploadSessionExpired, .objectChanged, .nonMatchingChecksum,
            .preconditionFailed, .unauthorized,
        ] {
            #expect(!ResumableUploads.keepsRecord(after: StorageError(code, "final")))
        }
        #expect(!ResumableUploads.keepsRecord(after: nil), "a stored object needs no record")
    }
}
