import Foundation

/// Everything one benchmark run found, ready to print.
struct BenchmarkReport: Sendable, Codable {
    var machine: MachineFacts
    var runsPerScenario: Int
    var payloadBytes: Int64
    var smallUploads: Int
    var smallPayloadBytes: Int64
    /// The baseline's command line, or why there is none.
    var baseline: String
    /// What the uploads were checked against.
    var reference: String
    /// Whether `/proc/self/clear_refs` reset the high-water mark before each run.
    var peakRSSResetBetweenRuns: Bool
    var loadAverageAtEnd: String?
    /// Wall seconds of the whole benchmark, from start-up to the report.
    var totalSeconds: Double
    var scenarios: [ScenarioResult]
}
