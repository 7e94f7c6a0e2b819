import Foundation
import HTTP1
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import HTTPClient
@testable import StorageEmulator

/// Faults on the response body of media downloads: a download broken by a
/// reset mid-body, a stall that only the request time-out ends, a dropped
/// response or a 503 still ends with the object's exact bytes, in memory and
/// in a file, over both wire protocols. After a cut-short body the retry asks
/// for the rest with `Range` (seen through a transport that records requests).
///
/// The emulator's global plan is `["pass", fault]`: the upload (one multipart
/// request, checked) passes, the download's first GET gets the fault, and
/// everything after passes. Every case runs on each transport.
@Suite("Reliability: download faults", .timeLimit(.minutes(10)))
struct DownloadFaultTests {
    enum Sink: String, CaseIterable, Sendable {
        case data, file
    }

    enum Kind: String, Sendable {
        case resetAfter = "reset-after-N"
        /// The emulator sends N bytes, then holds the response until the client
        /// gives up (`stall-after-N`): the download's request time-out is the
        /// only way on, however loaded the machine.
        case longStallAfter = "stall-after-N, held until the client times out"
        case dropResponse = "drop-response"
        case return503 = "return-503"

        func instruction(offset: Int) -> String {
            switch self {
            case .resetAfter: "reset-after-\(offset)"
            case .longStallAfter: "stall-after-\(offset)"
            case .dropResponse: "drop-response"
            case .return503: "return-503"
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var route: Reliability.Route
        var sink: Sink
        var size: Int
        var kind: Kind
        var offset: FaultMatrixTests.Offset
        /// N, for the faults that take one.
        var bytes: Int?

        var instruction: String { kind.instruction(offset: bytes ?? 0) }

        var testDescription: String {
            "\(route.testDescription) \(sink.rawValue) \(size) B: \(instruction) [\(offset.rawValue)]"
        }
    }

    static let sizes = [1, 256 * 1024 + 1, 5 * 1024 * 1024 + 3]

    static let cases: [Case] = {
        var cases: [Case] = []
        for route in Reliability.Route.all {
            for sink in Sink.allCases {
                for size in sizes {
                    var seen = Set<Int>()
                    for offset in [FaultMatrixTests.Offset.firstByte, .middle, .lastByte] {
                        guard let bytes = offset.bytes(size: size), seen.insert(bytes).inserted else { continue }
                        cases.append(
                            Case(route: route, sink: sink, size: size, kind: .resetAfter, offset: offset, bytes: bytes))
                    }
                    let middle = FaultMatrixTests.Offset.middle
                    cases.append(
                        Case(
                            route: route, sink: sink, size: size, kind: .longStallAfter, offset: middle,
                            bytes: middle.bytes(size: size)))
                    for kind in [Kind.dropResponse, .return503] {
                        cases.append(Case(route: route, sink: sink, size: size, kind: kind, offset: .none, bytes: nil))
                    }
                }
            }
        }
        return cases
    }()

    @Test(arguments: cases)
    func downloadSurvivesTheFault(_ testCase: Case) async throws {
        try await Reliability.throttled {
            try await Reliability.withEmulator(for: testCase.route.via, faults: ["pass", testCase.instruction]) {
                emulator in
                let recorder = TestTransport(
                    wrapping: testCase.route.via.makeTransport(for: testCase.route.wire.endpoint(emulator.baseURL)))
                let storage = Self.storage(testCase.route.wire, emulator, recorder)
                let name = "downloads/\(testCase.size).bin"
                let payload = TestSupport.payload(size: testCase.size, seed: UInt64(testCase.size) &* 13 &+ 5)
                _ = try await storage.reference(withPath: name).putDataAsync(payload)
                #expect(recorder.sent.count == 1, "the upload is one request, so the fault hits the download")
                try Reliability.expectStored(payload, as: name, in: emulator, returned: nil)

                // A held response ends only with the client's time-out, so that case gets a short one;
                // the others keep the default 60 s, so that a slow moment never adds a GET to count.
                let downloads = Self.storage(testCase.route.wire, emulator, recorder) {
                    if testCase.kind == .longStallAfter {
                        try $0.timeouts.setRequest(Reliability.stallingRequestTimeout)
                    }
                }
                let reference = downloads.reference(withPath: name)
                let downloaded: Data
                switch testCase.sink {
                case .data:
                    downloaded = try await reference.data(maxSize: Int64(testCase.size))
                case .file:
                    let directory = try TestSupport.temporaryDirectory()
                    defer { try? FileManager.default.removeItem(at: directory) }
                    let target = directory.appendingPathComponent("copy.bin")
                    #expect(try await reference.writeAsync(toFile: target) == target)
                    downloaded = try Data(contentsOf: target)
                }
                #expect(downloaded.count == payload.count, "duplicated or missing bytes")
                #expect(downloaded == payload, "downloaded bytes differ from the payload")
                Self.checkRequests(Array(recorder.sent.dropFirst()), testCase)
            }
        }
    }

    static func storage(
        _ wire: Reliability.Wire, _ emulator: StorageEmulator, _ transport: TestTransport,
        configure: (inout StorageConfiguration) throws -> Void = { _ in }
    ) -> Storage {
        var configuration = StorageConfiguration()
        configuration.applyForTest {
            try $0.retry.setInitialDelay(.milliseconds(5))
            try $0.retry.setMaxDelay(.milliseconds(40))
            try $0.retry.setMaxUploadTime(.seconds(30))
            try configure(&$0)
        }
        return Storage(
            bucket: Reliability.bucket, endpoint: wire.endpoint(emulator.baseURL), authorization: .none,
            configuration: configuration, transport: transport)
    }

    /// The download's GETs: the faulted one first, then retries; a retry after a
    /// cut-short body continues with `Range: bytes=K-` where K is at most what was sent.
    static func checkRequests(_ gets: [TestTransport.Sent], _ testCase: Case) {
        #expect(gets.allSatisfy { $0.method == "GET" })
        #expect(gets.first?.header("Range") == nil, "the first GET asks for the whole object")
        if testCase.kind != .dropResponse {
            #expect(gets.count >= 2, "the faulted GET was retried")
        }
        let resumedFrom = gets.dropFirst().first?.header("Range").flatMap(Self.rangeStart)
        switch testCase.kind {
        case .resetAfter, .longStallAfter:
            let sent = testCase.bytes ?? 0
            if let resumedFrom {
                #expect(resumedFrom > 0 && resumedFrom <= Int64(sent), "resumed at \(resumedFrom) of \(sent) sent")
            }
            // Hundreds of KiB reach the client before the fault: it must not start over.
            if sent >= 64 * 1024 {
                #expect(resumedFrom != nil, "the retry after \(sent) bytes used a Range request")
            }
        case .dropResponse:
            // The native transport repeats an idempotent request itself, below the recorder, when
            // a reused connection closes before any response byte: the drop may show as one GET.
            #expect((1...2).contains(gets.count))
            #expect(gets.allSatisfy { $0.header("Range") == nil }, "nothing arrived, so no retry asks for a range")
        case .return503:
            #expect(gets.count == 2)
            #expect(resumedFrom == nil, "nothing arrived, so the retry asks for the whole object")
        }
    }

    /// K of `bytes=K-`.
    static func rangeStart(_ header: String) -> Int64? {
        guard header.hasPrefix("bytes="), header.hasSuffix("-") else { return nil }
        return Int64(header.dropFirst("bytes=".count).dropLast())
    }
}
