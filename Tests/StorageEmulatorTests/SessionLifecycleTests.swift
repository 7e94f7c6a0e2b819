import Foundation
import HTTP1
import Testing

@testable import StorageEmulator

/// A clock that moves only when a test says so.
final class ManualClock: Sendable {
    private let current = Box(Date(timeIntervalSince1970: 1_000_000))
    var now: @Sendable () -> Date { { [current] in current.get() } }
    func advance(_ seconds: TimeInterval) { current.set(current.get().addingTimeInterval(seconds)) }
}

/// Upload sessions expire, are bounded in number and hold no descriptor while idle.
@Suite("Upload session lifecycle")
struct SessionLifecycleTests {
    static let firebaseBucket = "demo.appspot.com"

    func harness(
        _ clock: ManualClock, lifetime: Duration = .seconds(60), maxSessions: Int = 1000, store: any ObjectStore
    ) throws -> Harness {
        try Harness(store: store) { settings in
            settings.now = clock.now
            settings.sessionLifetime = lifetime
            settings.maxSessions = maxSessions
        }
    }

    func stagingFiles(_ root: URL) -> [String] {
        allFiles(under: root).filter { $0.contains(".tmp-") }
    }

    func startFirebase(_ harness: Harness, name: String) -> String {
        let response = harness.send(
            "POST", "/v0/b/\(Self.firebaseBucket)/o?name=\(name)",
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"], json: [:])
        #expect(response.status == 200)
        return String((response.headers["X-Goog-Upload-URL"] ?? "").dropFirst("http://emulator.test".count))
    }

    @Test("an expired session answers 404 in both protocols and its staging file is deleted")
    func expiry() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let clock = ManualClock()
        let harness = try harness(clock, store: try DirectoryObjectStore(root: root))
        let gcs = harness.startGCSSession(name: "g")
        let chunk = harness.send("PUT", gcs, headers: ["Content-Range": "bytes 0-262143/*"], body: testBytes(kib256))
        #expect(chunk.status == 308)
        let firebase = startFirebase(harness, name: "f")
        #expect(stagingFiles(root).count == 2)
        clock.advance(59)
        #expect(harness.send("PUT", gcs, headers: ["Content-Range": "bytes */*"]).status == 308)
        clock.advance(1)
        #expect(harness.send("PUT", gcs, headers: ["Content-Range": "bytes */*"]).status == 404)
        let query = harness.send("POST", firebase, headers: ["X-Goog-Upload-Command": "query"])
        #expect(query.status == 404)
        #expect(stagingFiles(root).isEmpty)
        #expect(harness.app.sessions.count == 0)
    }

    @Test("expired sessions nobody asks about are swept when another session starts")
    func sweep() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let clock = ManualClock()
        let harness = try harness(clock, store: try DirectoryObjectStore(root: root))
        for index in 0..<5 { _ = harness.startGCSSession(name: "abandoned-\(index)") }
        #expect(stagingFiles(root).count == 5)
        clock.advance(61)
        _ = harness.startGCSSession(name: "fresh")
        #expect(stagingFiles(root).count == 1)
        #expect(harness.app.sessions.count == 1)
    }

    @Test("beyond the maximum the least recently used idle session is evicted")
    func eviction() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let clock = ManualClock()
        let harness = try harness(clock, maxSessions: 3, store: try DirectoryObjectStore(root: root))
        var sessions: [String] = []
        for index in 0..<3 {
            sessions.append(harness.startGCSSession(name: "s\(index)"))
            clock.advance(1)
        }
        // Touch the oldest: the second becomes the least recently used.
        #expect(harness.send("PUT", sessions[0], headers: ["Content-Range": "bytes */*"]).status == 308)
        clock.advance(1)
        sessions.append(harness.startGCSSession(name: "s3"))
        #expect(harness.app.sessions.count == 3)
        #expect(stagingFiles(root).count == 3)
        let statuses = sessions.map { harness.send("PUT", $0, headers: ["Content-Range": "bytes */*"]).status }
        #expect(statuses == [308, 404, 308, 308])
    }

    @Test("when every session is in use a new one gets a retryable 503")
    func fullOfBusySessions() throws {
        let clock = ManualClock()
        let harness = try harness(clock, maxSessions: 1, store: MemoryObjectStore())
        let busy = harness.startGCSSession(name: "busy")
        let id = try #require(busy.split(separator: "=").last.map(String.init))
        let session = try #require(harness.app.sessions.session(id))
        // Hold the session as a request in progress would.
        let refused = session.state.withLock { _ in
            harness.send("POST", "/upload/storage/v1/b/bkt/o?uploadType=resumable&name=next", json: [:])
        }
        #expect(refused.status == 503)
        #expect(refused.headers["Retry-After"] == "1")
        #expect(harness.send("PUT", busy, headers: ["Content-Range": "bytes */*"]).status == 308)
    }

    @Test(
        "idle sessions hold no file descriptor",
        .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd")))
    func noDescriptorWhileIdle() throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let harness = try harness(ManualClock(), store: try DirectoryObjectStore(root: root))
        // Descriptors open on files under this test's own directory: other suites running in
        // parallel open sockets and files of their own, which must not blur the count.
        func descriptorsUnderRoot() -> Int {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return entries.filter { entry in
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)
                return target?.hasPrefix(root.standardizedFileURL.resolvingSymlinksInPath().path) == true
            }.count
        }
        var sessions: [String] = []
        for index in 0..<300 {
            let session = harness.startGCSSession(name: "idle-\(index)")
            if index % 10 == 0 {
                // A session that received a chunk is idle again afterwards.
                let response = harness.send(
                    "PUT", session, headers: ["Content-Range": "bytes 0-262143/*"], body: testBytes(kib256))
                #expect(response.status == 308)
            }
            sessions.append(session)
        }
        #expect(stagingFiles(root).count == 300)
        #expect(descriptorsUnderRoot() == 0, "300 idle sessions hold no descriptor")
        // And the sessions still work: the file is reopened for the next request.
        let final = harness.send(
            "PUT", sessions[0], headers: ["Content-Range": "bytes 262144-262146/262147"], body: [1, 2, 3])
        #expect(final.status == 200)
        #expect(final.json["size"] as? String == "262147")
    }
}
