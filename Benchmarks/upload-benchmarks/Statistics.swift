/// The measurements of one timed run.
struct RunSample: Sendable {
    /// Wall-clock seconds from the first request to the last answer.
    var seconds: Double
    /// Payload bytes uploaded.
    var bytes: Int64
    /// Objects uploaded.
    var uploads: Int
    /// CPU seconds of the uploader during the run: this process, or the curl processes for the baseline.
    var clientCPU: Double
    /// Context switches of the uploader during the run (this process, or curl).
    var contextSwitches: Int64
    /// CPU seconds of fake-gcs-server (and its supervisor) during the run.
    var serverCPU: Double?
    /// This process's resident high-water mark at the end of the run; nil for the curl baseline.
    var peakResidentBytes: Int64?
    /// How far the high-water mark rose above the resident size before the run.
    var residentGrowthBytes: Int64?
    /// How much more this process keeps resident after the run (its payload
    /// released, objects deleted) than before it: memory the run left behind.
    var retainedBytes: Int64?

    var megabytesPerSecond: Double { Double(bytes) / seconds / 1_000_000 }
    var uploadsPerSecond: Double { Double(uploads) / seconds }
}

/// Summary statistics over runs.
enum Statistics {
    /// The median; the mean of the two middle values for an even count.
    ///
    /// - Parameter values: At least one value.
    /// - Returns: The median, or 0 for no values.
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
    }

    /// The arithmetic mean, or 0 for no values.
    static func mean(_ values: [Double]) -> Double {
        values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count)
    }
}

/// What the report says about one scenario.
struct ScenarioResult: Sendable, Codable {
    var scenario: String
    var summary: String
    var runs: Int
    var medianMBps: Double
    var minMBps: Double
    var maxMBps: Double
    var medianSeconds: Double
    /// Median MB/s divided by the curl baseline's median; nil without a baseline.
    var ratioToBaseline: Double?
    /// Median uploads per second, for the many-small-uploads scenario.
    var uploadsPerSecond: Double?
    /// Which process the CPU figures are for: "this process" or "curl".
    var cpuOf: String
    var cpuSecondsPerRun: Double
    var cpuSecondsTotal: Double
    /// Mean context switches per run of the uploader (this process, or curl).
    var contextSwitchesPerRun: Double
    var serverCPUSecondsPerRun: Double?
    /// The highest `VmHWM` over the runs; nil for the curl baseline.
    var peakRSSBytes: Int64?
    /// The largest rise of `VmHWM` over `VmRSS` taken just before a run.
    var rssDeltaBytes: Int64?
    /// The most resident memory one run left behind (`VmRSS` after minus before);
    /// nil for the curl baseline.
    var retainedRSSBytes: Int64?
    /// Whether every run's result matched the reference and the server's resource.
    var verified: Bool

    init(_ scenario: Scenario, samples: [RunSample], baselineMedian: Double?) {
        let rates = samples.map(\.megabytesPerSecond)
        let cpu = samples.map(\.clientCPU)
        self.scenario = scenario.name
        self.summary = scenario.summary
        runs = samples.count
        let median = Statistics.median(rates)
        medianMBps = median
        minMBps = rates.min() ?? 0
        maxMBps = rates.max() ?? 0
        medianSeconds = Statistics.median(samples.map(\.seconds))
        ratioToBaseline = baselineMedian.flatMap { $0 > 0 ? median / $0 : nil }
        uploadsPerSecond = scenario.countsUploads ? Statistics.median(samples.map(\.uploadsPerSecond)) : nil
        cpuOf = scenario.isBaseline ? "curl" : "this process"
        cpuSecondsPerRun = Statistics.mean(cpu)
        cpuSecondsTotal = cpu.reduce(0, +)
        contextSwitchesPerRun = Statistics.mean(samples.map { Double($0.contextSwitches) })
        let server = samples.compactMap(\.serverCPU)
        serverCPUSecondsPerRun = server.count == samples.count ? Statistics.mean(server) : nil
        peakRSSBytes = samples.compactMap(\.peakResidentBytes).max()
        rssDeltaBytes = samples.compactMap(\.residentGrowthBytes).max()
        retainedRSSBytes = samples.compactMap(\.retainedBytes).max()
        verified = true
    }
}
