import Foundation
import HTTP1
import HTTPTestServers
import StorageTestSupport
import Synchronization
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// Download and answer failures reported with codes that say what happened: a
/// destination that cannot be written, an object replaced mid-download, and an
/// answer that is not valid HTTP.
@Suite("Download and answer error codes", .timeLimit(.minutes(10)))
struct DownloadErrorCodeTests {
    static func storage(
        _ server: ScriptedHTTPServer, route: TestRoute,
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        var configuration = StorageConfiguration()
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(1))
            try $0.retry.setMaxDelay(.milliseconds(5))
        }
        route.apply(to: &configuration)
        configuration.applyForTest(configure)
        return Storage(bucket: "b", endpoint: .gcs(server.baseURL), configuration: configuration)
    }

    @Test(arguments: Reliability.Route.all)
    func aDestinationInAMissingDirectoryIsUnwritable(route: Reliability.Route) async throws {
        try await Reliability.withEmulator(for: route.via) { emulator in
            let storage = Reliability.storage(route, emulator)
            let reference = storage.reference(withPath: "o")
            _ = try await reference.putDataAsync(Data(repeating: 3, count: 1000))
            let missing = try TestSupport.temporaryDirectory().appendingPathComponent("gone/o.bin")
            let error = await #expect(throws: StorageError.self) {
                _ = try await reference.writeAsync(toFile: missing)
            }
            #expect(error?.code == .unwritableFile)
        }
    }

    /// What differs between the first answer and the resumed ones.
    enum Change: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case generation, size, checksum
        var testDescription: String { rawValue }
    }

    /// Every answer serves half of a 1000-byte object and drops the connection; every resumed
    /// range comes from a newer object. The download starts over three times, then gives up.
    @Test(arguments: TestRoute.all, Change.allCases)
    func anObjectThatKeepsChangingIsObjectChanged(route: TestRoute, change: Change) async throws {
        let requests = Atomic(0)
        let server = try ScriptedHTTPServer(scheme: route.scheme) { connection, _ in
            guard let (head, _) = connection.readRequest() else { return }
            let index = requests.add(1, ordering: .relaxed).newValue
            let resumed = head.headers["Range"] != nil
            var headers = "x-goog-generation: \(change == .generation && resumed ? index : 1)\r\n"
            headers += "x-goog-hash: crc32c=\(change == .checksum && resumed ? "AAAAAQ==" : "AAAAAA==")\r\n"
            let total = change == .size && resumed ? 2000 : 1000
            if resumed {
                connection.write(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 500-\(total - 1)/\(total)\r\n"
                        + "Content-Length: \(total - 500)\r\n\(headers)\r\n")
            } else {
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\(headers)\r\n")
            }
            // Half the body, then a clean close: the client reads all 500 bytes, then a cut.
            connection.write([UInt8](repeating: 9, count: 500))
        }
        defer { server.stop() }
        // The count of fresh starts decides, never the clock: the retry time is beyond the suite's
        // time limit (a full suite on a busy machine once stretched these 8 tiny requests past 60 s).
        let storage = Self.storage(server, route: route) { try $0.retry.setMaxDownloadTime(.seconds(900)) }
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "o").data(maxSize: 1 << 20)
        }
        #expect(error?.code == .objectChanged)
        #expect(requests.load(ordering: .relaxed) == 8, "four fresh starts, each resumed once")
    }

    /// The download's retry deadline moves only when bytes arrive past any received
    /// before: after the object changed and the download started over, regaining
    /// ground does not. Waits are 60–90 ms against a 100 ms retry time, so exactly one
    /// retry fits since the last reset, however loaded the machine. About the engine's
    /// deadline, not the bytes' path: on the plain routes, where no handshake adds to a wait.
    @Test(arguments: TestRoute.plain)
    func regainingGroundAfterAFreshStartDoesNotRestartTheDeadline(route: TestRoute) async throws {
        let requests = Atomic(0)
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            switch requests.add(1, ordering: .relaxed).newValue {
            case 1:  // 500 bytes of generation 1, then a cut: a new high
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nx-goog-generation: 1\r\n\r\n")
                connection.write([UInt8](repeating: 1, count: 500))
            case 2:  // the rest comes from generation 2: start over
                connection.write(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 500-999/1000\r\nContent-Length: 500\r\n"
                        + "x-goog-generation: 2\r\n\r\n")
            case 3:  // 300 bytes of generation 2, then a cut: below the high
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nx-goog-generation: 2\r\n\r\n")
                connection.write([UInt8](repeating: 2, count: 300))
            default:  // what a second retry would get
                connection.write(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 300-999/1000\r\nContent-Length: 700\r\n"
                        + "x-goog-generation: 2\r\n\r\n")
                connection.write([UInt8](repeating: 2, count: 700))
            }
        }
        defer { server.stop() }
        let storage = Self.storage(server, route: route) { configuration in
            try configuration.retry.setInitialDelay(.milliseconds(60))
            try configuration.retry.setMaxDelay(.milliseconds(60))
            try configuration.retry.setMaxDownloadTime(.milliseconds(100))
        }
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "o").data(maxSize: 1 << 20)
        }
        #expect(error?.code == .retryLimitExceeded)
        #expect(requests.load(ordering: .relaxed) == 3)
    }

    @Test func aMalformedAnswerIsAProtocolViolation() async throws {
        let server = try ScriptedHTTPServer { connection, _ in
            guard connection.readRequest() != nil else { return }
            connection.write("HTTP/1.1 abc\r\nthis is not a header\r\n\r\n")
        }
        defer { server.stop() }
        let storage = Self.storage(server, route: .nativeHTTP) { try $0.retry.setMaxOperationTime(.zero) }
        let error = await #expect(throws: StorageError.self) {
            _ = try await storage.reference(withPath: "o").getMetadata()
        }
        #expect(error?.code == .protocolViolation)
        #expect(error?.message.contains("malformed") == true)
    }
}
