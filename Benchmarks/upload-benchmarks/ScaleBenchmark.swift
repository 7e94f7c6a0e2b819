import CloudStorage
import FakeGCSServer
import Foundation
import StorageEmulator

/// `--discard --scale`: shows that a putFile's memory does not grow with the
/// object. For each size, `VmHWM` is reset (`/proc/self/clear_refs` `5`),
/// the idle `VmRSS` read, one putFile (native transport, CRC32C on) run, and
/// `VmHWM` read again.
struct ScaleBenchmark {
    let options: BenchmarkOptions
    let emulator: StorageEmulator
    let bucket: String

    func run(directory: URL, machine: MachineFacts) async throws -> DiscardReport {
        let clock = ContinuousClock()
        let startedAt = clock.now
        var settings = StorageConfiguration()
        settings.transport = .native
        try settings.retry.setMaxUploadTime(.seconds(30))
        try settings.retry.setInitialDelay(.milliseconds(200))
        if options.tls { settings.tls.additionalTrustRoots = BenchmarkTLS.trustRoots }
        let storage = Storage(bucket: bucket, endpoint: .gcs(emulator.baseURL), configuration: settings)
        // Opens the connection and loads the code paths once, so neither counts against the first size.
        _ = try await storage.reference(withPath: "warm-up").putDataAsync(Payload.bytes(size: 1 << 20, seed: 9))

        var results: [ScaleResult] = []
        var resetWorks = true
        for sizeMiB in [options.sizeMiB, options.scaleMiB] {
            let size = Int64(sizeMiB) << 20
            let file = directory.appendingPathComponent("scale-\(sizeMiB).bin")
            progress("writing the \(sizeMiB) MiB file (a repeated random 1 MiB block) …\n")
            let crc = try await BlockingWork.run { try Payload.writeRepeatingFile(at: file, size: size, seed: 7) }
            let expected = DiscardBenchmark.Expected(size: size, crc32c: DiscardBenchmark.base64(crc))
            var rates: [Double] = []
            var idle: Int64 = 0
            var peak: Int64 = 0
            var above: Int64 = 0
            let runs = sizeMiB > 1024 ? max(1, options.runs / 2) : options.runs
            for round in 1...runs {
                progress("scale \(sizeMiB) MiB, run \(round)/\(runs) … ")
                let (before, reset) = try await ResourceSnapshot.take(resetPeak: true, serverRoot: nil)
                if !reset { resetWorks = false }
                let started = clock.now
                let metadata = try await storage.reference(withPath: "scale-\(sizeMiB)-\(round)").putFileAsync(
                    from: file)
                let seconds = DiscardBenchmark.seconds(started.duration(to: clock.now))
                let (after, _) = try await ResourceSnapshot.take(resetPeak: false, serverRoot: nil)
                try DiscardBenchmark.check(
                    metadata.size, metadata.crc32c, against: expected, what: "scale \(sizeMiB) MiB")
                guard let rss = before.residentBytes, let hwm = after.peakResidentBytes else {
                    throw BenchmarkError("/proc/self/status has no VmRSS or VmHWM")
                }
                rates.append(Double(size) / seconds / 1e6)
                idle = max(idle, rss)
                peak = max(peak, hwm)
                above = max(above, hwm - rss)
                progress(
                    String(
                        format: "%.0f MB/s, peak %.1f MiB above idle\n", rates.last ?? 0, Double(hwm - rss) / 1_048_576)
                )
            }
            try? FileManager.default.removeItem(at: file)
            results.append(
                ScaleResult(
                    sizeBytes: size, runs: runs, medianMBps: Statistics.median(rates), idleRSSBytes: idle,
                    peakRSSBytes: peak, peakAboveIdleBytes: above))
        }
        if !resetWorks {
            throw BenchmarkError("/proc/self/clear_refs could not be written: peaks would be lifetime peaks")
        }
        return DiscardReport(
            machine: machine,
            servers: [
                DiscardServerInfo(
                    id: BenchmarkServerKind.discard.rawValue,
                    description:
                        "built-in StorageEmulator, .discard backing, in this process, \(emulator.baseURL.absoluteString)"
                        + (options.tls ? " (TLS, Tests/TLSTestCertificates/localhost.pem)" : ""),
                    sendfileBaselineMedianMBps: nil,
                    seconds: DiscardBenchmark.seconds(startedAt.duration(to: clock.now)))
            ],
            skipped: [],
            pythonClient: nil,
            payloadBytes: Int64(options.sizeMiB) << 20,
            dataBytes: 0,
            smallUploads: 0,
            smallPayloadBytes: 0,
            runs: options.runs,
            urlSessionRuns: 0,
            serverRuns: 0,
            serverURLSessionRuns: 0,
            baseline: "none",
            ratioBaseline: "none",
            curl: nil,
            peakRSSResetBetweenRuns: resetWorks,
            checksumCost: nil,
            scenarios: [],
            scale: results,
            targets: options.tls
                ? DiscardTargets.evaluateTLS([], scale: results).filter { $0.target.contains("RSS") }
                : DiscardTargets.evaluate([], scale: results),
            loadAverageAtEnd: nil,
            totalSeconds: DiscardBenchmark.seconds(startedAt.duration(to: clock.now))
        )
    }
}
