import Foundation
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// `Storage.shutdown()`: the handle's connections close, and nothing more is sent through it
/// or through the handles made from it.
@Suite("Shutting a Storage down", .timeLimit(.minutes(5)))
struct StorageShutdownTests {
    static func storage(_ emulator: StorageEmulator, bucket: String = TestSupport.bucketName("shutdown")) throws -> Storage {
        var configuration = StorageConfiguration()
        configuration.transport = .native
        try configuration.connectionPool.setIdleTimeout(.seconds(3600))
        return Storage.gcsEmulator(
            bucket: bucket, baseURL: emulator.baseURL, configuration: configuration)
    }

    static func native(_ storage: Storage) throws -> NativeHTTPTransport {
        try #require(storage.transport as? NativeHTTPTransport)
    }

    @Test func itClosesTheIdleConnectionsAndRefusesEveryLaterRequestOfItsHandles() async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        let storage = try Self.storage(emulator)
        let sibling = storage.bucket(storage.bucket).with(StorageRequestOptions())
        _ = try await storage.reference(withPath: "before").putDataAsync(Data("kept".utf8))
        let transport = try Self.native(storage)
        #expect(transport.pool.idleCount == 1, "the upload's connection waits in the pool")

        storage.shutdown()
        #expect(transport.pool.idleCount == 0)
        for handle in [storage, sibling] {
            let error = await #expect(throws: StorageError.self) {
                _ = try await handle.reference(withPath: "after").putDataAsync(Data("refused".utf8))
            }
            #expect(error?.code == .cancelled)
            #expect(error?.message.contains("shut down") == true, "\(String(describing: error))")
        }
        #expect(transport.connectionsOpened == 1, "nothing was sent after the shutdown")
        storage.shutdown()  // again: nothing happens

        // Another Storage has a pool of its own.
        let other = try Self.storage(emulator, bucket: storage.bucket)
        defer { other.shutdown() }
        #expect(try await other.reference(withPath: "before").data(maxSize: 100) == Data("kept".utf8))
        await #expect(throws: StorageError.self) { _ = try await other.reference(withPath: "after").getMetadata() }
    }

    /// A ``StorageClient`` owns one pool for all its buckets: they reuse each other's
    /// connections, and its shutdown refuses every bucket's later requests.
    @Test func aClientsBucketsShareItsPoolAndItsShutdown() async throws {
        let emulator = try StorageEmulator.start()
        defer { emulator.stop() }
        var configuration = StorageConfiguration()
        configuration.transport = .native
        try configuration.connectionPool.setIdleTimeout(.seconds(3600))
        let client = StorageClient(endpoint: .gcs(emulator.baseURL), configuration: configuration)
        let (first, second) = (TestSupport.bucketName("client-a"), TestSupport.bucketName("client-b"))
        try emulator.createBucket(first)
        try emulator.createBucket(second)
        let transport = try #require(client.transport as? NativeHTTPTransport)
        _ = try await client.bucket(first).reference(withPath: "a").putDataAsync(Data("a".utf8))
        _ = try await client.bucket(second).reference(withPath: "b").putDataAsync(Data("b".utf8))
        let billed = client.with(.init(headers: ["X-Purpose": "test"])).bucket(first)
        #expect(try await billed.reference(withPath: "a").data(maxSize: 10) == Data("a".utf8))
        #expect(transport.connectionsOpened == 1, "one connection served both buckets and the options' copy")
        #expect(client.bucket(first).client.transport as? NativeHTTPTransport === transport)

        client.shutdown()
        for handle in [client.bucket(first), client.bucket(second), billed] {
            let error = await #expect(throws: StorageError.self) {
                _ = try await handle.reference(withPath: "after").getMetadata()
            }
            #expect(error?.code == .cancelled)
        }
        #expect(transport.connectionsOpened == 1)
    }

    @Test func aRequestWaitingForAConnectionFailsAtTheShutdownAndOneInFlightEnds() async throws {
        let pool = NativeConnectionPool(maxConnectionsPerHost: 1, maxIdlePerHost: 1, maxIdleTime: .seconds(60))
        try await pool.acquire("host:1")  // the request in flight
        let waiting = Task { try await pool.acquire("host:1") }
        while pool.waiting == 0 { await Task.yield() }
        pool.shutDown()
        await #expect(throws: NativeConnectionPool.ShutDown.self) { try await waiting.value }
        #expect(pool.waiting == 0)
        pool.release("host:1")  // the request in flight ends as usual
        #expect(pool.leasesOut == 0)
        await #expect(throws: NativeConnectionPool.ShutDown.self) { try await pool.acquire("host:1") }
    }
}
