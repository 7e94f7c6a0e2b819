import FakeGCSServer
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// fake-gcs-server's storages and checks, and snapshot collection, for the SDK's integration suites.
extension TestSupport {
    /// A `Storage` for a new bucket on the shared fake-gcs-server, on `route` (its HTTPS port
    /// for `https`; the server's own checks, like ``expectStored(_:at:in:server:sourceLocation:)``,
    /// go over plain HTTP).
    static func fakeGCSStorage(
        label: String = "t",
        authorization: StorageAuthorization = .none,
        route: TestRoute,
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) async throws -> (Storage, FakeGCSServer) {
        let server = try await FakeGCSServer.shared()
        let bucket = bucketName(label)
        try await server.createBucket(bucket)
        var configuration = StorageConfiguration()
        try configuration.retry.setInitialDelay(.milliseconds(50))
        try configuration.retry.setMaxUploadTime(.seconds(20))
        route.apply(to: &configuration)
        configuration.applyForTest(configure)
        let storage = Storage(
            bucket: bucket,
            endpoint: .gcs(try fakeGCSBaseURL(server, route)),
            authorization: authorization,
            configuration: configuration
        )
        return (storage, server)
    }

    /// Where `route` reaches fake-gcs-server: its plain port, or its TLS one.
    static func fakeGCSBaseURL(_ server: FakeGCSServer, _ route: TestRoute) throws -> URL {
        guard route.scheme == .https else { return server.baseURL }
        return try #require(server.tlsBaseURL, "the shared fake-gcs-server serves TLS")
    }

    /// Subscribes to `task`'s snapshots now (synchronously, so nothing after
    /// this call is missed) and collects them in the background until the
    /// stream finishes.
    static func observe(_ task: StorageUploadTask) -> Task<[TaskSnapshot], Never> {
        let stream = task.snapshots
        return Task { await collect(stream) }
    }

    /// Collects every snapshot of a stream until it finishes.
    static func collect(_ stream: AsyncStream<TaskSnapshot>) async -> [TaskSnapshot] {
        var snapshots: [TaskSnapshot] = []
        for await snapshot in stream {
            snapshots.append(snapshot)
        }
        return snapshots
    }

    /// Checks that the server holds exactly `expected` at `path`.
    static func expectStored(
        _ expected: Data,
        at path: String,
        in storage: Storage,
        server: FakeGCSServer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let stored = try await server.download(bucket: storage.bucket, object: path)
        #expect(stored.count == expected.count, sourceLocation: sourceLocation)
        #expect(stored == expected, "stored bytes differ", sourceLocation: sourceLocation)
        let resource = try StorageMetadata(
            objectResource: try await server.objectResource(bucket: storage.bucket, object: path))
        #expect(resource.crc32cValue == CRC32C.checksum(expected), sourceLocation: sourceLocation)
    }

    /// Whether the server has no object at `path`.
    static func isAbsent(_ path: String, in storage: Storage, server: FakeGCSServer) async -> Bool {
        do {
            _ = try await server.objectResource(bucket: storage.bucket, object: path)
            return false
        } catch let error as FakeGCSServerError {
            return error.httpStatus == 404
        } catch {
            return false
        }
    }
}

/// A control a stress test applies to an upload in flight.
enum UploadControl: CaseIterable {
    case pause, resume, cancel, wait

    /// Drawn with weights pause 3, resume 3, wait 3, cancel 1, so that many
    /// runs live through several pauses and some still end in success.
    static func random(using generator: inout SeededGenerator) -> UploadControl {
        switch Int.random(in: 0..<10, using: &generator) {
        case 0..<3: .pause
        case 3..<6: .resume
        case 6..<9: .wait
        default: .cancel
        }
    }
}

extension TestSupport {
    /// Applies up to `maxCount` random controls to `task` (a `.wait` sleeps
    /// up to `maxWait`), then resumes it if the last control paused it, so
    /// that it can end.
    static func applyRandomControls(
        to task: some StorageTask,
        maxCount: Int,
        maxWait: Duration,
        using generator: inout SeededGenerator
    ) async throws {
        let waitLimit = maxWait.components.seconds * 1_000_000 + maxWait.components.attoseconds / 1_000_000_000_000
        var pausedLast = false
        for _ in 0..<Int.random(in: 1...maxCount, using: &generator) {
            switch UploadControl.random(using: &generator) {
            case .pause:
                await task.pause()
                pausedLast = true
            case .resume:
                await task.resume()
                pausedLast = false
            case .cancel:
                await task.cancel()
            case .wait:
                try await Task.sleep(for: .microseconds(Int64.random(in: 0...waitLimit, using: &generator)))
            }
        }
        if pausedLast { await task.resume() }
    }
}

extension Int {
    static let kibibyte = 1024
    static let mebibyte = 1024 * 1024
}

extension StorageConfiguration {
    /// Applies settings a test knows to be valid, so that helpers building a configuration
    /// need not throw: a value the configuration refuses is recorded as a test failure.
    mutating func applyForTest(_ settings: (inout StorageConfiguration) throws -> Void) {
        do {
            try settings(&self)
        } catch {
            Issue.record(error, "a test set an invalid configuration value")
        }
    }
}
