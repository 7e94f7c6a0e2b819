import FakeGCSServer
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// Resuming a saved session against fake-gcs-server (a third-party GCS JSON API server).
///
/// Probed: fake-gcs-server answers a status query (`Content-Range: bytes */*`) by finalizing the
/// object with the bytes it holds, instead of with `308` and the committed range. A resumed
/// upload's first request is such a query, so against it the object comes out truncated; the
/// SDK notices (size differs from the file), deletes that object and, since a resumed upload
/// cannot open a session in its place, fails with `uploadSessionExpired`: upload again. Real GCS
/// and our emulator answer the query with `308` (see ``ResumableSessionTests``).
@Suite("Resuming on fake-gcs-server", .timeLimit(.minutes(10)))
struct FakeGCSResumeTests {
    @Test func aStatusQueryThatFinalizesEndsInUploadSessionExpiredAndNoTruncatedObject() async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "resume", route: .nativeHTTP)
        let payload = TestSupport.payload(size: 1024 * 1024, seed: 5)
        let file = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let name = "resumed/fake.bin"

        // The first process: a session that committed its first 256 KiB, opened by hand.
        let wire = GCSJSONProtocol(baseURL: storage.endpoint.baseURL)
        let upload = UploadDescription(
            bucket: storage.bucket, objectName: name, metadata: StorageMetadata(),
            contentType: "application/octet-stream", size: Int64(payload.count))
        let started = try await storage.transport.execute(wire.startSession(upload), progress: nil)
        #expect(started.status == 200)
        let sessionURL = try wire.sessionURL(from: started)
        let first = payload.prefix(256 * 1024)
        let sent = try await storage.transport.execute(
            wire.send(
                session: sessionURL, offset: 0, body: .data(first), isFinal: false, totalSize: Int64(payload.count),
                crc32c: nil),
            progress: nil)
        #expect(sent.status == 308)

        let identity = try ReadOnlyFile(path: file.path).identity
        let session = StorageUploadSession(
            sessionURL: sessionURL, endpoint: storage.endpoint, bucket: storage.bucket, objectPath: name,
            source: .init(
                path: file.path, size: identity.size, modificationSeconds: identity.modificationSeconds,
                modificationNanoseconds: identity.modificationNanoseconds, device: identity.device,
                inode: identity.inode),
            chunkSize: nil, crc32c: nil)
        let fresh = Storage(
            bucket: storage.bucket, endpoint: storage.endpoint, configuration: storage.configuration)
        let result = await (try fresh.resumeUpload(session, from: file)).result()
        #expect(result.failureCode == .uploadSessionExpired)
        #expect(await TestSupport.isAbsent(name, in: storage, server: server), "no truncated object is left")
    }
}
