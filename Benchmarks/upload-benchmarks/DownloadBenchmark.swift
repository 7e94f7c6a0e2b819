import CCRC32C
import CloudStorage
import FakeGCSServer
import Foundation
import StorageEmulator

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `--download`: `StorageReference.writeAsync(toFile:)` per transport, side by
/// side with `curl -s -o <file> <media URL>`, against the built-in emulator
/// with a `.directory` backing in this process. The emulator streams the
/// object from disk with `pread`, so nothing holds the object in this
/// process's memory and peak RSS measures the SDK's download path.
struct DownloadBenchmark {
    let options: BenchmarkOptions
    let curl: String?

    /// One timed download.
    struct Sample: Sendable {
        var seconds: Double
        var bytes: Int64
        /// User + system CPU seconds of this process (SDK and in-process emulator).
        var processCPU: Double
        /// User + system CPU seconds of curl; 0 for the SDK.
        var childCPU: Double
        /// `VmHWM` after the run minus `VmRSS` before it (reset before); nil for curl.
        var peakAboveIdleBytes: Int64?
        /// `VmRSS` just before the run.
        var idleBytes: Int64?

        var megabytesPerSecond: Double { Double(bytes) / seconds / 1e6 }
    }

    /// What the report says about one scenario.
    struct Result: Sendable, Codable {
        var scenario: String
        var objectBytes: Int64
        var runs: Int
        var medianMBps: Double
        var minMBps: Double
        var maxMBps: Double
        var medianSeconds: Double
        /// Median MB/s divided by curl's median for the same object; nil without curl.
        var ratioToCurl: Double?
        /// Mean user+sys CPU seconds of this process per run (SDK + in-process emulator).
        var processCPUSecondsPerRun: Double
        /// Mean user+sys CPU seconds of curl per run; nil for the SDK.
        var curlCPUSecondsPerRun: Double?
        /// The largest `VmHWM - VmRSS before` over the runs; nil for curl.
        var peakRSSAboveIdleBytes: Int64?
        /// The largest `VmRSS` before a run.
        var idleRSSBytes: Int64?
        /// Every downloaded file's size and CRC32C equal the source's.
        var verified: Bool

        init(scenario: String, objectBytes: Int64, isCurl: Bool, samples: [Sample], curlMedian: Double?) {
            let rates = samples.map(\.megabytesPerSecond)
            self.scenario = scenario
            self.objectBytes = objectBytes
            runs = samples.count
            medianMBps = Statistics.median(rates)
            minMBps = rates.min() ?? 0
            maxMBps = rates.max() ?? 0
            medianSeconds = Statistics.median(samples.map(\.seconds))
            let median = medianMBps
            ratioToCurl = curlMedian.flatMap { $0 > 0 ? median / $0 : nil }
            processCPUSecondsPerRun = Statistics.mean(samples.map(\.processCPU))
            curlCPUSecondsPerRun = isCurl ? Statistics.mean(samples.map(\.childCPU)) : nil
            peakRSSAboveIdleBytes = samples.compactMap(\.peakAboveIdleBytes).max()
            idleRSSBytes = samples.compactMap(\.idleBytes).max()
            verified = true
        }
    }

    struct Report: Sendable, Codable {
        var machine: MachineFacts
        var server: String
        var runs: Int
        var curl: String?
        /// Rows this run could not measure, and why.
        var skipped: [String]
        var peakRSSResetBetweenRuns: Bool
        var scenarios: [Result]
        var loadAverageAtEnd: String?
        var totalSeconds: Double
    }

    /// A scenario: who downloads, and how often.
    private struct Scenario {
        var name: String
        /// nil for curl.
        var transport: String?
        var runs: Int
        /// curl only: after curl exits, `sync --data <file>` (fsync), as `writeAsync` fsyncs its
        /// temporary file before the atomic rename; timed with the download.
        var syncsFile = false
        /// Consumes `dataStream()` chunk by chunk instead of writing a file.
        var streams = false
    }

    func run(directory: URL) async throws {
        let clock = ContinuousClock()
        let startedAt = clock.now
        let machine = try await MachineFacts.collect(curl: curl)
        let objects = directory.appendingPathComponent("emulator", isDirectory: true)
        try FileManager.default.createDirectory(at: objects, withIntermediateDirectories: true)
        var configuration = StorageEmulator.Configuration()
        configuration.backing = .directory(objects)
        if options.tls { configuration.tls = BenchmarkTLS.identity }
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let bucket = "bench"
        try emulator.createBucket(bucket)
        let baseURL = emulator.baseURL

        var transports = options.transport == "both" ? ["native", "urlsession"] : [options.transport]
        var skipped: [String] = []
        if options.tls, let reason = options.urlSessionTLSUnavailable, transports.contains("urlsession") {
            transports.removeAll { $0 == "urlsession" }
            skipped.append("URLSession over https (it cannot trust the test CA here): \(reason)")
            guard !transports.isEmpty else { throw BenchmarkError("nothing to run: \(skipped[0])") }
        }
        var storages: [String: Storage] = [:]
        for transport in transports {
            var settings = StorageConfiguration()
            settings.transport = transport == "urlsession" ? .urlSession : .native
            try settings.retry.setMaxUploadTime(.seconds(30))
            try settings.retry.setInitialDelay(.milliseconds(200))
            if options.tls { settings.tls.additionalTrustRoots = BenchmarkTLS.trustRoots }
            storages[transport] = Storage(bucket: bucket, endpoint: .gcs(baseURL), configuration: settings)
        }
        let useCurl = curl != nil && !options.noCurl

        // Opens each transport's connections and loads its code paths, so the first timed run does not pay.
        let warmUp = Payload.bytes(size: 1 << 20, seed: 9)
        let uploader = storages[transports[0]]!
        _ = try await uploader.reference(withPath: "warm-up").putDataAsync(warmUp)
        for transport in transports {
            let target = directory.appendingPathComponent("warm-up-\(transport).bin")
            _ = try await storages[transport]!.reference(withPath: "warm-up").writeAsync(toFile: target)
            try? FileManager.default.removeItem(at: target)
        }

        // Coreutils sync(1) with a file name fsyncs that file (--data: fdatasync).
        let sync = ProcessRunner.which("sync")
        var syncPath: String?
        var sizes = [options.sizeMiB]
        if options.scale { sizes.append(options.scaleMiB) }
        var results: [Result] = []
        var resetWorks = true
        for (position, sizeMiB) in sizes.enumerated() {
            let size = Int64(sizeMiB) << 20
            let source = directory.appendingPathComponent("source-\(sizeMiB).bin")
            progress("writing the \(sizeMiB) MiB source file and uploading it once with putFile …\n")
            let crc = try await BlockingWork.run { try Payload.writeRepeatingFile(at: source, size: size, seed: 5) }
            let objectName = "download-\(sizeMiB)"
            let reference = uploader.reference(withPath: objectName)
            let metadata = try await reference.putFileAsync(from: source)
            let expected = DiscardBenchmark.Expected(size: size, crc32c: DiscardBenchmark.base64(crc))
            try DiscardBenchmark.check(metadata.size, metadata.crc32c, against: expected, what: "the upload")
            // Only the downloads' copies are needed from here on.
            try? FileManager.default.removeItem(at: source)
            let mediaURL = try await reference.downloadURL()

            let isScaleSize = position > 0
            let runs = isScaleSize ? max(1, options.runs / 2) : options.runs
            var scenarios: [Scenario] = []
            if useCurl && !isScaleSize {
                scenarios.append(Scenario(name: "curl-baseline", transport: nil, runs: runs))
                if let sync {
                    scenarios.append(Scenario(name: "curl+fsync", transport: nil, runs: runs, syncsFile: true))
                    syncPath = sync
                }
            }
            for transport in transports where !isScaleSize || transport == "native" {
                scenarios.append(Scenario(name: "writeAsync/\(transport)", transport: transport, runs: runs))
                scenarios.append(
                    Scenario(name: "dataStream/\(transport)", transport: transport, runs: runs, streams: true))
            }

            var samples: [[Sample]] = Array(repeating: [], count: scenarios.count)
            for round in 1...runs {
                for (index, scenario) in scenarios.enumerated() {
                    progress("\(sizeMiB) MiB, round \(round)/\(runs): \(scenario.name) … ")
                    let target = directory.appendingPathComponent(
                        "downloaded-\(sizeMiB)-\(index)-r\(round).bin")
                    let (before, reset) = try await ResourceSnapshot.take(resetPeak: true, serverRoot: nil)
                    if !reset { resetWorks = false }
                    let started = clock.now
                    var childCPU = 0.0
                    var streamed: (size: Int64, crc: UInt32)?
                    if let transport = scenario.transport, scenario.streams {
                        var size: Int64 = 0
                        var crc: UInt32 = 0
                        for try await chunk in storages[transport]!.reference(withPath: objectName).dataStream() {
                            crc = chunk.withUnsafeBytes { cs_crc32c_update(crc, $0.baseAddress, $0.count) }
                            size += Int64(chunk.count)
                        }
                        streamed = (size, crc)
                    } else if let transport = scenario.transport {
                        _ = try await storages[transport]!.reference(withPath: objectName).writeAsync(toFile: target)
                    } else {
                        let trust = options.tls ? ["--cacert", BenchmarkTLS.caFile] : []
                        let output = try await ProcessRunner.run(
                            curl!, trust + ["-s", "--max-time", "600", "-o", target.path, mediaURL.absoluteString])
                        guard output.status == 0 else {
                            throw BenchmarkError("curl's download failed (exit \(output.status)): \(output.errorText)")
                        }
                        childCPU = output.cpuSeconds
                        if scenario.syncsFile, let syncPath {
                            let synced = try await ProcessRunner.run(syncPath, ["--data", target.path])
                            guard synced.status == 0 else {
                                throw BenchmarkError("sync --data failed (exit \(synced.status)): \(synced.errorText)")
                            }
                            childCPU += synced.cpuSeconds
                        }
                    }
                    let seconds = DiscardBenchmark.seconds(started.duration(to: clock.now))
                    let (after, _) = try await ResourceSnapshot.take(resetPeak: false, serverRoot: nil)
                    let facts: (size: Int64, crc: UInt32)
                    if let streamed {
                        facts = streamed
                    } else {
                        facts = try await DedicatedThread.run(name: "verify") { try Self.sizeAndCRC(of: target) }
                    }
                    try? FileManager.default.removeItem(at: target)
                    try DiscardBenchmark.check(
                        facts.size, DiscardBenchmark.base64(facts.crc), against: expected,
                        what: "\(scenario.name) run \(round) of \(sizeMiB) MiB")
                    let isSDK = scenario.transport != nil
                    let sample = Sample(
                        seconds: seconds,
                        bytes: size,
                        processCPU: after.selfCPU - before.selfCPU,
                        childCPU: childCPU,
                        peakAboveIdleBytes: isSDK
                            ? after.peakResidentBytes.flatMap { peak in before.residentBytes.map { peak - $0 } } : nil,
                        idleBytes: isSDK ? before.residentBytes : nil
                    )
                    samples[index].append(sample)
                    progress(
                        String(format: "%.0f MB/s", sample.megabytesPerSecond)
                            + (sample.peakAboveIdleBytes.map {
                                String(format: ", peak %.1f MiB above idle", Double($0) / 1_048_576)
                            } ?? "") + ", verified\n")
                }
            }
            let curlMedian =
                scenarios.first?.transport == nil && !samples[0].isEmpty
                ? Statistics.median(samples[0].map(\.megabytesPerSecond)) : nil
            for (index, scenario) in scenarios.enumerated() {
                results.append(
                    Result(
                        scenario: scenario.name, objectBytes: size, isCurl: scenario.transport == nil,
                        samples: samples[index], curlMedian: curlMedian))
            }
            try await reference.delete()
        }
        if !resetWorks {
            throw BenchmarkError("/proc/self/clear_refs could not be written: peaks would be lifetime peaks")
        }

        let loadAtEnd = try await BlockingWork.run {
            (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3)
                .joined(separator: " ")
        }
        let report = Report(
            machine: machine,
            server: "built-in StorageEmulator, .directory backing (temporary directory), in this process, "
                + baseURL.absoluteString + (options.tls ? " (TLS, Tests/TLSTestCertificates/localhost.pem)" : ""),
            runs: options.runs,
            curl: useCurl
                ? "curl -s \(options.tls ? "--cacert Tests/TLSTestCertificates/test-ca.pem " : "")-o <file> <media URL> (\(machine.curlVersion ?? "curl"))"
                : nil,
            skipped: skipped,
            peakRSSResetBetweenRuns: resetWorks,
            scenarios: results,
            loadAverageAtEnd: loadAtEnd,
            totalSeconds: DiscardBenchmark.seconds(startedAt.duration(to: clock.now))
        )
        if options.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(Self.table(report), terminator: "")
        }
    }

    /// The file's size and CRC32C, read with `pread` in 1 MiB blocks. Blocks.
    private static func sizeAndCRC(of file: URL) throws -> (size: Int64, crc: UInt32) {
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BenchmarkError("cannot open \(file.path): errno \(errno)") }
        defer { close(descriptor) }
        let block = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: block, alignment: 64)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        var crc: UInt32 = 0
        while true {
            let count = pread(descriptor, buffer, block, off_t(offset))
            if count < 0 {
                if errno == EINTR { continue }
                throw BenchmarkError("cannot read \(file.path): errno \(errno)")
            }
            if count == 0 { return (offset, crc) }
            crc = cs_crc32c_update(crc, buffer, count)
            offset += Int64(count)
        }
    }

    static func table(_ report: Report) -> String {
        let machine = report.machine
        func mib(_ bytes: Int64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        var lines = [
            "CloudStorage download benchmarks (--download)",
            "machine: \(machine.activeCores) of \(machine.cores) cores active"
                + (machine.cpuModel.map { ", \($0)" } ?? "")
                + String(format: ", %.1f GiB RAM", machine.memoryGiB),
            "os: \(machine.operatingSystem); built with \(machine.swiftCompiler)",
            "load average (1/5/15 min): \(machine.loadAverageAtStart ?? "?") at start, \(report.loadAverageAtEnd ?? "?") at end",
            "server: \(report.server)",
            "baseline: \(report.curl ?? "none (curl missing or --no-curl)")",
            "runs: \(report.runs) per scenario (larger --scale object: max(1, runs/2), native only), rounds interleaved",
        ]
        lines += report.skipped.map { "skipped: \($0)" }
        lines.append("")
        let headers = [
            "scenario", "object", "runs", "MB/s med", "min..max", "x curl", "s/run", "CPU s/run", "idle RSS",
            "peak-idle",
        ]
        let rows = report.scenarios.map { result -> [String] in
            [
                result.scenario,
                "\(result.objectBytes >> 20) MiB",
                String(result.runs),
                String(format: "%.0f", result.medianMBps),
                String(format: "%.0f..%.0f", result.minMBps, result.maxMBps),
                result.ratioToCurl.map { String(format: "%.2f", $0) } ?? "-",
                String(format: "%.3f", result.medianSeconds),
                result.curlCPUSecondsPerRun.map {
                    String(format: "%.2f+%.2f", $0, result.processCPUSecondsPerRun)
                } ?? String(format: "%.2f", result.processCPUSecondsPerRun),
                result.idleRSSBytes.map(mib) ?? "-",
                result.peakRSSAboveIdleBytes.map(mib) ?? "-",
            ]
        }
        lines += DiscardReportPrinter.render(headers, rows)
        lines.append("")
        lines.append("notes:")
        lines.append("  MB/s = 10^6 object bytes per wall second (request to file in place), median (min..max).")
        lines.append(
            "  writeAsync fsyncs its temporary file before renaming it into place; curl -o does not. curl+fsync runs"
        )
        lines.append(
            "    `sync --data <file>` after curl, inside the timing, to compare like with like (x curl is to plain curl)."
        )
        lines.append(
            "  CPU s/run = user+sys of this whole process: the SDK plus the in-process emulator serving the bytes;")
        lines.append(
            "    for curl it is curl's + this process's (the emulator alone), so SDK CPU ~= its figure - curl's second term."
        )
        lines.append(
            "  idle RSS = VmRSS just before the run; peak-idle = VmHWM after the run - idle, VmHWM reset by clear_refs 5"
                + (report.peakRSSResetBetweenRuns ? "" : " (reset FAILED: lifetime peak)") + ";")
        lines.append(
            "    pages already resident before the run (malloc arenas kept from the warm-up and the upload) do not count;"
        )
        lines.append(
            "    idle RSS itself bounds what the process holds. curl is a separate process: no RSS figure (its ru_maxrss"
        )
        lines.append(
            "    on Linux inherits this process's high-water mark through posix_spawn, so it is not reported).")
        lines.append(
            "  every downloaded file is verified after the run: size and CRC32C equal the source file's (the SDK also")
        lines.append("    checks the server's CRC32C itself); each file is deleted after verification.")
        lines.append(
            "  dataStream rows iterate dataStream() and fold each chunk into a CRC32C (checked against the source's)")
        lines.append("    without keeping or writing it: no file, no fsync, so they bound what the SDK itself costs.")
        lines.append(String(format: "total wall time: %.0f s", report.totalSeconds))
        return lines.joined(separator: "\n") + "\n"
    }
}
