import Foundation

/// The measurements of one timed `--discard` run.
struct DiscardSample: Sendable {
    var seconds: Double
    var bytes: Int64
    var uploads: Int
    /// User + system seconds of this process (the SDK *and* an in-process emulator), plus curl's for curl
    /// and the Python process's (during its upload) for the Python client.
    var cpuSeconds: Double
    /// User + system seconds of a server in a process of its own (fake-gcs-server); nil for one in this process.
    var serverCPUSeconds: Double?
    /// `VmHWM` after the run, reset to `VmRSS` just before it.
    var peakResidentBytes: Int64?
    /// `VmHWM` after the run minus `VmRSS` just before it.
    var residentGrowthBytes: Int64?
    /// putStream: the most bytes of the sequence's elements referenced at once (by the SDK).
    var liveElementsPeakBytes: Int64?

    var megabytesPerSecond: Double { Double(bytes) / seconds / 1_000_000 }
    var uploadsPerSecond: Double { Double(uploads) / seconds }
}

/// What the report says about one `--discard` scenario.
struct DiscardResult: Sendable, Codable {
    var scenario: String
    /// `discard`, `memory` or `fake-gcs`.
    var server: String
    var transport: String?
    var checksums: Bool
    var chunkSizeBytes: Int64?
    /// A putStream scenario's element size; nil for the others.
    var streamElementBytes: Int64?
    /// Whether a putStream scenario gave the SDK the size; nil for the others.
    var streamSizeKnown: Bool?
    /// putStream: the most bytes of its elements alive at once, largest over the runs: what the
    /// SDK kept referenced, without what the allocator keeps after a free (which peak RSS includes).
    var streamLiveElementsPeakBytes: Int64?
    var bytesPerRun: Int64
    var runs: Int
    var medianMBps: Double
    var minMBps: Double
    var maxMBps: Double
    var medianSeconds: Double
    /// Median MB/s over the median MB/s of the sendfile baseline to the same server (same run).
    var ratioToSendfile: Double?
    var uploadsPerSecond: Double?
    var minUploadsPerSecond: Double?
    var maxUploadsPerSecond: Double?
    var cpuSecondsPerRun: Double
    /// Mean CPU seconds per run of a server in its own process (fake-gcs-server); nil when in this
    /// process, whose CPU seconds then include the server's.
    var serverCPUSecondsPerRun: Double?
    var peakRSSBytes: Int64?
    var rssDeltaBytes: Int64?

    /// Summarizes the samples of one scenario.
    ///
    /// - Parameters:
    ///   - scenario: The scenario.
    ///   - samples: Its timed runs.
    ///   - baselineMedian: The median MB/s of the sendfile baseline to the same server, or 0 for none.
    ///   - chunkSize: The chunk size actually used, when the scenario's own says nil but something was
    ///     used (the Python client's library default).
    init(_ scenario: DiscardScenario, samples: [DiscardSample], baselineMedian: Double, chunkSize: Int64? = nil) {
        let rates = samples.map(\.megabytesPerSecond)
        self.scenario = scenario.name
        server = scenario.server.rawValue
        transport = scenario.transport
        checksums = scenario.checksums
        chunkSizeBytes = scenario.chunkSize ?? chunkSize
        if case .putStream(let sizeKnown) = scenario.kind {
            streamElementBytes = Int64(DiscardScenario.streamElementBytes)
            streamSizeKnown = sizeKnown
            streamLiveElementsPeakBytes = samples.compactMap(\.liveElementsPeakBytes).max()
        }
        bytesPerRun = samples.first?.bytes ?? 0
        runs = samples.count
        medianMBps = Statistics.median(rates)
        minMBps = rates.min() ?? 0
        maxMBps = rates.max() ?? 0
        medianSeconds = Statistics.median(samples.map(\.seconds))
        ratioToSendfile = baselineMedian > 0 ? medianMBps / baselineMedian : nil
        if scenario.countsUploads {
            let perSecond = samples.map(\.uploadsPerSecond)
            uploadsPerSecond = Statistics.median(perSecond)
            minUploadsPerSecond = perSecond.min()
            maxUploadsPerSecond = perSecond.max()
        }
        cpuSecondsPerRun = Statistics.mean(samples.map(\.cpuSeconds))
        let serverCPU = samples.compactMap(\.serverCPUSeconds)
        serverCPUSecondsPerRun = serverCPU.count == samples.count && !samples.isEmpty ? Statistics.mean(serverCPU) : nil
        peakRSSBytes = samples.compactMap(\.peakResidentBytes).max()
        rssDeltaBytes = samples.compactMap(\.residentGrowthBytes).max()
    }
}

/// `--scale`: one putFile size's memory.
struct ScaleResult: Sendable, Codable {
    var sizeBytes: Int64
    var runs: Int
    var medianMBps: Double
    /// `VmRSS` just before each upload (after `VmHWM` was reset), the largest over the runs.
    var idleRSSBytes: Int64
    /// `VmHWM` after the upload, the largest over the runs.
    var peakRSSBytes: Int64
    /// The largest `VmHWM` − idle `VmRSS` over the runs.
    var peakAboveIdleBytes: Int64
}

/// One target from the issue, judged on numbers from this run.
struct TargetCheck: Sendable, Codable {
    var target: String
    var measured: String
    /// nil when this run did not measure it.
    var met: Bool?
}

/// One server of a `--discard` run.
struct DiscardServerInfo: Sendable, Codable {
    /// `discard`, `memory` or `fake-gcs`: the suffix of its scenarios' names (none for `discard`).
    var id: String
    var description: String
    /// The median MB/s of its sendfile baseline, which its ratios are to; nil when none ran (`--scale`).
    var sendfileBaselineMedianMBps: Double?
    /// Wall seconds of its block: start, warm-up, timed runs, deleting objects, stop.
    var seconds: Double
}

/// Everything one `--discard` run found.
struct DiscardReport: Sendable, Codable {
    var machine: MachineFacts
    /// The servers, in the order their blocks ran.
    var servers: [DiscardServerInfo]
    /// Servers or scenarios this run could not measure, and why (python3, pip or the network missing …).
    var skipped: [String]
    /// The Python client and how it ran, when it did.
    var pythonClient: String?
    var payloadBytes: Int64
    var dataBytes: Int64
    var smallUploads: Int
    var smallPayloadBytes: Int64
    var runs: Int
    var urlSessionRuns: Int
    /// Timed runs of each baseline and native scenario on the memory-backed emulator and fake-gcs-server.
    var serverRuns: Int
    /// Timed runs of each URLSession scenario on the memory-backed emulator and fake-gcs-server.
    var serverURLSessionRuns: Int
    var baseline: String
    /// What `ratioToSendfile` is relative to: `sendfile`, or `curl` with `--tls`.
    var ratioBaseline: String
    var curl: String?
    var peakRSSResetBetweenRuns: Bool
    var checksumCost: ChecksumCost?
    var scenarios: [DiscardResult]
    var scale: [ScaleResult]?
    var targets: [TargetCheck]
    var loadAverageAtEnd: String?
    var totalSeconds: Double
}

/// The issue's targets.
enum DiscardTargets {
    /// Judges the targets on this run's numbers (all taken against the discard emulator).
    ///
    /// - Parameters:
    ///   - results: Every scenario's result.
    ///   - scale: The `--scale` results, if that ran.
    ///   - pythonSkipped: Why the Python client did not run, if it did not.
    /// - Returns: One check per target; `met` is nil where this run did not measure it.
    static func evaluate(
        _ results: [DiscardResult], scale: [ScaleResult]?, pythonSkipped: String? = nil
    ) -> [TargetCheck] {
        var checks: [TargetCheck] = []
        func result(_ name: String) -> DiscardResult? { results.first { $0.scenario == name } }
        if !results.isEmpty {
            let native = result("putFile/native/crc")
            let baseline = result("sendfile-baseline")
            checks.append(
                TargetCheck(
                    target: "putFile, native, CRC32C on: >= 0.90x the raw sendfile baseline",
                    measured: native.map {
                        String(
                            format: "%.2fx (%.0f vs %.0f MB/s)", $0.ratioToSendfile ?? 0, $0.medianMBps,
                            baseline?.medianMBps ?? 0)
                    } ?? "not run",
                    met: native.map { ($0.ratioToSendfile ?? 0) >= 0.9 }
                ))
            let small = result("small-putData/native/crc")
            checks.append(
                TargetCheck(
                    target: "concurrent 64 KiB putData against the discard emulator (native): >= 5000 uploads/s",
                    measured: small.map {
                        String(
                            format: "%.0f uploads/s (%.0f..%.0f)", $0.uploadsPerSecond ?? 0,
                            $0.minUploadsPerSecond ?? 0,
                            $0.maxUploadsPerSecond ?? 0)
                    } ?? "not run",
                    met: small.map { ($0.uploadsPerSecond ?? 0) >= 5000 }
                ))
            let url = result("putFile/urlsession/crc")
            checks.append(
                TargetCheck(
                    target: "URLSession transport: report what it reaches (no target)",
                    measured: url.map {
                        String(format: "putFile %.2fx of sendfile (%.0f MB/s)", $0.ratioToSendfile ?? 0, $0.medianMBps)
                    }
                        ?? "not run",
                    met: nil
                ))
            checks.append(pythonCheck(results, skipped: pythonSkipped))
            checks += streamChecks(results)
        }
        if let scale, let largest = scale.max(by: { $0.sizeBytes < $1.sizeBytes }) {
            checks.append(
                TargetCheck(
                    target: "peak RSS during a \(largest.sizeBytes >> 20) MiB putFile: <= 32 MiB above idle RSS",
                    measured: String(format: "%.1f MiB above idle", Double(largest.peakAboveIdleBytes) / 1_048_576),
                    met: largest.peakAboveIdleBytes <= 32 << 20
                ))
        } else {
            checks.append(
                TargetCheck(
                    target: "peak RSS during a 4 GiB putFile: <= 32 MiB above idle RSS",
                    measured: "run --discard --scale", met: nil))
        }
        return checks
    }

    /// Judges the issue's HTTPS targets on a `--tls` run's numbers (discard emulator over https).
    ///
    /// - Parameters:
    ///   - results: Every scenario's result; ratios are to curl-baseline.
    ///   - scale: The `--tls --scale` results, if that ran.
    /// - Returns: One check per target; `met` is nil where this run did not measure it.
    static func evaluateTLS(_ results: [DiscardResult], scale: [ScaleResult]?) -> [TargetCheck] {
        var checks: [TargetCheck] = []
        func result(_ name: String) -> DiscardResult? { results.first { $0.scenario == name } }
        if !results.isEmpty {
            let native = result("putFile/native/crc")
            let curl = result("curl-baseline")
            checks.append(
                TargetCheck(
                    target: "putFile over TLS, native, default configuration, CRC32C on: >= 1.2x curl -T (same run)",
                    measured: native.map {
                        String(
                            format: "%.2fx (%.0f vs %.0f MB/s)", $0.ratioToSendfile ?? 0, $0.medianMBps,
                            curl?.medianMBps ?? 0)
                    } ?? "not run",
                    met: native.flatMap { result in result.ratioToSendfile.map { $0 >= 1.2 } }
                ))
            let url = result("putFile/urlsession/crc")
            checks.append(
                TargetCheck(
                    target: "putFile over TLS, native, CRC32C on: >= 3x URLSession putFile",
                    measured: native.flatMap { native in
                        url.map {
                            String(
                                format: "%.2fx (%.0f vs %.0f MB/s)",
                                $0.medianMBps > 0 ? native.medianMBps / $0.medianMBps : 0,
                                native.medianMBps, $0.medianMBps)
                        }
                    } ?? "not run",
                    met: native.flatMap { native in url.map { native.medianMBps >= 3 * $0.medianMBps } }
                ))
            let small = result("small-putData/native/crc")
            checks.append(
                TargetCheck(
                    target: "concurrent 64 KiB putData over TLS (native): >= 3000 uploads/s",
                    measured: small.map {
                        String(
                            format: "%.0f uploads/s (%.0f..%.0f)", $0.uploadsPerSecond ?? 0,
                            $0.minUploadsPerSecond ?? 0, $0.maxUploadsPerSecond ?? 0)
                    } ?? "not run",
                    met: small.map { ($0.uploadsPerSecond ?? 0) >= 3000 }
                ))
        }
        if let scale, let largest = scale.max(by: { $0.sizeBytes < $1.sizeBytes }) {
            checks.append(
                TargetCheck(
                    target:
                        "peak RSS during a \(largest.sizeBytes >> 20) MiB putFile over TLS: <= 32 MiB above idle RSS",
                    measured: String(format: "%.1f MiB above idle", Double(largest.peakAboveIdleBytes) / 1_048_576),
                    met: largest.peakAboveIdleBytes <= 32 << 20
                ))
        } else {
            checks.append(
                TargetCheck(
                    target: "peak RSS during a 4 GiB putFile over TLS: <= 32 MiB above idle RSS",
                    measured: "run --tls --discard --scale", met: nil))
        }
        checks.append(
            TargetCheck(
                target: "1 GiB download over TLS: >= 1.0x curl -o", measured: "run --tls --download", met: nil))
        return checks
    }

    /// The SDK's stream buffer (`UploadEngine.streamBufferSize`, internal): one request's bytes.
    static let streamBufferBytes: Int64 = 8 << 20

    /// putStream from 64 KiB elements: peak RSS within the stream buffer + 16 MiB above the VmRSS
    /// before it (largest over the runs, size known and unknown), and its throughput next to
    /// putFile's of the same bytes in the same run (no target).
    private static func streamChecks(_ results: [DiscardResult]) -> [TargetCheck] {
        let streams = results.filter { $0.streamSizeKnown != nil && $0.transport == "native" && $0.checksums }
            .filter { $0.server == BenchmarkServerKind.discard.rawValue }
        let element = "\(DiscardScenario.streamElementBytes >> 10) KiB"
        let limit = streamBufferBytes + (16 << 20)
        let memoryTarget =
            "putStream from \(element) elements (native, CRC32C on): peak RSS <= \(streamBufferBytes >> 20) MiB buffer + 16 MiB above idle RSS"
        let speedTarget =
            "putStream from \(element) elements (native, CRC32C on): MB/s vs putFile/native/crc (no target)"
        guard !streams.isEmpty else {
            return [
                TargetCheck(target: memoryTarget, measured: "not run", met: nil),
                TargetCheck(target: speedTarget, measured: "not run", met: nil),
            ]
        }
        func label(_ result: DiscardResult) -> String { result.streamSizeKnown == true ? "size known" : "size unknown" }
        func mib(_ bytes: Int64?) -> String { bytes.map { String(format: "%.1f MiB", Double($0) / 1_048_576) } ?? "?" }
        let deltas = streams.map { result in
            label(result) + " dRSS " + mib(result.rssDeltaBytes) + " (elements alive at once: "
                + mib(result.streamLiveElementsPeakBytes) + ")"
        }
        let file = results.first { $0.scenario == "putFile/native/crc" }
        let speeds = streams.map { result in
            label(result)
                + String(format: " %.0f MB/s", result.medianMBps)
                + (file.map { String(format: " = %.2fx", $0.medianMBps > 0 ? result.medianMBps / $0.medianMBps : 0) }
                    ?? "")
        }
        return [
            TargetCheck(
                target: memoryTarget,
                measured: deltas.joined(separator: ", ") + " (largest over the runs)",
                met: streams.allSatisfy { $0.rssDeltaBytes != nil }
                    ? streams.allSatisfy { ($0.rssDeltaBytes ?? .max) <= limit } : nil),
            TargetCheck(
                target: speedTarget,
                measured: speeds.joined(separator: ", ")
                    + (file.map { String(format: " putFile (%.0f MB/s)", $0.medianMBps) }
                        ?? "; putFile/native/crc not run"),
                met: nil),
        ]
    }

    /// URLSession with 8 MiB chunks against the Python client with 8 MiB chunks, same file, same
    /// emulator: met when URLSession's putFile is at least as fast (putData is shown beside it).
    private static func pythonCheck(_ results: [DiscardResult], skipped: String?) -> TargetCheck {
        let target = "URLSession, chunkSize 8 MiB: >= the Python google-cloud-storage client with chunk_size 8 MiB"
        func result(_ name: String) -> DiscardResult? { results.first { $0.scenario == name } }
        guard let python = result("python-gcs/crc/chunk8MiB") else {
            return TargetCheck(target: target, measured: "not run" + (skipped.map { ": \($0)" } ?? ""), met: nil)
        }
        let file = result("putFile/urlsession/crc/chunk8MiB")
        let data = result("putData/urlsession/crc/chunk8MiB")
        // Every CPU figure includes the in-process emulator's; the sendfile baseline's is roughly that
        // share alone (its client costs next to nothing), so the difference estimates the client's own.
        let emulatorShare = result("sendfile-baseline")?.cpuSecondsPerRun ?? 0
        var parts: [String] = []
        func describe(_ label: String, _ result: DiscardResult) -> String {
            label
                + String(
                    format: " %.0f MB/s = %.2fx Python, CPU %.2f s (client ~%.2f s)", result.medianMBps,
                    python.medianMBps > 0 ? result.medianMBps / python.medianMBps : 0, result.cpuSecondsPerRun,
                    max(0, result.cpuSecondsPerRun - emulatorShare))
        }
        if let file { parts.append(describe("putFile", file)) }
        if let data { parts.append(describe("putData", data)) }
        parts.append(
            String(
                format: "Python %.0f MB/s (%.2fx sendfile), CPU %.2f s (client ~%.2f s)", python.medianMBps,
                python.ratioToSendfile ?? 0, python.cpuSecondsPerRun, max(0, python.cpuSecondsPerRun - emulatorShare)))
        return TargetCheck(
            target: target,
            measured: file == nil
                ? "putFile/urlsession/crc/chunk8MiB not run; " + parts.joined(separator: "; ")
                : parts.joined(separator: "; "),
            met: file.map { $0.medianMBps >= python.medianMBps }
        )
    }
}

/// Prints a ``DiscardReport``.
enum DiscardReportPrinter {
    static func json(_ report: DiscardReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(report), as: UTF8.self) + "\n"
    }

    private static func header(_ report: DiscardReport) -> [String] {
        let machine = report.machine
        return [
            "CloudStorage upload benchmarks (--discard)",
            "machine: \(machine.activeCores) of \(machine.cores) cores active"
                + (machine.cpuModel.map { ", \($0)" } ?? "")
                + String(format: ", %.1f GiB RAM", machine.memoryGiB),
            "os: \(machine.operatingSystem); built with \(machine.swiftCompiler)",
            "load average (1/5/15 min): \(machine.loadAverageAtStart ?? "?") at start, \(report.loadAverageAtEnd ?? "?") at end",
        ] + report.servers.map { "server \($0.id): \($0.description)" }
    }

    /// The throughput report: one table with a section per server, the CRC32C cost, targets and notes.
    ///
    /// - Parameter report: The report of a `--discard` run without `--scale`.
    /// - Returns: Lines ending in a newline.
    static func table(_ report: DiscardReport) -> String {
        var lines = header(report)
        lines.append(
            "payloads: putFile \(mib(report.payloadBytes)), putData \(mib(report.dataBytes)), small \(report.smallUploads) x \(report.smallPayloadBytes / 1024) KiB concurrent; runs: \(report.runs) (URLSession, curl and Python: \(report.urlSessionRuns); @memory and @fake-gcs: \(report.serverRuns), URLSession there: \(report.serverURLSessionRuns)), rounds interleaved per server"
        )
        lines.append("baseline (ratios, per server): \(report.baseline)")
        if let curl = report.curl { lines.append("curl: \(curl)") }
        if let python = report.pythonClient { lines.append("python-gcs: \(python)") }
        for note in report.skipped { lines.append("skipped: \(note)") }
        lines.append("")
        let showServerCPU = report.scenarios.contains { $0.serverCPUSecondsPerRun != nil }
        var headers = [
            "scenario", "runs", "MB/s med", "min..max", "x \(report.ratioBaseline)", "s/run", "uploads/s", "CPU s/run",
        ]
        if showServerCPU { headers.append("srv CPU s/run") }
        headers += ["peak RSS", "dRSS"]
        var rows: [[String]] = []
        for result in report.scenarios {
            var row = [
                result.scenario,
                String(result.runs),
                String(format: "%.0f", result.medianMBps),
                String(format: "%.0f..%.0f", result.minMBps, result.maxMBps),
                result.ratioToSendfile.map { String(format: "%.2f", $0) } ?? "-",
                String(format: "%.3f", result.medianSeconds),
                result.uploadsPerSecond.map {
                    String(
                        format: "%.0f (%.0f..%.0f)", $0, result.minUploadsPerSecond ?? 0,
                        result.maxUploadsPerSecond ?? 0)
                } ?? "-",
                String(format: "%.2f", result.cpuSecondsPerRun),
            ]
            if showServerCPU {
                row.append(result.serverCPUSecondsPerRun.map { String(format: "%.2f", $0) } ?? "-")
            }
            row += [result.peakRSSBytes.map(mibRounded) ?? "-", result.rssDeltaBytes.map(mibRounded) ?? "-"]
            rows.append(row)
        }
        // One table, so columns line up across servers, with a heading line before each server's rows.
        let rendered = render(headers, rows)
        lines += rendered.prefix(2)
        var previous: String?
        for (result, line) in zip(report.scenarios, rendered.dropFirst(2)) {
            if result.server != previous && report.servers.count > 1 {
                let seconds = report.servers.first { $0.id == result.server }?.seconds
                lines.append(
                    "[\(result.server)]" + (seconds.map { String(format: " (block: %.0f s)", $0) } ?? ""))
            }
            previous = result.server
            lines.append(line)
        }
        if let cost = report.checksumCost {
            lines.append("")
            lines.append(
                "CRC32C pre-pass on its own (best of 3; GB/s = 10^9 bytes/s; hardware: \(cost.hardwareAccelerated ? "yes" : "no")):"
            )
            lines.append(
                String(
                    format: "  cs_crc32c_update, 1 MiB buffer in cache:           %6.2f GB/s", cost.hardwareInCacheGBps)
            )
            lines.append(
                String(
                    format: "  cs_crc32c_update_portable, same buffer:            %6.2f GB/s", cost.portableInCacheGBps)
            )
            lines.append(
                String(
                    format: "  pre-pass as the SDK runs it (pread 1 MiB + CRC):    %6.2f GB/s = %.3f s for ",
                    cost.filePassGBps,
                    cost.filePassSeconds) + mib(cost.fileBytes))
            lines.append(
                String(
                    format: "  same loop with the portable CRC32C:                %6.2f GB/s", cost.filePassPortableGBps
                ))
        }
        lines += targetLines(report.targets)
        lines.append("notes:")
        lines.append(
            "  MB/s = 10^6 payload bytes per wall second, median of the runs (min..max); x \(report.ratioBaseline) = median / the median of the \(report.ratioBaseline) baseline to the same server."
        )
        lines.append(
            "  servers run one after another, each started for its block and stopped after it; names end in @memory or @fake-gcs for those."
        )
        lines.append(
            "  s/run includes opening the session and, with crc, the SDK's CRC32C pass (before the PUT up to 32 MiB, alongside it above)."
        )
        lines.append(
            "  CPU s/run = user+sys of this whole process (SDK and in-process emulator: discard hashes CRC32C of every byte, memory MD5 too); curl adds its own."
        )
        if showServerCPU {
            lines.append(
                "  for @fake-gcs, CPU s/run is this process only; srv CPU s/run = fake-gcs-server and its supervisor (/proc/<pid>/stat)."
            )
        }
        if report.scenarios.contains(where: { $0.server == BenchmarkServerKind.memory.rawValue }) {
            lines.append(
                "  @memory keeps each object in this process until it is deleted after the run, so its peak RSS and dRSS include the object."
            )
        }
        if report.pythonClient != nil {
            lines.append(
                "  python-gcs: blob.upload_from_filename (resumable; CRC32C computed per chunk, sent with the last, checked against the server's),"
            )
            lines.append(
                "    timed by the script around that call alone (interpreter start, imports and a warm-up upload excluded); CPU = this"
            )
            lines.append(
                "    process (the emulator) + the Python process's getrusage during the upload; 'default' = the library's 100 MiB chunks."
            )
            lines.append(
                "  client ~ (targets) = CPU s/run minus the discard sendfile baseline's, roughly the client's own share without the emulator's."
            )
        }
        lines.append(
            "  peak RSS = VmHWM after the run, reset to VmRSS via /proc/self/clear_refs before it\(report.peakRSSResetBetweenRuns ? "" : " (reset FAILED: lifetime peak)"); dRSS = peak - VmRSS before the run."
        )
        lines.append(
            "  putData's payload and the small payload are in memory before every run, so they are in 'before', not in dRSS."
        )
        if report.scenarios.contains(where: { $0.streamSizeKnown != nil }) {
            lines.append(
                "  putStream/.../block\(DiscardScenario.streamElementBytes >> 10)KiB: the putFile payload as \(DiscardScenario.streamElementBytes >> 10) KiB Data elements, each read by a dispatch thread"
            )
            lines.append(
                "    only when the SDK asks for the next (no read-ahead); sent in \(DiscardTargets.streamBufferBytes >> 20) MiB requests (the SDK's stream buffer), CRC32C as"
            )
            lines.append(
                "    the bytes pass; size given, or nil for /unknownSize. 'elements alive at once' (targets) counts each element"
            )
            lines.append(
                "    from its read until its buffer is freed: what the SDK kept referenced, without what malloc keeps (in dRSS)."
            )
        }
        lines.append(
            "  every upload is verified: size and CRC32C reported back equal those of the bytes (each server computes its own)."
        )
        lines.append(String(format: "total wall time: %.0f s", report.totalSeconds))
        return lines.joined(separator: "\n") + "\n"
    }

    static func scaleTable(_ report: DiscardReport) -> String {
        var lines = header(report)
        lines.append(
            "putFile, native transport, CRC32C on, default streaming; VmHWM reset (clear_refs 5) before each upload")
        lines.append("")
        let headers = ["size", "runs", "MB/s med", "idle RSS", "peak RSS", "peak - idle"]
        let rows = (report.scale ?? []).map { result in
            [
                mib(result.sizeBytes), String(result.runs), String(format: "%.0f", result.medianMBps),
                String(format: "%.1f MiB", Double(result.idleRSSBytes) / 1_048_576),
                String(format: "%.1f MiB", Double(result.peakRSSBytes) / 1_048_576),
                String(format: "%.1f MiB", Double(result.peakAboveIdleBytes) / 1_048_576),
            ]
        }
        lines += render(headers, rows)
        lines += targetLines(report.targets.filter { $0.target.contains("RSS") })
        lines.append("notes: idle RSS = VmRSS just before the upload; peak = VmHWM after it; largest over the runs.")
        lines.append(String(format: "total wall time: %.0f s", report.totalSeconds))
        return lines.joined(separator: "\n") + "\n"
    }

    private static func targetLines(_ targets: [TargetCheck]) -> [String] {
        var lines = ["", "targets:"]
        for check in targets {
            let verdict = check.met.map { $0 ? "MET   " : "MISSED" } ?? "-     "
            lines.append("  \(verdict) \(check.target): \(check.measured)")
        }
        return lines
    }

    static func render(_ headers: [String], _ rows: [[String]]) -> [String] {
        var widths = headers.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return column == 0 ? cell + padding : padding + cell
            }.joined(separator: "  ")
        }
        return [line(headers), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
            + rows.map(line)
    }

    private static func mib(_ bytes: Int64) -> String { "\(bytes >> 20) MiB" }
    private static func mibRounded(_ bytes: Int64) -> String { String(format: "%.0f MiB", Double(bytes) / 1_048_576) }
}
