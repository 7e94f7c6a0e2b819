import CCloudStorage
import CloudStorage
import FakeGCSServer
import Foundation
import StorageEmulator

/// `--discard`: every upload flavour per transport, side by side with a raw
/// `sendfile` PUT (and curl) of the same bytes to the same server: the
/// built-in emulator in discard mode, in this process. The emulator checks
/// sizes and computes MD5 and CRC32C of what it receives, and stores nothing.
struct DiscardBenchmark {
    let options: BenchmarkOptions
    let curl: String?

    /// What an upload must have stored.
    struct Expected: Sendable {
        var size: Int64
        var crc32c: String
    }

    func run(directory: URL) async throws {
        let clock = ContinuousClock()
        let startedAt = clock.now
        let machine = try await MachineFacts.collect(curl: curl)
        var configuration = StorageEmulator.Configuration()
        configuration.backing = .discard
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let bucket = "bench"
        try emulator.createBucket(bucket)

        if options.scale {
            let report = try await ScaleBenchmark(options: options, emulator: emulator, bucket: bucket)
                .run(directory: directory, machine: machine)
            print(
                options.json ? try DiscardReportPrinter.json(report) : DiscardReportPrinter.scaleTable(report),
                terminator: "")
            return
        }

        let file = directory.appendingPathComponent("payload.bin")
        progress("writing the \(options.sizeMiB) MiB payload and the \(options.dataMiB) MiB putData payload …\n")
        let size = options.largeSize
        let dataSize = options.dataSize
        let smallSize = Int(options.smallSize)
        let (fileCRC, data, small) = try await BlockingWork.run { () -> (UInt32, Data, Data) in
            let crc = try Payload.writeRepeatingFile(at: file, size: size, seed: 1)
            return (crc, Payload.bytes(size: Int(dataSize), seed: 2), Payload.bytes(size: smallSize, seed: 3))
        }
        let expectedFile = Expected(size: size, crc32c: Self.base64(fileCRC))
        let expectedData = Expected(size: dataSize, crc32c: Self.base64(Self.crc32c(data)))
        let expectedSmall = Expected(size: Int64(smallSize), crc32c: Self.base64(Self.crc32c(small)))

        progress("measuring the CRC32C pre-pass on its own …\n")
        let checksumCost = try await ChecksumCost.measure(file: file, size: size)

        let useCurl = curl != nil && !options.noCurl
        let scenarios = DiscardScenario.all(options, curl: useCurl)
        let baseURL = emulator.baseURL
        var storages: [String: Storage] = [:]
        for scenario in scenarios where !scenario.isBaseline {
            var settings = StorageConfiguration()
            settings.transport = scenario.choice
            settings.verifiesChecksums = scenario.checksums
            settings.chunkSize = scenario.chunkSize
            // Fail a broken run quickly instead of retrying for ten minutes.
            settings.maxUploadRetryTime = .seconds(30)
            settings.initialRetryDelay = .milliseconds(200)
            storages[scenario.name] = Storage(bucket: bucket, endpoint: .gcs(baseURL), configuration: settings)
        }
        // Opens each transport's connections, so the first timed run does not pay for it.
        for transport in Set(scenarios.compactMap(\.transport)).sorted() {
            guard let storage = storages.first(where: { $0.key.contains("/\(transport)/") })?.value else { continue }
            for index in 0..<8 {
                let metadata = try await storage.reference(withPath: "warm-up-\(index)").putDataAsync(small)
                try Self.check(metadata.size, metadata.crc32c, against: expectedSmall, what: "the \(transport) warm-up")
            }
        }

        let sendfile = SendfileBaseline(host: baseURL.host ?? "127.0.0.1", port: emulator.port, bucket: bucket)
        let curlBaseline = curl.map { CurlBaseline(curl: $0, baseURL: baseURL, bucket: bucket) }
        var samples: [[DiscardSample]] = Array(repeating: [], count: scenarios.count)
        var resetWorks = true
        let rounds = scenarios.map(\.runs).max() ?? 0
        for round in 1...max(1, rounds) {
            for (index, scenario) in scenarios.enumerated() where scenario.runs >= round {
                progress("round \(round)/\(scenario.runs): \(scenario.name) … ")
                let (before, reset) = try await ResourceSnapshot.take(resetPeak: true, serverRoot: nil)
                if !reset { resetWorks = false }
                let started = clock.now
                var childCPU = 0.0
                var bytes: Int64 = 0
                var uploads = 1
                let name = "\(scenario.name.replacingOccurrences(of: "/", with: "-"))-r\(round)"
                switch scenario.kind {
                case .sendfileBaseline:
                    let facts = try await sendfile.upload(file: file, size: size, object: name)
                    try Self.check(facts.size, facts.crc32c, against: expectedFile, what: name)
                    bytes = size
                case .curlBaseline:
                    guard let curlBaseline else { continue }
                    let result = try await curlBaseline.upload(file: file, size: size, object: name)
                    try Self.check(result.facts.size, result.facts.crc32c, against: expectedFile, what: name)
                    childCPU = result.cpuSeconds
                    bytes = size
                case .putFile:
                    let storage = try Self.storage(storages, scenario)
                    let metadata = try await storage.reference(withPath: name).putFileAsync(from: file)
                    try Self.check(metadata.size, metadata.crc32c, against: expectedFile, what: name)
                    bytes = size
                case .putData:
                    let storage = try Self.storage(storages, scenario)
                    let metadata = try await storage.reference(withPath: name).putDataAsync(data)
                    try Self.check(metadata.size, metadata.crc32c, against: expectedData, what: name)
                    bytes = dataSize
                case .smallPutData:
                    let storage = try Self.storage(storages, scenario)
                    let count = options.smallCount
                    try await withThrowingTaskGroup(of: StorageMetadata.self) { group in
                        for index in 0..<count {
                            let reference = storage.reference(withPath: "small-\(index)")
                            group.addTask { try await reference.putDataAsync(small) }
                        }
                        for try await metadata in group {
                            try Self.check(metadata.size, metadata.crc32c, against: expectedSmall, what: name)
                        }
                    }
                    bytes = Int64(count) * Int64(smallSize)
                    uploads = count
                }
                let elapsed = started.duration(to: clock.now)
                let (after, _) = try await ResourceSnapshot.take(resetPeak: false, serverRoot: nil)
                let sample = DiscardSample(
                    seconds: Self.seconds(elapsed),
                    bytes: bytes,
                    uploads: uploads,
                    cpuSeconds: after.selfCPU - before.selfCPU + childCPU,
                    peakResidentBytes: after.peakResidentBytes,
                    residentGrowthBytes: after.peakResidentBytes.flatMap { peak in
                        before.residentBytes.map { peak - $0 }
                    }
                )
                samples[index].append(sample)
                progress(
                    String(format: "%.0f MB/s", sample.megabytesPerSecond)
                        + (scenario.countsUploads
                            ? String(format: ", %.0f uploads/s\n", sample.uploadsPerSecond) : "\n"))
            }
        }

        let baselineMedian = Statistics.median(samples[0].map(\.megabytesPerSecond))
        let results = scenarios.enumerated().map { index, scenario in
            DiscardResult(scenario, samples: samples[index], baselineMedian: baselineMedian)
        }
        let loadAtEnd = try await BlockingWork.run {
            (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
                .joined(separator: " ")
        }
        let report = DiscardReport(
            machine: machine,
            server: "built-in StorageEmulator, .discard backing, in this process, \(baseURL.absoluteString)",
            payloadBytes: size,
            dataBytes: dataSize,
            smallUploads: options.smallCount,
            smallPayloadBytes: Int64(smallSize),
            runs: options.runs,
            urlSessionRuns: options.urlSessionRuns,
            baseline: SendfileBaseline.description,
            curl: useCurl ? CurlBaseline.commandTemplate + " (after a POST that opens the session)" : nil,
            peakRSSResetBetweenRuns: resetWorks,
            checksumCost: checksumCost,
            scenarios: results,
            scale: nil,
            targets: DiscardTargets.evaluate(results, scale: nil),
            loadAverageAtEnd: loadAtEnd,
            totalSeconds: Self.seconds(startedAt.duration(to: clock.now))
        )
        print(options.json ? try DiscardReportPrinter.json(report) : DiscardReportPrinter.table(report), terminator: "")
    }

    private static func storage(_ storages: [String: Storage], _ scenario: DiscardScenario) throws -> Storage {
        guard let storage = storages[scenario.name] else { throw BenchmarkError("no Storage for \(scenario.name)") }
        return storage
    }

    /// Throws unless an upload stored exactly the expected bytes, as far as size and CRC32C tell.
    static func check(_ size: Int64, _ crc32c: String?, against expected: Expected, what: String) throws {
        guard size == expected.size else {
            throw BenchmarkError("verification failed for \(what): size \(size), expected \(expected.size)")
        }
        guard crc32c == expected.crc32c else {
            throw BenchmarkError(
                "verification failed for \(what): crc32c \(crc32c ?? "missing"), expected \(expected.crc32c)")
        }
    }

    static func crc32c(_ data: Data) -> UInt32 {
        data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return 0 }
            return cs_crc32c_update(0, base, bytes.count)
        }
    }

    /// Base64 of the big-endian CRC32C, as Cloud Storage reports it.
    static func base64(_ crc: UInt32) -> String {
        Data([
            UInt8(truncatingIfNeeded: crc >> 24), UInt8(truncatingIfNeeded: crc >> 16),
            UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc),
        ]).base64EncodedString()
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
