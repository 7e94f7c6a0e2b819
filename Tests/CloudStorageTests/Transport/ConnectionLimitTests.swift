import Foundation
import HTTPTestServers
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// The native transport's per-host connection limit is a setting of each
/// ``Storage``, not of the process.
@Suite("Connection limit per Storage", .timeLimit(.minutes(10)))
struct ConnectionLimitTests {
    /// The native transport a storage created for itself.
    static func native(_ storage: Storage) -> NativeHTTPTransport? {
        if let native = storage.transport as? NativeHTTPTransport { return native }
        return (storage.transport as? SchemeRoutingTransport)?.native as? NativeHTTPTransport
    }

    static func storage(
        _ emulator: StorageEmulator, limit: Int, transport: StorageTransportChoice
    ) throws -> Storage {
        var configuration = StorageConfiguration()
        try configuration.connectionPool.setMaxConnectionsPerHost(limit)
        // The test counts connections: on a starved machine a pooled one must not age out
        // between two requests and be replaced (as `NativeHTTPTransport.Configuration.forTests()`).
        try configuration.connectionPool.setIdleTimeout(.seconds(3600))
        configuration.transport = transport
        return Storage.gcsEmulator(
            bucket: TestSupport.bucketName("limit"), baseURL: emulator.baseURL, configuration: configuration)
    }

    @Test func twoStoragesWithDifferentLimitsEachGetTheirOwn() async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        let one = try Self.storage(emulator, limit: 1, transport: .native)
        let three = try Self.storage(emulator, limit: 3, transport: .automatic)
        let oneTransport = try #require(Self.native(one))
        let threeTransport = try #require(Self.native(three))
        #expect(oneTransport !== threeTransport)
        #expect(oneTransport.pool.maxConnectionsPerHost == 1)
        #expect(threeTransport.pool.maxConnectionsPerHost == 3)
        #expect(oneTransport.pool.maxIdleTime == .seconds(3600) && threeTransport.pool.maxIdleTime == .seconds(3600))
        // A concurrent burst through each: never more connections than its own limit.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                let storage = index.isMultiple(of: 2) ? one : three
                group.addTask {
                    _ = try await storage.reference(withPath: "o\(index)").putDataAsync(Data("burst \(index)".utf8))
                }
            }
            try await group.waitForAll()
        }
        #expect(oneTransport.connectionsOpened == 1)
        #expect(threeTransport.connectionsOpened <= 3)
        #expect(oneTransport.pool.leasesOut == 0 && threeTransport.pool.leasesOut == 0)
    }

    @Test func theDefaultIs32AndALimitOutsideTheRangeIsRefusedWhereItIsSet() throws {
        var configuration = StorageConfiguration()
        #expect(configuration.connectionPool.maxConnectionsPerHost == 32)
        for bad in [0, -1, 1025, Int.max, Int.min] {
            let error = #expect(throws: StorageError.self) {
                try configuration.connectionPool.setMaxConnectionsPerHost(bad)
            }
            #expect(error?.code == .invalidArgument)
            #expect(configuration.connectionPool.maxConnectionsPerHost == 32)
        }
        try configuration.connectionPool.setMaxConnectionsPerHost(1024)
        #expect(configuration.connectionPool.maxConnectionsPerHost == 1024)
    }
}
