import Foundation
import StorageTestSupport
import Testing

@testable import CloudStorage
@testable import StorageEmulator

/// Every fault the emulator can inject, on the request that carries the bytes,
/// at every interesting offset: the upload still ends in success with the
/// object byte-identical — no byte duplicated or missing.
///
/// The emulator's global plan applies to requests in order, so for the
/// multipart path the plan is `[fault]` and for the resumable path
/// `[pass, fault]` (the session start passes). Everything after the fault
/// passes, so the SDK's retry (or query and resume) must finish the upload.
/// Every case runs on each transport.
@Suite("Reliability: fault matrix", .timeLimit(.minutes(10)))
struct FaultMatrixTests {
    /// What goes wrong.
    enum Kind: String, CaseIterable, Sendable {
        case return503 = "return-503"
        case return408 = "return-408"
        case return429 = "return-429"
        case return500After = "return-500-after-N"
        case resetAfter = "reset-after-N"
        /// The emulator holds the request until the client gives up
        /// (`stall-after-N`): the SDK's request time-out is the only way on,
        /// so it must time out, then resume.
        case longStallAfter = "stall-after-N, held until the client times out"
        /// 50 ms against the default 60 s request time-out: just slow, never a time-out.
        case shortStallAfter = "stall-50ms-after-N"
        case dropResponse = "drop-response"

        /// Whether the fault waits for N body bytes.
        var takesOffset: Bool {
            [.return500After, .resetAfter, .longStallAfter, .shortStallAfter].contains(self)
        }

        func instruction(offset: Int) -> String {
            switch self {
            case .return503: "return-503"
            case .return408: "return-408"
            case .return429: "return-429"
            case .return500After: "return-500-after-\(offset)"
            case .resetAfter: "reset-after-\(offset)"
            case .longStallAfter: "stall-after-\(offset)"
            case .shortStallAfter: "stall-50ms-after-\(offset)"
            case .dropResponse: "drop-response"
            }
        }
    }

    /// Where in the body the fault fires.
    enum Offset: String, Sendable {
        case firstByte = "first byte"
        case middle
        case exactly256KiB = "256 KiB"
        case lastByte = "last byte"
        /// Before the body (`return-<status>`) or after the commit (`drop-response`).
        case none = "-"

        /// The byte count N for a `size`-byte payload, or nil when the offset is meaningless
        /// there (an offset at or beyond the end of the payload).
        func bytes(size: Int) -> Int? {
            let value: Int
            switch self {
            case .firstByte: value = size > 1 ? 1 : 0
            case .middle: value = size / 2
            case .exactly256KiB: value = Reliability.granule
            case .lastByte: value = size - 1
            case .none: return nil
            }
            return value >= 0 && value < size ? value : nil
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var route: Reliability.Route
        var path: Reliability.Path
        var source: Reliability.Source
        var size: Int
        var kind: Kind
        var offset: Offset
        var instruction: String

        var testDescription: String {
            "\(route.testDescription) \(path) \(source) \(size) B: \(instruction) [\(offset.rawValue)]"
        }
    }

    static let sizes = [0, 1, 256 * 1024, 256 * 1024 + 1, 5 * 1024 * 1024 + 3]

    /// Every meaningful combination of `kinds`: offsets at or beyond the end of the
    /// payload are left out here, and offsets that coincide for a size are kept once.
    static func cases(_ kinds: [Kind]) -> [Case] {
        var cases: [Case] = []
        for route in Reliability.Route.all {
            for path in Reliability.Path.allCases {
                for source in Reliability.Source.allCases {
                    for size in sizes {
                        for kind in kinds {
                            guard kind.takesOffset else {
                                cases.append(
                                    Case(
                                        route: route, path: path, source: source, size: size, kind: kind,
                                        offset: .none, instruction: kind.instruction(offset: 0)))
                                continue
                            }
                            // A multipart request commits nothing, so after a held request its retry must
                            // send everything again under the same short time-out; with MiBs on a shared
                            // 2-core debug run the emulator can take seconds to answer, so the retry could
                            // time out too and the verdict would depend on load. Only 1 byte is meaningful.
                            if kind == .longStallAfter, path == .multipart, size > 1 { continue }
                            var seen = Set<Int>()
                            for offset in [Offset.firstByte, .middle, .exactly256KiB, .lastByte] {
                                guard let bytes = offset.bytes(size: size), seen.insert(bytes).inserted else {
                                    continue
                                }
                                cases.append(
                                    Case(
                                        route: route, path: path, source: source, size: size, kind: kind,
                                        offset: offset, instruction: kind.instruction(offset: bytes)))
                            }
                        }
                    }
                }
            }
        }
        return cases
    }

    static func run(_ testCase: Case) async throws {
        try await Reliability.throttled {
            try await Reliability.withEmulator(
                for: testCase.route.via, faults: testCase.path.plan(faultingBytesWith: testCase.instruction)
            ) {
                emulator in
                let storage = Reliability.storage(testCase.route, emulator) {
                    if testCase.path == .resumable { $0.uploads.multipartThreshold = -1 }
                    if testCase.kind == .longStallAfter {
                        try $0.timeouts.setRequest(Reliability.stallingRequestTimeout)
                    }
                }
                let name = "matrix/\(testCase.size).bin"
                let payload = TestSupport.payload(size: testCase.size, seed: UInt64(testCase.size) &* 31 &+ 7)
                let ending = try await Reliability.upload(
                    payload, from: testCase.source, to: storage.reference(withPath: name))
                #expect(ending.error == nil, "\(ending.error.map(String.init(describing:)) ?? "")")
                let returned = try? ending.result.get()
                if testCase.path == .multipart, testCase.kind == .longStallAfter {
                    // The held request stores nothing, but with the short time-out a retry may itself
                    // time out after the emulator stored it (a loaded machine decides), and then the
                    // same bytes are stored again under a newer generation than the one returned.
                    try Reliability.expectStored(payload, as: name, in: emulator, returned: nil)
                    #expect(returned?.size == Int64(payload.count))
                    #expect(returned?.crc32cValue == CRC32C.checksum(payload))
                    let stored = Reliability.record(name, in: emulator)?.generation ?? 0
                    #expect(stored >= returned?.generation ?? .max, "the stored object predates the upload")
                } else {
                    try Reliability.expectStored(payload, as: name, in: emulator, returned: returned)
                }
                if testCase.path == .resumable {
                    // With a short time-out the session start itself may time out on a busy machine
                    // and be sent again (the first session's URL never arrived, so it stays behind).
                    let sessions = Reliability.liveSessions(emulator)
                    if testCase.kind == .longStallAfter {
                        #expect(sessions >= 1)
                    } else {
                        #expect(sessions == 1, "one session, neither lost nor replaced")
                    }
                }
            }
        }
    }

    @Test("Statuses before the body: 503, 408, 429", arguments: cases([.return503, .return408, .return429]))
    func statusBeforeTheBody(_ testCase: Case) async throws {
        try await Self.run(testCase)
    }

    @Test("return-500 after N bytes", arguments: cases([.return500After]))
    func serverErrorAfterNBytes(_ testCase: Case) async throws {
        try await Self.run(testCase)
    }

    @Test("Connection reset after N bytes", arguments: cases([.resetAfter]))
    func resetAfterNBytes(_ testCase: Case) async throws {
        try await Self.run(testCase)
    }

    @Test(
        "Stalls after N bytes: longer than the request time-out, and shorter",
        arguments: cases([.longStallAfter, .shortStallAfter]))
    func stallAfterNBytes(_ testCase: Case) async throws {
        try await Self.run(testCase)
    }

    @Test("The request is committed, then its answer is lost", arguments: cases([.dropResponse]))
    func droppedResponse(_ testCase: Case) async throws {
        try await Self.run(testCase)
    }

    @Test("The matrix covers what it claims")
    func theMatrixIsComplete() {
        let all = Self.cases(Kind.allCases)
        // Per route (3 transport routes × 2 wires) × path × source: 4 offset-free kinds × 5 sizes, plus 4
        // offset kinds × 11 distinct offsets (0 B: none, 1 B: 1, 256 KiB: 3, 256 KiB + 1: 3, 5 MiB + 3: 4),
        // less the 10 long-stall multipart cases above 1 B.
        #expect(all.count == 6 * 2 * 2 * (4 * 5 + 4 * 11) - 6 * 2 * 10)
        #expect(Set(all.map(\.route.via)) == Set(TestRoute.all))
        #expect(!all.contains { $0.kind.takesOffset && $0.size == 0 })
        #expect(all.contains { $0.instruction == "reset-after-262144" && $0.size == 256 * 1024 + 1 })
        #expect(all.contains { $0.instruction == "return-500-after-0" && $0.size == 1 })
    }
}

/// Seeded random faults on every request of a chunked 5 MiB + 3 upload, on each route.
@Suite("Reliability: random faults", .timeLimit(.minutes(10)))
struct RandomFaultTests {
    static let size = 5 * 1024 * 1024 + 3

    @Test(arguments: Reliability.Route.all, 1...20)
    func randomFaultsNeverCorruptTheObject(route: Reliability.Route, seed: Int) async throws {
        try await Reliability.throttled {
            try await Reliability.withEmulator(for: route.via, faults: ["random:seed=\(seed),rate=0.3"]) { emulator in
                let storage = Reliability.storage(route, emulator) {
                    try $0.uploads.setChunkSize(256 * 1024)
                    try $0.retry.setMaxUploadTime(.seconds(60))
                }
                let payload = TestSupport.payload(size: Self.size, seed: UInt64(seed) &+ 1000)
                let source: Reliability.Source = seed.isMultiple(of: 2) ? .data : .file
                let ending = try await Reliability.upload(
                    payload, from: source, to: storage.reference(withPath: "random/\(seed).bin"))
                #expect(ending.error == nil, "\(ending.error.map(String.init(describing:)) ?? "")")
                try Reliability.expectStored(
                    payload, as: "random/\(seed).bin", in: emulator, returned: try? ending.result.get())
            }
        }
    }
}
