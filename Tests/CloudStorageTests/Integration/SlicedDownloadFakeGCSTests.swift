import FakeGCSServer
import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage

/// A sliced file download against fake-gcs-server: whether it slices depends on what the
/// server's media answers carry (a generation to pin, `Range` honoured), and either way the
/// file holds the object's exact bytes.
@Suite("fake-gcs-server: sliced downloads", .timeLimit(.minutes(10)))
struct SlicedDownloadFakeGCSTests {
    @Test func aSlicedDownloadGetsTheExactBytes() async throws {
        let server = try await FakeGCSServer.shared()
        let bucket = TestSupport.bucketName("slice")
        try await server.createBucket(bucket)
        let probe = TestTransport(wrapping: TestRoute.nativeHTTP.makeTransport(for: .gcs(server.baseURL)))
        var configuration = StorageConfiguration()
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(50))
            $0.downloads.slicingThreshold = 1
            try $0.downloads.setSliceCount(4)
            $0.downloads.slicingProbe = nil
        }
        let storage = Storage(
            bucket: bucket, endpoint: .gcs(server.baseURL), authorization: .none, configuration: configuration,
            transport: probe)
        let size = 700_001
        let payload = TestSupport.payload(size: size, seed: 3)
        let reference = storage.reference(withPath: "sliced.bin")
        _ = try await reference.putDataAsync(payload)
        let directory = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("copy.bin")
        _ = try await reference.writeAsync(toFile: target)
        #expect(try Data(contentsOf: target) == payload)
        // fake-gcs-server names the generation and honours Range: the download is sliced.
        let plan = RangedDownloadStateMachine.slices(of: Int64(size), count: 4)
        #expect(probe.mediaGets.first?.range == nil)
        #expect(
            Set(probe.mediaGets.dropFirst().map { $0.range ?? "" })
                == Set(plan.dropFirst().map { "bytes=\($0.start)-\($0.end!)" }))
    }
}
