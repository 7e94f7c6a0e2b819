import Foundation

/// Turns a ``BenchmarkReport`` into an aligned table or JSON.
enum ReportPrinter {
    /// The report as JSON, keys sorted, numbers rounded to three decimals.
    ///
    /// - Parameter report: The report.
    /// - Returns: The JSON text.
    /// - Throws: When encoding fails.
    static func json(_ report: BenchmarkReport) throws -> String {
        var rounded = report
        rounded.scenarios = report.scenarios.map { result in
            var result = result
            result.medianMBps = round3(result.medianMBps)
            result.minMBps = round3(result.minMBps)
            result.maxMBps = round3(result.maxMBps)
            result.medianSeconds = round3(result.medianSeconds)
            result.ratioToBaseline = result.ratioToBaseline.map(round3)
            result.uploadsPerSecond = result.uploadsPerSecond.map(round3)
            result.cpuSecondsPerRun = round3(result.cpuSecondsPerRun)
            result.cpuSecondsTotal = round3(result.cpuSecondsTotal)
            result.contextSwitchesPerRun = result.contextSwitchesPerRun.rounded()
            result.serverCPUSecondsPerRun = result.serverCPUSecondsPerRun.map(round3)
            return result
        }
        rounded.machine.memoryGiB = round3(report.machine.memoryGiB)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(rounded), as: UTF8.self)
    }

    /// The report as text: machine facts, the table, and notes.
    ///
    /// - Parameter report: The report.
    /// - Returns: Lines ending in a newline.
    static func table(_ report: BenchmarkReport) -> String {
        let machine = report.machine
        var lines: [String] = []
        lines.append("CloudStorage upload benchmarks")
        lines.append(
            "machine: \(machine.activeCores) of \(machine.cores) cores active"
                + (machine.cpuModel.map { ", \($0)" } ?? "")
                + String(format: ", %.1f GiB RAM", machine.memoryGiB)
        )
        lines.append("os: \(machine.operatingSystem); built with \(machine.swiftCompiler)")
        lines.append(
            "load average (1/5/15 min): \(machine.loadAverageAtStart ?? "?") at start, \(report.loadAverageAtEnd ?? "?") at end"
        )
        lines.append(
            "payload: \(megabytes(report.payloadBytes)) (\(report.payloadBytes) bytes); small: \(report.smallUploads) × \(report.smallPayloadBytes / 1024) KiB; \(report.runsPerScenario) timed runs per scenario, rounds interleaved"
        )
        lines.append("server: fake-gcs-server, memory backend, http://127.0.0.1 (loopback)")
        lines.append("baseline: \(report.baseline)")
        lines.append("")

        let headers = [
            "scenario", "runs", "MB/s med", "min..max", "vs curl", "s/run", "uploads/s", "CPU s/run", "srv CPU s/run",
            "ctxsw/run", "peak RSS", "ΔRSS", "kept RSS",
        ]
        var rows: [[String]] = []
        for result in report.scenarios {
            rows.append([
                result.scenario,
                String(result.runs),
                String(format: "%.1f", result.medianMBps),
                String(format: "%.1f..%.1f", result.minMBps, result.maxMBps),
                result.ratioToBaseline.map { String(format: "%.2f×", $0) } ?? "-",
                String(format: "%.3f", result.medianSeconds),
                result.uploadsPerSecond.map { String(format: "%.0f", $0) } ?? "-",
                String(format: "%.2f", result.cpuSecondsPerRun) + (result.cpuOf == "curl" ? "*" : ""),
                result.serverCPUSecondsPerRun.map { String(format: "%.2f", $0) } ?? "?",
                String(format: "%.0f", result.contextSwitchesPerRun),
                result.peakRSSBytes.map(mebibytes) ?? "-",
                result.rssDeltaBytes.map(mebibytes) ?? "-",
                result.retainedRSSBytes.map(mebibytes) ?? "-",
            ])
        }
        let numeric = Set(1..<headers.count)
        var widths = headers.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func render(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return numeric.contains(column) ? padding + cell : cell + padding
            }.joined(separator: "  ")
        }
        lines.append(render(headers))
        lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        lines += rows.map(render)
        lines.append("")

        lines.append("scenarios:")
        for result in report.scenarios {
            lines.append("  \(result.scenario): \(result.summary)")
        }
        lines.append("notes:")
        lines.append(
            "  MB/s = 10^6 payload bytes per second of wall time, median of the runs (min..max); vs curl = median / curl's median."
        )
        lines.append(
            "  s/run = median wall seconds per run, including opening the session (and the SDK's CRC32C pass over the file)."
        )
        lines.append(
            "  CPU s/run = user+sys seconds of this process per run (getrusage RUSAGE_SELF, all threads); * = of the two curl processes instead (wait4)."
        )
        lines.append(
            "  ctxsw/run = voluntary + involuntary context switches of the uploader per run (getrusage / wait4).")
        lines.append(
            "  srv CPU s/run = user+sys seconds of fake-gcs-server and its supervisor per run (/proc/<pid>/stat).")
        if report.peakRSSResetBetweenRuns {
            lines.append("  peak RSS = highest VmHWM over the runs, reset before each run via /proc/self/clear_refs;")
        } else {
            lines.append(
                "  peak RSS = VmHWM; /proc/self/clear_refs could NOT be written, so it is the process-lifetime high-water mark;"
            )
        }
        lines.append("  ΔRSS = largest rise of VmHWM above VmRSS measured just before a run.")
        lines.append(
            "  kept RSS = largest VmRSS after a run (payload released, objects deleted) minus VmRSS before it: memory left behind."
        )
        lines.append(
            "  curl's memory is not reported: a spawned child's ru_maxrss includes the parent's RSS at spawn time.")
        lines.append("  putData's payload is read into memory before its runs and is part of its 'before' RSS.")
        lines.append("  verified: \(report.reference)")
        lines.append(String(format: "total wall time: %.0f s", report.totalSeconds))
        return lines.joined(separator: "\n") + "\n"
    }

    static func megabytes(_ bytes: Int64) -> String {
        bytes % (1024 * 1024) == 0 ? "\(bytes / (1024 * 1024)) MiB" : "\(bytes) bytes"
    }

    private static func mebibytes(_ bytes: Int64) -> String {
        String(format: "%.0f MiB", Double(bytes) / Double(1 << 20))
    }

    private static func round3(_ value: Double) -> Double {
        (value * 1000).rounded() / 1000
    }
}
