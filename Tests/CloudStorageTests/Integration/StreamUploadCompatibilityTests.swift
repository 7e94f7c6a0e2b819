import FakeGCSServer
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// `putStream` against fake-gcs-server's resumable sessions: several requests, with and
/// without a size (`bytes a-b/*` until the last one).
@Suite("Streamed uploads on fake-gcs-server", .timeLimit(.minutes(10)))
struct StreamUploadCompatibilityTests {
    @Test(arguments: [Int64?.some(1024 * 1024 + 3), nil])
    func streamedObjectReadsBackByteForByte(declared: Int64?) async throws {
        let (storage, server) = try await TestSupport.fakeGCSStorage(label: "stream", route: .nativeHTTP) {
            try $0.uploads.setChunkSize(256 * 1024)
        }
        let payload = TestSupport.payload(size: 1024 * 1024 + 3, seed: 7)
        let bytes = AsyncStream<Data> { continuation in
            var offset = 0
            while offset < payload.count {
                let end = min(offset + 70_001, payload.count)
                continuation.yield(payload[offset..<end])
                offset = end
            }
            continuation.finish()
        }
        let metadata = try await storage.reference(withPath: "streamed.bin").putStream(bytes, size: declared).value
        #expect(metadata.size == Int64(payload.count))
        #expect(metadata.crc32cValue == CRC32C.checksum(payload))
        let downloaded = try await server.download(bucket: storage.bucket, object: "streamed.bin")
        #expect(downloaded == payload)
    }
}
