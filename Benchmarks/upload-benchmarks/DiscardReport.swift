import Foundation

/// The measurements of one timed `--discard` run.
struct DiscardSample: Sendable {
    var seconds: Double
    var bytes: Int64
    var uploads: Int
    /// User + system seconds of this process (the SDK *and* the in-process emulator), plus curl's for curl.
    var cpuSeconds: Double
    /// `VmHWM` after the run, reset to `VmRSS` just before it.
    var peakResidentBytes: Int64?
    /// `VmHWM` after the run minus `VmRSS` just before it.
    var residentGrowthBytes: Int64?

    var megabytesPerSecond: Double { Double(bytes) / seconds / 1_000_000 }
    var uploadsPerSecond: Double { Double(uploads) / seconds }
}

/// What the report says about one `--discard` scenario.
struct DiscardResult: Sendable, Codable {
    var scenario: String
    var transport: String?
    var checksums: Bool
    var chunkSizeBytes: Int64?
    var bytesPerRun: Int64
    var runs: Int
    var medianMBps: Double
    var minMBps: Double
    var maxMBps: Double
    var medianSeconds: Double
    /// Median MB/s over the sendfile baseline's median MB/s (same run).
    var ratioToSendfile: Double?
    var uploadsPerSecond: Double?
    var minUploadsPerSecond: Double?
    var maxUploadsPerSecond: Double?
    var cpuSecondsPerRun: Double
    var peakRSSBytes: Int64?
    var rssDeltaBytes: Int64?

    init(_ scenario: DiscardScenario, samples: [DiscardSample], baselineMedian: Double) {
        let rates = samples.map(\.megabytesPerSecond)
        self.scenario = scenario.name
        transport = scenario.transport
        checksums = scenario.checksums
        chunkSizeBytes = scenario.chunkSize
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

/// Everything one `--discard` run found.
struct DiscardReport: Sendable, Codable {
    var machine: MachineFacts
    var server: String
    var payloadBytes: Int64
    var dataBytes: Int64
    var smallUploads: Int
    var smallPayloadBytes: Int64
    var runs: Int
    var urlSessionRuns: Int
    var baseline: String
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
    static func evaluate(_ results: [DiscardResult], scale: [ScaleResult]?) -> [TargetCheck] {
        var checks: [TargetCheck] = []
        if !results.isEmpty {
            let native = results.first { $0.scenario == "putFile/native/crc" }
            checks.append(
                TargetCheck(
                    target: "putFile, native, CRC32C on: >= 0.90x the raw sendfile baseline",
                    measured: native.map {
                        String(
                            format: "%.2fx (%.0f vs %.0f MB/s)", $0.ratioToSendfile ?? 0, $0.medianMBps,
                            results.first?.medianMBps ?? 0)
                    } ?? "not run",
                    met: native.map { ($0.ratioToSendfile ?? 0) >= 0.9 }
                ))
            let small = results.first { $0.scenario == "small-putData/native/crc" }
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
            let url = results.first { $0.scenario == "putFile/urlsession/crc" }
            checks.append(
                TargetCheck(
                    target: "URLSession transport: report what it reaches (no target)",
                    measured: url.map {
                        String(format: "putFile %.2fx of sendfile (%.0f MB/s)", $0.ratioToSendfile ?? 0, $0.medianMBps)
                    }
                        ?? "not run",
                    met: nil
                ))
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
            "server: \(report.server)",
        ]
    }

    static func table(_ report: DiscardReport) -> String {
        var lines = header(report)
        lines.append(
            "payloads: putFile \(mib(report.payloadBytes)), putData \(mib(report.dataBytes)), small \(report.smallUploads) x \(report.smallPayloadBytes / 1024) KiB concurrent; runs: \(report.runs) (URLSession scenarios: \(report.urlSessionRuns)), rounds interleaved"
        )
        lines.append("baseline (ratios): \(report.baseline)")
        if let curl = report.curl { lines.append("curl: \(curl)") }
        lines.append("")
        let headers = [
            "scenario", "runs", "MB/s med", "min..max", "x sendfile", "s/run", "uploads/s", "CPU s/run", "peak RSS",
            "dRSS",
        ]
        var rows: [[String]] = []
        for result in report.scenarios {
            rows.append([
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
                result.peakRSSBytes.map(mibRounded) ?? "-",
                result.rssDeltaBytes.map(mibRounded) ?? "-",
            ])
        }
        lines += render(headers, rows)
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
            "  MB/s = 10^6 payload bytes per wall second, median of the runs (min..max); x sendfile = median / sendfile-baseline median."
        )
        lines.append(
            "  s/run includes opening the session and, with crc, the SDK's CRC32C pass over the file before the PUT.")
        lines.append(
            "  CPU s/run = user+sys of this whole process (SDK and in-process emulator, which hashes MD5+CRC32C of every byte); curl adds its own."
        )
        lines.append(
            "  peak RSS = VmHWM after the run, reset to VmRSS via /proc/self/clear_refs before it\(report.peakRSSResetBetweenRuns ? "" : " (reset FAILED: lifetime peak)"); dRSS = peak - VmRSS before the run."
        )
        lines.append(
            "  putData's payload and the small payload are in memory before every run, so they are in 'before', not in dRSS."
        )
        lines.append(
            "  every upload is verified: size and CRC32C reported back equal those of the bytes (the emulator computes its own)."
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
