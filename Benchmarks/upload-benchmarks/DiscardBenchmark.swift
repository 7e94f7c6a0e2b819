import CCRC32C
import CloudStorage
import FakeGCSServer
import Foundation
import StorageEmulator

/// `--discard`: every upload flavour per transport, side by side with a raw
/// `sendfile` PUT (and curl) of the same bytes to the same server, against
/// up to three servers one after another: the built-in emulator in discard
/// mode (every flavour, the curl baseline and the Python client), the
/// built-in emulator with memory backing, and fake-gcs-server (a subset
/// each). Each server gets its own sendfile baseline, measured in its own
/// block, so ratios are per server.
struct DiscardBenchmark {
    let options: BenchmarkOptions
    let curl: String?

    /// What an upload must have stored.
    struct Expected: Sendable {
        var size: Int64
        var crc32c: String
    }

    /// The payloads every server's block uploads, written and checksummed once.
    struct Payloads: Sendable {
        /// The putFile payload.
        var file: URL
        var fileSize: Int64
        /// The putData payload.
        var data: Data
        /// One small upload's payload.
        var small: Data
        var expectedFile: Expected
        var expectedData: Expected
        var expectedSmall: Expected
    }

    /// What one server's block measured.
    private struct Block {
        var results: [DiscardResult]
        var baselineMedian: Double
        var peakResetWorked: Bool
        /// The Python client's library and CRC32C implementation, when it ran.
        var pythonLibrary: String?
    }

    private static let bucket = "bench"

    /// Runs the whole benchmark (or `--scale`) and prints the report on stdout.
    ///
    /// - Parameter directory: A scratch directory for the payload files.
    /// - Throws: ``BenchmarkError`` on any failure or verification mismatch. A server or client that
    ///   cannot be installed (fake-gcs-server, the Python client) is skipped with a note instead.
    func run(directory: URL) async throws {
        let clock = ContinuousClock()
        let startedAt = clock.now
        let machine = try await MachineFacts.collect(curl: curl)

        if options.scale {
            var configuration = StorageEmulator.Configuration()
            configuration.backing = .discard
            if options.tls { configuration.tls = BenchmarkTLS.identity }
            let emulator = try StorageEmulator.start(configuration)
            defer { emulator.stop() }
            try emulator.createBucket(Self.bucket)
            let report = try await ScaleBenchmark(options: options, emulator: emulator, bucket: Self.bucket)
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
        let payloads = Payloads(
            file: file, fileSize: size, data: data, small: small,
            expectedFile: Expected(size: size, crc32c: Self.base64(fileCRC)),
            expectedData: Expected(size: dataSize, crc32c: Self.base64(Self.crc32c(data))),
            expectedSmall: Expected(size: Int64(smallSize), crc32c: Self.base64(Self.crc32c(small))))

        progress("measuring the CRC32C pre-pass on its own …\n")
        let checksumCost = try await ChecksumCost.measure(file: file, size: size)

        let useCurl = curl != nil && !options.noCurl
        var skipped: [String] = []
        var python: PythonClient?
        var pythonSkipped: String?
        var planned = DiscardScenario.all(options, curl: useCurl, python: !options.noPython)
        if options.tls, let reason = options.urlSessionTLSUnavailable,
            planned.contains(where: { $0.transport == "urlsession" })
        {
            planned.removeAll { $0.transport == "urlsession" }
            skipped.append("URLSession over https (it cannot trust the test CA here): \(reason)")
        }
        if planned.contains(where: { $0.kind == .pythonClient }) {
            progress("preparing the Python google-cloud-storage client …\n")
            switch await PythonClient.prepare() {
            case .success(let client):
                python = client
            case .failure(let error):
                pythonSkipped = "the Python client is unavailable (see skipped)"
                skipped.append("python-gcs (\(PythonClient.requirement)): \(error.description)")
                progress("skipping the Python client: \(error.description)\n")
            }
        }
        let scenarios = planned.filter { $0.kind != .pythonClient || python != nil }

        var results: [DiscardResult] = []
        var servers: [DiscardServerInfo] = []
        var resetWorks = true
        var pythonLibrary: String?
        for kind in options.servers {
            let block = scenarios.filter { $0.server == kind }
            guard !block.isEmpty else { continue }
            let blockStart = clock.now
            progress("starting the \(kind.rawValue) server …\n")
            let server: BenchmarkServer
            do {
                server = try await BenchmarkServer.start(kind, bucket: Self.bucket, tls: options.tls)
            } catch let error where kind == .fakeGCS {
                // Installing it needs pip and the network; without them the other servers still count.
                let reason = String(String(describing: error).prefix(600))
                skipped.append("fake-gcs-server: \(reason)")
                progress("skipping fake-gcs-server: \(reason)\n")
                continue
            }
            let measured: Block
            do {
                measured = try await runBlock(block, on: server, payloads: payloads, python: python, curl: useCurl)
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
            results += measured.results
            resetWorks = resetWorks && measured.peakResetWorked
            pythonLibrary = pythonLibrary ?? measured.pythonLibrary
            servers.append(
                DiscardServerInfo(
                    id: kind.rawValue, description: server.description,
                    sendfileBaselineMedianMBps: measured.baselineMedian,
                    seconds: Self.seconds(blockStart.duration(to: clock.now))))
        }

        let loadAtEnd = try await BlockingWork.run {
            (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
                .joined(separator: " ")
        }
        let report = DiscardReport(
            machine: machine,
            servers: servers,
            skipped: skipped,
            pythonClient: pythonLibrary.map {
                "\($0); blob.upload_from_filename of the putFile payload to the discard emulator, STORAGE_EMULATOR_HOST, anonymous credentials, checksum=crc32c"
                    + (options.tls ? ", REQUESTS_CA_BUNDLE=test-ca.pem" : "")
            },
            payloadBytes: size,
            dataBytes: dataSize,
            smallUploads: options.smallCount,
            smallPayloadBytes: Int64(smallSize),
            runs: options.runs,
            urlSessionRuns: options.urlSessionRuns,
            serverRuns: options.serverRuns,
            serverURLSessionRuns: options.serverURLSessionRuns,
            baseline: options.tls
                ? "curl-baseline over https (no sendfile baseline: it cannot speak TLS)" : SendfileBaseline.description,
            ratioBaseline: options.tls ? "curl" : "sendfile",
            curl: useCurl && options.servers.contains(.discard)
                ? (options.tls ? CurlBaseline.tlsCommandTemplate : CurlBaseline.commandTemplate)
                    + " (after a POST that opens the session; discard emulator only)" : nil,
            peakRSSResetBetweenRuns: resetWorks,
            checksumCost: checksumCost,
            scenarios: results,
            scale: nil,
            targets: options.tls
                ? DiscardTargets.evaluateTLS(results, scale: nil)
                : DiscardTargets.evaluate(results, scale: nil, pythonSkipped: pythonSkipped),
            loadAverageAtEnd: loadAtEnd,
            totalSeconds: Self.seconds(startedAt.duration(to: clock.now))
        )
        print(options.json ? try DiscardReportPrinter.json(report) : DiscardReportPrinter.table(report), terminator: "")
    }

    /// Times one server's scenarios, round by round, and verifies every upload.
    ///
    /// Objects a storing server keeps are deleted after each run, outside the timing, so that the
    /// memory-backed emulator and fake-gcs-server never hold more than one run's objects.
    ///
    /// - Parameters:
    ///   - scenarios: The server's scenarios; the first is its sendfile baseline.
    ///   - server: The running server.
    ///   - payloads: What to upload and what must be stored.
    ///   - python: The Python client, when its scenarios are among `scenarios`.
    ///   - curl: Whether the curl baseline is among `scenarios`.
    /// - Returns: The results, with ratios to this server's sendfile baseline.
    /// - Throws: ``BenchmarkError`` on any failure or verification mismatch.
    private func runBlock(
        _ scenarios: [DiscardScenario], on server: BenchmarkServer, payloads: Payloads, python: PythonClient?,
        curl useCurl: Bool
    ) async throws -> Block {
        let clock = ContinuousClock()
        let bucket = Self.bucket
        let baseURL = server.baseURL
        var storages: [String: Storage] = [:]
        for scenario in scenarios where !scenario.isBaseline && scenario.kind != .pythonClient {
            var settings = StorageConfiguration()
            settings.transport = scenario.choice
            settings.verifiesChecksums = scenario.checksums
            try settings.uploads.setChunkSize(scenario.chunkSize)
            // Fail a broken run quickly instead of retrying for ten minutes.
            try settings.retry.setMaxUploadTime(.seconds(30))
            try settings.retry.setInitialDelay(.milliseconds(200))
            if options.tls { settings.tls.additionalTrustRoots = BenchmarkTLS.trustRoots }
            storages[scenario.name] = Storage(bucket: bucket, endpoint: .gcs(baseURL), configuration: settings)
        }
        var janitorSettings = StorageConfiguration()
        janitorSettings.transport = .native
        if options.tls { janitorSettings.tls.additionalTrustRoots = BenchmarkTLS.trustRoots }
        let janitor = Storage(bucket: bucket, endpoint: .gcs(baseURL), configuration: janitorSettings)
        let small = payloads.small
        // Opens each transport's connections, so the first timed run does not pay for it.
        for transport in Set(scenarios.compactMap(\.transport)).sorted() {
            guard let storage = storages.first(where: { $0.key.contains("/\(transport)/") })?.value else { continue }
            var names: [String] = []
            for index in 0..<8 {
                let name = "warm-up-\(transport)-\(index)"
                let metadata = try await storage.reference(withPath: name).putDataAsync(small)
                try Self.check(
                    metadata.size, metadata.crc32c, against: payloads.expectedSmall, what: "the \(transport) warm-up")
                names.append(name)
            }
            if server.kind.storesObjects { try await Self.delete(names, with: janitor) }
        }

        let sendfile = SendfileBaseline(host: baseURL.host ?? "127.0.0.1", port: server.port, bucket: bucket)
        let caFile = options.tls ? BenchmarkTLS.caFile : nil
        let curlBaseline =
            useCurl ? curl.map { CurlBaseline(curl: $0, baseURL: baseURL, bucket: bucket, caFile: caFile) } : nil
        let file = payloads.file
        let size = payloads.fileSize
        var samples: [[DiscardSample]] = Array(repeating: [], count: scenarios.count)
        var chunkUsed: [String: Int64] = [:]
        var pythonLibrary: String?
        var resetWorks = true
        let rounds = scenarios.map(\.runs).max() ?? 0
        for round in 1...max(1, rounds) {
            for (index, scenario) in scenarios.enumerated() where scenario.runs >= round {
                progress("round \(round)/\(scenario.runs): \(scenario.name) … ")
                let (before, reset) = try await ResourceSnapshot.take(resetPeak: true, serverRoot: server.processRoot)
                if !reset { resetWorks = false }
                let started = clock.now
                var childCPU = 0.0
                var bytes: Int64 = 0
                var uploads = 1
                // Measured by the Python script around the upload alone, when it ran.
                var reportedSeconds: Double?
                var stored: [String] = []
                // The most bytes of a putStream's elements alive at once.
                var liveElementsPeak: Int64?
                let name =
                    "\(scenario.name.replacingOccurrences(of: "/", with: "-").replacingOccurrences(of: "@", with: "-at-"))-r\(round)"
                switch scenario.kind {
                case .sendfileBaseline:
                    let facts = try await sendfile.upload(file: file, size: size, object: name)
                    try Self.check(facts.size, facts.crc32c, against: payloads.expectedFile, what: name)
                    bytes = size
                    stored = [name]
                case .curlBaseline:
                    guard let curlBaseline else { continue }
                    let result = try await curlBaseline.upload(file: file, size: size, object: name)
                    try Self.check(result.facts.size, result.facts.crc32c, against: payloads.expectedFile, what: name)
                    childCPU = result.cpuSeconds
                    bytes = size
                    stored = [name]
                case .pythonClient:
                    guard let python else { continue }
                    let upload = try await python.upload(
                        file: file, object: name, chunkSize: scenario.chunkSize, expected: payloads.expectedFile,
                        baseURL: baseURL, bucket: bucket, caFile: caFile)
                    try Self.check(upload.size, upload.crc32c, against: payloads.expectedFile, what: name)
                    childCPU = upload.cpuSeconds
                    reportedSeconds = upload.seconds
                    chunkUsed[scenario.name] = upload.chunkBytes
                    pythonLibrary = "\(upload.library) (google-crc32c: \(upload.crc32cImplementation))"
                    bytes = size
                    stored = [name, name + "-warm-up"]
                case .putFile:
                    let storage = try Self.storage(storages, scenario)
                    let metadata = try await storage.reference(withPath: name).putFileAsync(from: file)
                    try Self.check(metadata.size, metadata.crc32c, against: payloads.expectedFile, what: name)
                    bytes = size
                    stored = [name]
                case .putStream(let sizeKnown):
                    let storage = try Self.storage(storages, scenario)
                    let live = LiveBytes()
                    let elements = FileBlocks(url: file, blockSize: DiscardScenario.streamElementBytes, live: live)
                    let metadata = try await storage.reference(withPath: name)
                        .putStreamAsync(elements, size: sizeKnown ? size : nil)
                    try Self.check(metadata.size, metadata.crc32c, against: payloads.expectedFile, what: name)
                    bytes = size
                    stored = [name]
                    liveElementsPeak = live.peak
                case .putData:
                    let storage = try Self.storage(storages, scenario)
                    let metadata = try await storage.reference(withPath: name).putDataAsync(payloads.data)
                    try Self.check(metadata.size, metadata.crc32c, against: payloads.expectedData, what: name)
                    bytes = payloads.expectedData.size
                    stored = [name]
                case .smallPutData:
                    let storage = try Self.storage(storages, scenario)
                    let count = options.smallCount
                    let expectedSmall = payloads.expectedSmall
                    try await withThrowingTaskGroup(of: StorageMetadata.self) { group in
                        for index in 0..<count {
                            let reference = storage.reference(withPath: "small-\(index)")
                            group.addTask { try await reference.putDataAsync(small) }
                        }
                        for try await metadata in group {
                            try Self.check(metadata.size, metadata.crc32c, against: expectedSmall, what: name)
                        }
                    }
                    bytes = Int64(count) * Int64(small.count)
                    uploads = count
                    stored = (0..<count).map { "small-\($0)" }
                }
                let elapsed = reportedSeconds ?? Self.seconds(started.duration(to: clock.now))
                let (after, _) = try await ResourceSnapshot.take(resetPeak: false, serverRoot: server.processRoot)
                let sample = DiscardSample(
                    seconds: elapsed,
                    bytes: bytes,
                    uploads: uploads,
                    cpuSeconds: after.selfCPU - before.selfCPU + childCPU,
                    serverCPUSeconds: after.serverCPU.flatMap { end in before.serverCPU.map { end - $0 } },
                    peakResidentBytes: after.peakResidentBytes,
                    residentGrowthBytes: after.peakResidentBytes.flatMap { peak in
                        before.residentBytes.map { peak - $0 }
                    },
                    liveElementsPeakBytes: liveElementsPeak
                )
                samples[index].append(sample)
                progress(
                    String(format: "%.0f MB/s", sample.megabytesPerSecond)
                        + (scenario.countsUploads
                            ? String(format: ", %.0f uploads/s\n", sample.uploadsPerSecond) : "\n"))
                if server.kind.storesObjects { try await Self.delete(stored, with: janitor) }
            }
        }

        // Over TLS there is no sendfile baseline; ratios are to curl.
        let baselineKind: DiscardScenario.Kind = options.tls ? .curlBaseline : .sendfileBaseline
        let baselineMedian =
            scenarios.firstIndex { $0.kind == baselineKind }.map {
                Statistics.median(samples[$0].map(\.megabytesPerSecond))
            } ?? 0
        let results = scenarios.enumerated().map { index, scenario in
            DiscardResult(
                scenario, samples: samples[index], baselineMedian: baselineMedian, chunkSize: chunkUsed[scenario.name])
        }
        return Block(
            results: results, baselineMedian: baselineMedian, peakResetWorked: resetWorks,
            pythonLibrary: pythonLibrary)
    }

    /// Deletes objects, at most 32 at a time; objects already gone are fine.
    ///
    /// - Parameters:
    ///   - names: The object names.
    ///   - storage: A handle on the server's bucket.
    /// - Throws: The SDK's error for anything but a missing object.
    private static func delete(_ names: [String], with storage: Storage) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var pending = names[...]
            func deleteNext() -> Bool {
                guard let name = pending.popFirst() else { return false }
                let reference = storage.reference(withPath: name)
                group.addTask {
                    do {
                        try await reference.delete()
                    } catch let error as StorageError where error.code == .objectNotFound {
                        // The warm-up object of a failed Python run, say: nothing to free.
                    }
                }
                return true
            }
            for _ in 0..<32 {
                guard deleteNext() else { break }
            }
            while try await group.next() != nil { _ = deleteNext() }
        }
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
