import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// With directory backing, resumable upload sessions survive the emulator dying and resume
/// when an emulator starts again on the directory.
@Suite("Upload sessions persisted in the storage directory", .timeLimit(.minutes(10)))
struct SessionPersistenceTests {
    static let total = 3 * kib256 + 1000
    static let firebaseBucket = "demo.appspot.com"

    /// One request over its own connection.
    static func request(
        _ port: Int, _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> RawClient.Response {
        // Closed by the client when it goes, once: closing the descriptor here as well would close
        // whatever another thread opened under the same number meanwhile (a server's side of
        // some other test's connection, which then resets).
        let client = try RawClient(port: port)
        // A server that answers before reading a body (a 404) must fail the test, not block the send forever.
        var timeout = timeval()
        timeout.tv_sec = 20
        _ = setsockopt(client.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\n\r\n"
        try client.send(Array(head.utf8) + body)
        return try client.readResponse(requestMethod: method)
    }

    static func start(_ root: URL, port: Int = 0) throws -> StorageEmulator {
        var configuration = StorageEmulator.Configuration()
        configuration.backing = .directory(root)
        configuration.port = port
        return try StorageEmulator.start(configuration)
    }

    static func sessionFiles(_ root: URL) -> [String] {
        let directory = root.appendingPathComponent(SessionJournal.directoryName)
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    /// The path and query of a session URL, checking it names the emulator's port.
    static func target(_ url: String, port: Int) -> String {
        #expect(url.hasPrefix("http://127.0.0.1:\(port)/"))
        return String(url.dropFirst("http://127.0.0.1:\(port)".count))
    }

    @Test("a GCS session survives an abrupt stop and finishes on a new emulator on the same port")
    func gcsAcrossRestart() async throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let bytes = testBytes(Self.total, seed: 11)
        try await onThread {
            let first = try Self.start(root)
            let port = first.port
            try first.createBucket("bkt")
            let started = try Self.request(
                port, "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=big",
                headers: [("Content-Type", "application/json"), ("X-Upload-Content-Length", String(Self.total))],
                body: Array(#"{"metadata":{"k":"v"}}"#.utf8))
            #expect(started.status == 200)
            let session = Self.target(started.headers["Location"] ?? "", port: port)
            let chunk = try Self.request(
                port, "PUT", session, headers: [("Content-Range", "bytes 0-\(2 * kib256 - 1)/*")],
                body: Array(bytes[0..<2 * kib256]))
            #expect(chunk.status == 308)
            #expect(chunk.headers["Range"] == "bytes=0-\(2 * kib256 - 1)")
            first.stopAbruptly()

            let second = try Self.start(root, port: port)
            defer { second.stop() }
            let query = try Self.request(port, "PUT", session, headers: [("Content-Range", "bytes */*")])
            // Stop here if the session is unknown: the rest of the body would go to an answer already sent.
            try #require(query.status == 308)
            #expect(query.headers["Range"] == "bytes=0-\(2 * kib256 - 1)")
            #expect(query.headers["X-Range-MD5"] == md5Base64(Array(bytes[0..<2 * kib256])))
            let rest = try Self.request(
                port, "PUT", session,
                headers: [("Content-Range", "bytes \(2 * kib256)-\(Self.total - 1)/\(Self.total)")],
                body: Array(bytes[(2 * kib256)...]))
            #expect(rest.status == 200)
            let json = (try? JSONSerialization.jsonObject(with: Data(rest.body))) as? [String: Any] ?? [:]
            #expect(json["size"] as? String == String(Self.total))
            #expect(json["crc32c"] as? String == crc32cBase64(bytes))
            #expect(json["md5Hash"] as? String == md5Base64(bytes))
            #expect((json["metadata"] as? [String: String]) == ["k": "v"])
            let media = try Self.request(port, "GET", "/storage/v1/b/bkt/o/big?alt=media")
            #expect(media.body == bytes)
            #expect(Self.sessionFiles(root).isEmpty, "a finalized session leaves nothing behind")
            // Finalized, it is gone; a later emulator does not bring it back.
            second.stop()
            let third = try Self.start(root, port: port)
            defer { third.stop() }
            let after = try Self.request(port, "PUT", session, headers: [("Content-Range", "bytes */*")])
            #expect(after.status == 404)
        }
    }

    @Test("a Firebase session survives an abrupt stop and finishes with query, upload and finalize")
    func firebaseAcrossRestart() async throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let bytes = testBytes(Self.total, seed: 12)
        try await onThread {
            let first = try Self.start(root)
            let port = first.port
            let started = try Self.request(
                port, "POST", "/v0/b/\(Self.firebaseBucket)/o?name=photos%2Fcat.jpg",
                headers: [
                    ("Content-Type", "application/json"), ("X-Goog-Upload-Protocol", "resumable"),
                    ("X-Goog-Upload-Command", "start"), ("X-Goog-Upload-Header-Content-Length", String(Self.total)),
                    ("X-Goog-Upload-Header-Content-Type", "image/jpeg"),
                ],
                body: Array("{}".utf8))
            #expect(started.status == 200)
            let session = Self.target(started.headers["X-Goog-Upload-URL"] ?? "", port: port)
            let chunk = try Self.request(
                port, "POST", session, headers: [("X-Goog-Upload-Command", "upload"), ("X-Goog-Upload-Offset", "0")],
                body: Array(bytes[0..<kib256]))
            #expect(chunk.headers["X-Goog-Upload-Size-Received"] == String(kib256))
            first.stopAbruptly()

            let second = try Self.start(root, port: port)
            defer { second.stop() }
            let query = try Self.request(port, "POST", session, headers: [("X-Goog-Upload-Command", "query")])
            try #require(query.status == 200)
            #expect(query.headers["X-Goog-Upload-Status"] == "active")
            #expect(query.headers["X-Goog-Upload-Size-Received"] == String(kib256))
            let rest = try Self.request(
                port, "POST", session,
                headers: [("X-Goog-Upload-Command", "upload, finalize"), ("X-Goog-Upload-Offset", String(kib256))],
                body: Array(bytes[kib256...]))
            #expect(rest.status == 200)
            #expect(rest.headers["X-Goog-Upload-Status"] == "final")
            let json = (try? JSONSerialization.jsonObject(with: Data(rest.body))) as? [String: Any] ?? [:]
            #expect(json["size"] as? String == String(Self.total))
            #expect(json["contentType"] as? String == "image/jpeg")
            #expect(json["md5Hash"] as? String == md5Base64(bytes))
            #expect(json["crc32c"] as? String == crc32cBase64(bytes))
            let media = try Self.request(port, "GET", "/v0/b/\(Self.firebaseBucket)/o/photos%2Fcat.jpg?alt=media")
            #expect(media.body == bytes)
            #expect(Self.sessionFiles(root).isEmpty)
        }
    }

    @Test("a graceful stop keeps directory sessions; a cancelled one is gone from disk")
    func gracefulStopAndCancel() async throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try await onThread {
            let first = try Self.start(root)
            let port = first.port
            func startSession(_ name: String) throws -> String {
                let started = try Self.request(
                    port, "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=\(name)",
                    headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
                return Self.target(started.headers["Location"] ?? "", port: port)
            }
            let kept = try startSession("kept")
            let cancelled = try startSession("cancelled")
            #expect(try Self.request(port, "DELETE", cancelled).status == 499)
            #expect(Self.sessionFiles(root).count == 2, "one record and its bytes")
            first.stop()

            let second = try Self.start(root, port: port)
            defer { second.stop() }
            #expect(try Self.request(port, "PUT", kept, headers: [("Content-Range", "bytes */*")]).status == 308)
            #expect(try Self.request(port, "PUT", cancelled, headers: [("Content-Range", "bytes */*")]).status == 404)
        }
    }

    // MARK: - What a crash can leave behind

    func record(_ id: String, declaredSize: Int64? = nil, created: Date = Date()) -> PersistedSession {
        PersistedSession(
            id: id, bucket: "bkt", name: "object-" + id.prefix(4), attributes: ObjectAttributes(),
            expected: ExpectedHashes(), declaredSize: declaredSize, preconditions: ObjectPreconditions(),
            access: .gcs, computesMD5: true, created: created)
    }

    func write(_ record: PersistedSession, to directory: URL) throws {
        try JSONEncoder().encode(record).write(to: directory.appendingPathComponent(record.id + ".json"))
    }

    func writeData(_ id: String, _ bytes: [UInt8], to directory: URL) throws {
        try Data(bytes).write(to: directory.appendingPathComponent(id + ".data"))
    }

    static func id(_ digit: Character) -> String { String(repeating: digit, count: 64) }

    @Test("records and staging files that disagree, as a crash at each point leaves them, load consistently")
    func crashPoints() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try DirectoryObjectStore(root: root)
        _ = try store.createBucket("bkt")
        let journal = try SessionJournal(root: root)
        let directory = journal.directory
        let bytes = testBytes(Self.total, seed: 13)
        // Started, record written, no byte yet.
        try write(record(Self.id("1")), to: directory)
        try writeData(Self.id("1"), [], to: directory)
        // Killed in the middle of writing the third unit.
        try write(record(Self.id("2"), declaredSize: Int64(Self.total)), to: directory)
        try writeData(Self.id("2"), Array(bytes[0..<(2 * kib256 + 1234)]), to: directory)
        // Killed after the final tail was written, before the rename into the bucket.
        try write(record(Self.id("3"), declaredSize: Int64(Self.total)), to: directory)
        try writeData(Self.id("3"), bytes, to: directory)
        // Killed after the rename, before the record went: finalized.
        try write(record(Self.id("4")), to: directory)
        // Killed between creating the staging file and writing the record: never announced.
        try writeData(Self.id("5"), Array(bytes[0..<kib256]), to: directory)
        // Killed while writing a record atomically.
        try Data("{".utf8).write(to: directory.appendingPathComponent(".tmp-1234"))

        let messages = Box<[String]>([])
        var settings = EmulatorApplication.Settings()
        settings.log = { message in messages.set(messages.get() + [message]) }
        let app = try EmulatorApplication(store: store, settings: settings, globalFaults: [], journal: journal)
        let harness = Harness(app: app, store: store)
        func query(_ id: String) -> TestResponder {
            harness.send(
                "PUT", "/upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id=\(id)",
                headers: ["Content-Range": "bytes */*"])
        }
        #expect(app.sessions.count == 3)
        #expect(query(Self.id("1")).status == 308)
        #expect(query(Self.id("1")).headers["Range"] == nil, "nothing committed")
        // Rounded down to what could have been acknowledged; the partial unit is cut off the file.
        #expect(query(Self.id("2")).headers["Range"] == "bytes=0-\(2 * kib256 - 1)")
        #expect(query(Self.id("3")).headers["Range"] == "bytes=0-\(3 * kib256 - 1)")
        #expect(query(Self.id("4")).status == 404)
        #expect(query(Self.id("5")).status == 404)
        #expect(
            Self.sessionFiles(root)
                == [
                    Self.id("1") + ".data", Self.id("1") + ".json", Self.id("2") + ".data", Self.id("2") + ".json",
                    Self.id("3") + ".data", Self.id("3") + ".json",
                ])
        let size =
            try FileManager.default.attributesOfItem(
                atPath: directory.appendingPathComponent(Self.id("2") + ".data").path)[.size] as? NSNumber
        #expect(size?.intValue == 2 * kib256)

        // Both resume to the right object, checksums included.
        for (id, offset) in [(Self.id("2"), 2 * kib256), (Self.id("3"), 3 * kib256)] {
            let finish = harness.send(
                "PUT", "/upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id=\(id)",
                headers: ["Content-Range": "bytes \(offset)-\(Self.total - 1)/\(Self.total)"],
                body: Array(bytes[offset...]))
            #expect(finish.status == 200)
            #expect(finish.json["crc32c"] as? String == crc32cBase64(bytes))
            #expect(finish.json["md5Hash"] as? String == md5Base64(bytes))
            #expect(harness.object("bkt", "object-" + id.prefix(4)) == Data(bytes))
        }
        #expect(Self.sessionFiles(root) == [Self.id("1") + ".data", Self.id("1") + ".json"])
        #expect(messages.get().contains { $0.contains("its bytes are gone") })
        #expect(!messages.get().contains { $0.contains(Self.id("4")) }, "logs never name a whole session id")
    }

    @Test("corrupt and hostile records are ignored and removed, never followed")
    func hostileRecords() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try DirectoryObjectStore(root: root)
        _ = try store.createBucket("bkt")
        let journal = try SessionJournal(root: root)
        let directory = journal.directory
        let outside = root.appendingPathComponent("outside.bin")
        try Data(testBytes(kib256 + 5)).write(to: outside)
        // Not JSON.
        try Data("\u{0}garbage".utf8).write(to: directory.appendingPathComponent(Self.id("a") + ".json"))
        try writeData(Self.id("a"), [], to: directory)
        // A record naming another session than its file.
        try write(record(Self.id("b")), to: directory)
        try FileManager.default.moveItem(
            at: directory.appendingPathComponent(Self.id("b") + ".json"),
            to: directory.appendingPathComponent(Self.id("c") + ".json"))
        try writeData(Self.id("c"), [], to: directory)
        // A bucket that climbs out of the directory.
        var climbing = record(Self.id("d"))
        climbing.bucket = "../../etc"
        try write(climbing, to: directory)
        try writeData(Self.id("d"), [], to: directory)
        // Bytes that are a symbolic link to a file elsewhere (which loading would truncate).
        try write(record(Self.id("e")), to: directory)
        try FileManager.default.createSymbolicLink(
            at: directory.appendingPathComponent(Self.id("e") + ".data"), withDestinationURL: outside)
        // More bytes than the session declared.
        try write(record(Self.id("f"), declaredSize: 10), to: directory)
        try writeData(Self.id("f"), testBytes(kib256), to: directory)
        // Expired long ago.
        try write(record(Self.id("9"), created: Date(timeIntervalSince1970: 0)), to: directory)
        try writeData(Self.id("9"), [], to: directory)
        // A file name that is no session id.
        try Data("{}".utf8).write(to: directory.appendingPathComponent("..%2F..%2Fx.json"))
        // A negative declared size.
        try write(record(Self.id("0"), declaredSize: -1), to: directory)
        try writeData(Self.id("0"), [], to: directory)

        let messages = Box<[String]>([])
        var settings = EmulatorApplication.Settings()
        settings.log = { message in messages.set(messages.get() + [message]) }
        let app = try EmulatorApplication(store: store, settings: settings, globalFaults: [], journal: journal)
        #expect(app.sessions.count == 0)
        #expect(Self.sessionFiles(root) == ["..%2F..%2Fx.json"], "only the stranger is left, untouched")
        #expect(try Data(contentsOf: outside) == Data(testBytes(kib256 + 5)), "a link's target is never touched")
        #expect(messages.get().count == 7)
    }

    @Test("a hostile session id in a URL is refused before the file system; real sessions still resume")
    func hostileSessionIDs() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let journal = try SessionJournal(root: root)
        let store = try DirectoryObjectStore(root: root)
        let first = Harness(
            app: try EmulatorApplication(store: store, settings: .init(), globalFaults: [], journal: journal),
            store: store)
        let session = first.startGCSSession(name: "real")
        let id = String(session.split(separator: "=").last ?? "")
        #expect(SessionTable.isWellFormedID(id))
        let bucketFiles = allFiles(under: root).sorted()

        let restarted = try DirectoryObjectStore(root: root)
        let second = Harness(
            app: try EmulatorApplication(
                store: restarted, settings: .init(), globalFaults: [], journal: try SessionJournal(root: root)),
            store: restarted)
        for hostile in [
            "..%2F..%2Fb-bkt%2Fbucket", "..%2F" + id, id + "%2F..", id.uppercased(), id + ".json", "%00" + id, "",
            String(id.dropLast()),
        ] {
            let gcs = second.send(
                "PUT", "/upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id=\(hostile)",
                headers: ["Content-Range": "bytes */*"])
            #expect(gcs.status == 404)
            let cancel = second.send(
                "POST", "/v0/b/bkt/o?name=real&upload_id=\(hostile)", headers: ["X-Goog-Upload-Command": "cancel"])
            #expect(cancel.status == 404)
        }
        #expect(allFiles(under: root).sorted() == bucketFiles, "nothing was created or removed")
        #expect(second.send("PUT", session, headers: ["Content-Range": "bytes */*"]).status == 308)
    }
}

extension Harness {
    /// A harness over an application made by the test.
    init(app: EmulatorApplication, store: any ObjectStore) {
        self.app = app
        self.store = store
    }
}

extension SessionPersistenceTests {
    /// The permission bits of `path`.
    static func permissions(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test("the sessions' directory is the owner's alone (0700, an existing 0755 one fixed at start), its files 0600")
    func privateSessionDirectory() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent(SessionJournal.directoryName)
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        #expect(Self.permissions(directory.path) == 0o755)
        let emulator = try Self.start(root)
        defer { emulator.stop() }
        #expect(Self.permissions(directory.path) == 0o700)
        let started = try Self.request(
            emulator.port, "POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=x",
            headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
        #expect(started.status == 200)
        let files = Self.sessionFiles(root)
        #expect(files.count == 2, "\(files)")
        for file in files {
            #expect(Self.permissions(directory.appendingPathComponent(file).path) == 0o600, "\(file)")
        }
    }
}
