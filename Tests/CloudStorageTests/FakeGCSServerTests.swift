import FakeGCSServer
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The support target that installs and runs fake-gcs-server for the compatibility tests.
@Suite(.timeLimit(.minutes(10)))
struct FakeGCSServerTests {
    @Test func sharedReturnsTheSameRunningServer() async throws {
        let first = try await FakeGCSServer.shared()
        let second = try await FakeGCSServer.shared()
        #expect(first === second)
        #expect(first.isRunning)
        #expect(first.baseURL.absoluteString == "http://127.0.0.1:\(first.port)")
    }

    @Test func uploadedObjectReadsBackByteForByte() async throws {
        let server = try await FakeGCSServer.shared()
        let bucket = "fake-gcs-tests-roundtrip"
        try await server.createBucket(bucket)
        try await server.createBucket(bucket)  // idempotent

        // Every byte value, and more than one 256 KiB block.
        let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 256) })
        var upload = URLRequest(
            url: URL(
                string:
                    "\(server.baseURL.absoluteString)/upload/storage/v1/b/\(bucket)/o?uploadType=media&name=a%2Fb.txt")!
        )
        upload.httpMethod = "POST"
        upload.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let (_, response) = try await URLSession.shared.upload(for: upload, from: payload)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        let downloaded = try await server.download(bucket: bucket, object: "a/b.txt")
        #expect(downloaded == payload)

        let json = try await server.objectResource(bucket: bucket, object: "a/b.txt")
        let resource = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(resource["name"] as? String == "a/b.txt")
        #expect(resource["bucket"] as? String == bucket)
        #expect(resource["size"] as? String == String(payload.count))
    }

    @Test func missingObjectIsReportedAs404() async throws {
        let server = try await FakeGCSServer.shared()
        let bucket = "fake-gcs-tests-missing"
        try await server.createBucket(bucket)

        let resourceError = await #expect(throws: FakeGCSServerError.self) {
            _ = try await server.objectResource(bucket: bucket, object: "no/such object")
        }
        #expect(resourceError?.code == .unexpectedStatus)
        #expect(resourceError?.httpStatus == 404)

        let downloadError = await #expect(throws: FakeGCSServerError.self) {
            _ = try await server.download(bucket: bucket, object: "no/such object")
        }
        #expect(downloadError?.httpStatus == 404)
    }

    @Test func startedServerStopsWithItsSupervisor() async throws {
        let shared = try await FakeGCSServer.shared()
        let server = try await FakeGCSServer.start()
        #expect(server !== shared)
        #expect(server.port != shared.port)
        try await server.createBucket("fake-gcs-tests-own")
        let pid = server.supervisorProcessIdentifier
        #expect(processExists(pid))
        #if os(Linux)
        #expect(serverProcessExists(port: server.port))
        #endif

        server.stop()
        server.stop()  // idempotent
        await server.waitUntilStopped()

        #expect(!server.isRunning)
        #expect(!processExists(pid))
        #if os(Linux)
        #expect(!serverProcessExists(port: server.port))
        #endif
        await #expect(throws: (any Error).self) {
            _ = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("storage/v1/b"))
        }
        // The shared server is unaffected.
        #expect(shared.isRunning)
        try await shared.createBucket("fake-gcs-tests-still-shared")
    }

    @Test func closingTheSupervisorsInputEndsTheServer() async throws {
        // This is what the kernel does when the test process crashes or is killed.
        let server = try await FakeGCSServer.start()
        let pid = server.supervisorProcessIdentifier
        server.closeSupervisorInput()
        await server.waitUntilStopped()
        #expect(!processExists(pid))
        #if os(Linux)
        #expect(!serverProcessExists(port: server.port))
        #endif
        await #expect(throws: (any Error).self) {
            _ = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("storage/v1/b"))
        }
    }

    @Test func binaryPathIsAnExecutable() async throws {
        let path = try await FakeGCSServer.binaryPath()
        #expect(FileManager.default.isExecutableFile(atPath: path))
        #expect(path.contains("fake-gcs-server"))
    }
}

/// Whether a process with this id exists (reaped processes do not).
private func processExists(_ pid: Int32) -> Bool {
    kill(pid, 0) == 0 || errno != ESRCH
}

#if os(Linux)
/// Whether some process's command line holds `-external-url http://127.0.0.1:<port>`.
private func serverProcessExists(port: Int) -> Bool {
    let needle = Data("-external-url\u{0}http://127.0.0.1:\(port)\u{0}".utf8)
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    for entry in entries where entry.allSatisfy(\.isNumber) {
        guard let commandLine = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
        // The supervisor's command line holds the server's arguments too; only count the server itself.
        if commandLine.range(of: needle) != nil, commandLine.range(of: Data("-c\u{0}".utf8)) == nil {
            return true
        }
    }
    return false
}
#endif
