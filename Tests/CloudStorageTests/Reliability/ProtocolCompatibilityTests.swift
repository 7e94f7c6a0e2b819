import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// Both wire protocols against our strict emulator, without faults: every
/// size at the 256 KiB boundaries, both sources, every request strategy,
/// checked byte for byte in the store, over a download and by CRC32C, on
/// each transport.
@Suite("Reliability: protocol compatibility", .timeLimit(.minutes(10)))
struct ProtocolCompatibilityTests {
    /// How the upload is split into requests.
    enum Strategy: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Defaults: one multipart request up to 8 MiB, else a session sending the rest in one request.
        case defaults
        /// `uploads.multipartThreshold = -1`: a session even for 0 B, the rest in one request.
        case resumable
        /// `uploads.multipartThreshold = -1`, `uploads.chunkSize` 256 KiB: one request per 256 KiB.
        case chunked

        var testDescription: String { rawValue }

        func apply(_ configuration: inout StorageConfiguration) {
            switch self {
            case .defaults: break
            case .resumable: configuration.uploads.multipartThreshold = -1
            case .chunked:
                configuration.uploads.multipartThreshold = -1
                configuration.applyForTest { try $0.uploads.setChunkSize(256 * 1024) }
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var route: Reliability.Route
        var strategy: Strategy
        var source: Reliability.Source
        var size: Int

        var testDescription: String { "\(route.testDescription) \(strategy) \(source) \(size) B" }
    }

    static let sizes = [0, 1, 256 * 1024, 256 * 1024 + 1, 5 * 1024 * 1024 + 3, 20 * 1024 * 1024]

    static var cases: [Case] {
        var cases: [Case] = []
        for route in Reliability.Route.all {
            for strategy in Strategy.allCases {
                for source in Reliability.Source.allCases {
                    for size in sizes {
                        cases.append(Case(route: route, strategy: strategy, source: source, size: size))
                    }
                }
            }
        }
        return cases
    }

    @Test(arguments: cases)
    func uploadsAreStoredByteForByte(_ testCase: Case) async throws {
        try await Reliability.throttled {
            try await Reliability.withEmulator(for: testCase.route.via) { emulator in
                let storage = Reliability.storage(testCase.route, emulator) { testCase.strategy.apply(&$0) }
                let name = "compat/\(testCase.strategy)/\(testCase.size).bin"
                let payload = TestSupport.payload(size: testCase.size, seed: UInt64(testCase.size) &+ 17)
                let ending = try await Reliability.upload(
                    payload, from: testCase.source, to: storage.reference(withPath: name))
                let metadata = try ending.result.get()
                try Reliability.expectStored(payload, as: name, in: emulator, returned: metadata)
                #expect(metadata.path == name)
                #expect(metadata.bucket == Reliability.bucket)
                #expect(metadata.contentType == "application/octet-stream")
                // The store is checked above for every case; over HTTP, every small case and one
                // large one per size and wire (downloads cost time on 2 shared cores).
                if testCase.size < 1024 * 1024 || (testCase.source == .data && testCase.strategy == .defaults) {
                    let downloaded = try await Reliability.download(name, wire: testCase.route.wire, from: emulator)
                    #expect(downloaded == payload, "the download differs from the payload")
                }
                // Which path was taken: multipart uploads open no session, the others exactly one.
                let usesSession = testCase.strategy != .defaults || testCase.size > 8 * 1024 * 1024
                #expect(Reliability.liveSessions(emulator) == (usesSession ? 1 : 0))
            }
        }
    }

    @Test(arguments: Reliability.Route.all, [Reliability.Path.multipart, .resumable])
    func contentTypeAndCustomMetadataRoundTrip(route: Reliability.Route, path: Reliability.Path) async throws {
        try await Reliability.withEmulator(for: route.via) { emulator in
            let storage = Reliability.storage(route, emulator) {
                if path == .resumable { $0.uploads.multipartThreshold = -1 }
            }
            var metadata = StorageMetadata()
            metadata.contentType = "image/x-test; charset=binary"
            metadata.customMetadata = ["owner": "reliability", "emoji": "🚀 ünïcode", "empty": ""]
            metadata.cacheControl = "public, max-age=60"
            let name = "meta/\(path)/object with spaces & ünïcode.dat"
            let payload = TestSupport.payload(size: 1000, seed: 5)
            let ending = try await Reliability.upload(
                payload, from: .data, to: storage.reference(withPath: name), metadata: metadata)
            let returned = try ending.result.get()
            try Reliability.expectStored(payload, as: name, in: emulator, returned: returned)
            #expect(returned.contentType == metadata.contentType)
            #expect(returned.customMetadata == metadata.customMetadata)
            #expect(returned.cacheControl == metadata.cacheControl)
            let record = Reliability.record(name, in: emulator)
            #expect(record?.attributes.contentType == metadata.contentType)
            #expect(record?.attributes.metadata == metadata.customMetadata)
            #expect(record?.attributes.cacheControl == metadata.cacheControl)
        }
    }

    @Test(arguments: Reliability.Route.all)
    func aFileGetsTheContentTypeOfItsExtension(route: Reliability.Route) async throws {
        try await Reliability.withEmulator(for: route.via) { emulator in
            let storage = Reliability.storage(route, emulator)
            let payload = Data("{\"a\": 1}".utf8)
            let file = try TestSupport.file(named: "doc.json", containing: payload)
            defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
            let returned = try await storage.reference(withPath: "typed/doc.json").putFileAsync(from: file)
            #expect(returned.contentType == "application/json")
            #expect(Reliability.record("typed/doc.json", in: emulator)?.attributes.contentType == "application/json")
            try Reliability.expectStored(payload, as: "typed/doc.json", in: emulator, returned: returned)
        }
    }
}
