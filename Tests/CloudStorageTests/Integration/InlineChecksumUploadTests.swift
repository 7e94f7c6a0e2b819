import Foundation
import HTTPTestServers
import StorageEmulator
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// Large files over native TLS are hashed from the bytes the transport reads to send them
/// (``InlineChecksum``); the emulator refuses a final request whose CRC32C differs from the
/// bytes it holds, so each upload here succeeding proves the inline value right.
@Suite("Inline CRC32C over TLS", .timeLimit(.minutes(10)))
struct InlineChecksumUploadTests {
    static func storage(_ emulator: StorageEmulator, chunkSize: Int64? = nil) throws -> Storage {
        var configuration = StorageConfiguration()
        TestRoute.nativeHTTPS.apply(to: &configuration)
        try configuration.retry.setInitialDelay(.milliseconds(10))
        try configuration.retry.setMaxUploadTime(.seconds(60))
        try configuration.uploads.setChunkSize(chunkSize)
        return Storage(
            bucket: TestSupport.bucketName("inline"), endpoint: .gcs(emulator.baseURL), configuration: configuration)
    }

    @Test func theTransportReadsFileRegionsThroughTheBodyFileOnlyOverTLS() throws {
        let https = URL(string: "https://127.0.0.1:1/o")!
        let native = NativeHTTPTransport(configuration: .forTests())
        #expect(native.capabilities.readsFileRegions(to: https))
        #if os(Linux)
        #expect(!native.capabilities.readsFileRegions(to: URL(string: "http://127.0.0.1:1/o")!), "sendfile copies")
        #endif
        #expect(!URLSessionTransport.shared.capabilities.readsFileRegions(to: https))
    }

    @Test(arguments: [nil, Int64(8 * Int.mebibyte)] as [Int64?])
    func aTLSUploadSendsTheRightChecksumAfterAResetMidTransfer(chunkSize: Int64?) async throws {
        let emulator = try TestRoute.nativeHTTPS.startEmulator {
            // The start, then a body request reset midway (the second chunk when chunked), then the rest.
            $0.faults = chunkSize == nil ? ["pass", "reset-after-5M"] : ["pass", "pass", "reset-after-3M"]
        }
        defer { emulator.stop() }
        let storage = try Self.storage(emulator, chunkSize: chunkSize)
        let payload = TestSupport.payload(size: Int(PreparedSource.overlapThreshold) + 3 * .mebibyte + 5, seed: 91)
        let file = try TestSupport.file(containing: payload)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }

        let prepared = try await PreparedSource.prepare(
            .file(file), computingChecksum: true, upFrontLimit: PreparedSource.overlapThreshold, hashingInline: true)
        #expect(prepared.hashesInline, "no parallel pass for this upload")

        let metadata = try await storage.reference(withPath: "inline.bin").putFileAsync(from: file)
        #expect(metadata.size == Int64(payload.count))
        #expect(metadata.crc32cValue == CRC32C.checksum(payload))
        #expect(try Reliability.stored("inline.bin", in: emulator, bucket: storage.bucket) == payload)
    }
}
