import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// A success answer to the request that stores an object, cut short after 10
/// bytes (with a matching `Content-Length`, so the connection stays sound), while
/// the server did store the object: the upload asks what was stored, verifies it,
/// and succeeds — never failing the upload or deleting the session or object.
@Suite("Unreadable success answers", .timeLimit(.minutes(10)))
struct UnreadableSuccessAnswerTests {
    /// How an upload's bytes travel.
    enum Chunking: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// One multipart request.
        case multipart
        /// A resumable session, every byte in the finalizing request.
        case oneRequest
        /// A resumable session in 256 KiB requests.
        case chunked

        var testDescription: String { rawValue }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var source: Reliability.Source
        var chunking: Chunking

        var testDescription: String { "\(chunking) from \(source)" }

        static let all: [Case] = Reliability.Source.allCases.flatMap { source in
            Chunking.allCases.map { Case(source: source, chunking: $0) }
        }
    }

    @Test(arguments: Reliability.Route.all, Case.all)
    func theStoredObjectIsVerifiedAndKept(route: Reliability.Route, upload: Case) async throws {
        try await Reliability.throttled { try await run(route, upload) }
    }

    private func run(_ route: Reliability.Route, _ upload: Case) async throws {
        // The proxy speaks the route's scheme to the SDK, and plain HTTP to the emulator behind it.
        try await Reliability.withEmulator(for: .nativeHTTP) { emulator in
            let proxy = try TruncatingProxy(emulator: emulator.baseURL, scheme: route.via.scheme)
            defer { proxy.stop() }
            var configuration = StorageConfiguration()
            try configuration.retry.setInitialDelay(.milliseconds(5))
            try configuration.retry.setMaxDelay(.milliseconds(40))
            try configuration.retry.setMaxUploadTime(.seconds(30))
            route.via.apply(to: &configuration)
            let size: Int
            switch upload.chunking {
            case .multipart:
                size = 100_000
            case .oneRequest:
                size = 600_000
                configuration.uploads.multipartThreshold = -1
            case .chunked:
                size = 600_000
                configuration.uploads.multipartThreshold = -1
                try configuration.uploads.setChunkSize(StorageConfiguration.Uploads.chunkGranularity)
            }
            let storage = Storage(
                bucket: Reliability.bucket, endpoint: route.wire.endpoint(proxy.baseURL), configuration: configuration)
            let payload = TestSupport.payload(size: size, seed: UInt64(size))
            let ending = try await Reliability.upload(
                payload, from: upload.source, to: storage.reference(withPath: "cut/answer"))
            #expect(proxy.truncations == 1, "the final answer was cut short")
            let stored = try ending.result.get()
            try Reliability.expectStored(payload, as: "cut/answer", in: emulator, returned: stored)
            #expect(!proxy.sawDeletion, "nothing is deleted or cancelled")
        }
    }
}
