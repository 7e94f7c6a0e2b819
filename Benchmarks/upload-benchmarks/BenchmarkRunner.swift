import CloudStorage
import FakeGCSServer
import Foundation

/// Runs every scenario against one fake-gcs-server, round by round, and
/// checks every upload.
@MainActor
final class BenchmarkRunner {
    private let options: BenchmarkOptions
    private let server: FakeGCSServer
    private let client: ServerClient
    private let largeFile: URL
    private let smallPayload: Data
    private let smallFile: URL
    private let curl: CurlBaseline?
    private let scenarios: [Scenario]

    private var largeReference: ObjectFacts?
    private var smallReference: ObjectFacts?
    private(set) var referenceDescription = ""
    private(set) var peakResetWorks = true

    /// Sets up a runner; ``prepare()`` must run before ``run()``.
    ///
    /// - Parameters:
    ///   - options: Sizes and counts.
    ///   - server: The running server; its bucket must exist.
    ///   - bucket: The bucket to upload to.
    ///   - directory: Where the payload files are.
    ///   - curl: The curl executable, or nil to skip the baseline.
    init(options: BenchmarkOptions, server: FakeGCSServer, bucket: String, directory: URL, curl: String?) {
        self.options = options
        self.server = server
        self.client = ServerClient(server: server, bucket: bucket)
        self.largeFile = directory.appendingPathComponent("payload-large.bin")
        self.smallFile = directory.appendingPathComponent("payload-small.bin")
        self.smallPayload = Payload.bytes(size: Int(options.smallSize), seed: 64)
        self.curl = curl.map { CurlBaseline(curl: $0, baseURL: server.baseURL, bucket: bucket) }
        self.scenarios = Scenario.all(options, withBaseline: curl != nil)
    }

    // MARK: Preparing

    /// Writes the payload files, uploads the reference objects every later
    /// upload is compared with, and warms up curl, the server and the SDK's
    /// connections. Nothing here is timed.
    func prepare() async throws {
        let largeFile = largeFile
        let smallFile = smallFile
        let smallPayload = smallPayload
        let size = options.largeSize
        try await BlockingWork.run {
            try Payload.writeFile(at: largeFile, size: size, seed: 256)
            try smallPayload.write(to: smallFile)
        }
        if let curl {
            // curl sends no checksums, so the server computes both from the bytes it got.
            largeReference = try await curl.upload(file: largeFile, size: size, object: "reference-large").facts
            smallReference = try await curl.upload(file: smallFile, size: options.smallSize, object: "reference-small")
                .facts
            referenceDescription =
                "each upload's size, md5Hash and crc32c (as the SDK returned them) equal those the server computed for curl's upload of the same bytes; once per scenario, the server's object resource agrees too."
        } else {
            // The SDK compares the server's CRC32C with its own over the bytes it sent.
            largeReference = ObjectFacts(
                try await storage(for: .putFile).reference(withPath: "reference-large").putFileAsync(from: largeFile))
            smallReference = ObjectFacts(
                try await storage(for: .putFile).reference(withPath: "reference-small").putDataAsync(smallPayload))
            referenceDescription =
                "curl is missing, so the reference is an SDK upload with checksums on (its CRC32C checked by the SDK); each upload's size, md5Hash and crc32c equal it, and once per scenario the server's object resource agrees."
        }
        try await client.delete("reference-large")
        try await client.delete("reference-small")
        for (name, reference) in [("large", largeReference), ("small", smallReference)] {
            guard let reference, reference.md5Hash != nil || reference.crc32c != nil else {
                throw BenchmarkError(
                    "the server reported no checksum for the \(name) reference upload, so nothing could be verified")
            }
        }
        // Opens the SDK's connections, so the first timed run does not pay for it.
        let warmUp = try await storage(for: .putFile).reference(withPath: "warm-up.bin").putDataAsync(smallPayload)
        try check(ObjectFacts(warmUp), against: smallReference, what: "the warm-up upload")
        try await client.delete("warm-up.bin")
    }

    // MARK: Running

    /// Runs `options.runs` rounds of every scenario.
    ///
    /// - Returns: One result per scenario, in order.
    /// - Throws: ``BenchmarkError`` on any failure or verification mismatch.
    func run() async throws -> [ScenarioResult] {
        var samples: [[RunSample]] = Array(repeating: [], count: scenarios.count)
        for round in 1...options.runs {
            for (index, scenario) in scenarios.enumerated() {
                progress("round \(round)/\(options.runs): \(scenario.name) …")
                let sample = try await measure(scenario, round: round)
                samples[index].append(sample)
                progress(String(format: " %.1f MB/s in %.3f s\n", sample.megabytesPerSecond, sample.seconds))
            }
        }
        let baselineMedian = scenarios.firstIndex(where: \.isBaseline).map {
            Statistics.median(samples[$0].map(\.megabytesPerSecond))
        }
        return scenarios.enumerated().map { index, scenario in
            ScenarioResult(scenario, samples: samples[index], baselineMedian: baselineMedian)
        }
    }

    /// Times one run of a scenario, verifies it and removes what it stored.
    private func measure(_ scenario: Scenario, round: Int) async throws -> RunSample {
        let root = server.supervisorProcessIdentifier
        let (initial, _) = try await ResourceSnapshot.take(resetPeak: false, serverRoot: root)
        var payload: Data?
        if scenario.kind == .putData {
            let file = largeFile
            payload = try await BlockingWork.run { try Data(contentsOf: file) }
        }
        let (before, reset) = try await ResourceSnapshot.take(resetPeak: true, serverRoot: root)
        if !reset { peakResetWorks = false }
        let clock = ContinuousClock()
        let start = clock.now
        let uploaded = try await perform(scenario, round: round, payload: payload)
        let elapsed = start.duration(to: clock.now)
        let (after, _) = try await ResourceSnapshot.take(resetPeak: false, serverRoot: root)
        payload = nil

        let reference = scenario.countsUploads ? smallReference : largeReference
        for (name, facts) in uploaded.objects {
            try check(facts, against: reference, what: "\(scenario.name) run \(round), object \(name)")
        }
        if round == 1, let (name, facts) = uploaded.objects.last {
            let stored = try await client.facts(of: name)
            try check(stored, against: facts, what: "the server's resource of \(name) (\(scenario.name))")
            try check(stored, against: reference, what: "the server's resource of \(name) (\(scenario.name))")
        }
        if !scenario.countsUploads {
            // Small objects reuse their names every round; large ones would pile up in the server's RAM.
            for (name, _) in uploaded.objects { try await client.delete(name) }
        }
        let (settled, _) = try await ResourceSnapshot.take(resetPeak: false, serverRoot: root)

        return RunSample(
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            bytes: uploaded.bytes,
            uploads: uploaded.objects.count,
            clientCPU: uploaded.childUsage?.cpuSeconds ?? (after.selfCPU - before.selfCPU),
            contextSwitches: uploaded.childUsage?.contextSwitches ?? (after.contextSwitches - before.contextSwitches),
            serverCPU: after.serverCPU.flatMap { end in before.serverCPU.map { end - $0 } },
            // A spawned child's ru_maxrss includes this process's RSS at spawn time (the
            // child shares or copies our address space until exec), so curl's is not reported.
            peakResidentBytes: uploaded.childUsage == nil ? after.peakResidentBytes : nil,
            residentGrowthBytes: uploaded.childUsage == nil
                ? after.peakResidentBytes.flatMap { peak in before.residentBytes.map { peak - $0 } } : nil,
            retainedBytes: uploaded.childUsage == nil
                ? settled.residentBytes.flatMap { end in initial.residentBytes.map { end - $0 } } : nil
        )
    }

    /// The objects one run stored, with the facts the uploader got back.
    private struct Uploaded {
        var bytes: Int64
        var objects: [(String, ObjectFacts)]
        /// For the baseline: what the curl processes used, measured by `wait4`.
        var childUsage: CurlBaseline.Result?
    }

    private func perform(_ scenario: Scenario, round: Int, payload: Data?) async throws -> Uploaded {
        let name = "\(scenario.name)-r\(round).bin"
        let size = options.largeSize
        switch scenario.kind {
        case .curlBaseline:
            guard let curl else { throw BenchmarkError("the curl baseline ran without curl") }
            let result = try await curl.upload(file: largeFile, size: size, object: name)
            return Uploaded(bytes: size, objects: [(name, result.facts)], childUsage: result)
        case .putFile, .putFileChunked, .putFileWithoutChecksums:
            let metadata = try await storage(for: scenario.kind).reference(withPath: name).putFileAsync(from: largeFile)
            return Uploaded(bytes: size, objects: [(name, ObjectFacts(metadata))])
        case .putData:
            guard let payload else { throw BenchmarkError("putData ran without its payload") }
            let metadata = try await storage(for: .putData).reference(withPath: name).putDataAsync(payload)
            return Uploaded(bytes: size, objects: [(name, ObjectFacts(metadata))])
        case .putStream:
            let metadata = try await storage(for: .putStream).reference(withPath: name)
                .putStream(FileBlocks(url: largeFile)).value
            return Uploaded(bytes: size, objects: [(name, ObjectFacts(metadata))])
        case .smallPutData(let count):
            let storage = try storage(for: scenario.kind)
            let payload = smallPayload
            let objects = try await withThrowingTaskGroup(of: (String, ObjectFacts).self) { group in
                for index in 0..<count {
                    let name = "small-\(index).bin"
                    let reference = storage.reference(withPath: name)
                    group.addTask { (name, ObjectFacts(try await reference.putDataAsync(payload))) }
                }
                var objects: [(String, ObjectFacts)] = []
                objects.reserveCapacity(count)
                for try await object in group { objects.append(object) }
                return objects
            }
            return Uploaded(bytes: Int64(count) * options.smallSize, objects: objects)
        }
    }

    /// The SDK handle each scenario uses: default settings but for what it varies.
    private func storage(for kind: Scenario.Kind) throws -> Storage {
        var configuration = StorageConfiguration()
        // Fail a broken run quickly instead of retrying for ten minutes.
        try configuration.retry.setMaxUploadTime(.seconds(30))
        try configuration.retry.setInitialDelay(.milliseconds(200))
        switch kind {
        case .putFileChunked(let chunk): try configuration.uploads.setChunkSize(chunk)
        case .putFileWithoutChecksums: configuration.verifiesChecksums = false
        default: break
        }
        return Storage(bucket: client.bucket, endpoint: .gcs(server.baseURL), configuration: configuration)
    }

    private func check(_ facts: ObjectFacts, against reference: ObjectFacts?, what: String) throws {
        guard let reference else { throw BenchmarkError("no reference to verify \(what) against") }
        if let mismatch = facts.mismatch(against: reference) {
            throw BenchmarkError("verification failed for \(what): \(mismatch)")
        }
    }
}

/// Writes a progress message to stderr, so stdout holds only the report.
func progress(_ message: String) {
    FileHandle.standardError.write(Data(message.utf8))
}
