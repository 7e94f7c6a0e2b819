import FakeGCSServer
import Foundation

// upload-benchmarks: CloudStorage upload throughput, CPU and memory against a
// local fake-gcs-server, side by side with a curl baseline. See --help.

var options: BenchmarkOptions
do {
    options = try BenchmarkOptions.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("upload-benchmarks: \(error)\n".utf8))
    exit(2)
}
if options.help {
    print(BenchmarkOptions.helpText)
    exit(0)
}
if options.tls && options.plansURLSession && !BenchmarkTLS.urlSessionTrustsTestCA {
    // Returns only when URLSession cannot be made to trust the test CA; its rows are then skipped.
    let reason = BenchmarkTLS.reexecuteTrustingTestCA(arguments: Array(CommandLine.arguments.dropFirst()))
    progress("URLSession rows are skipped: \(reason)\n")
    options.urlSessionTLSUnavailable = reason
}

let curlPath = ProcessRunner.which("curl")
if curlPath == nil {
    progress(
        "curl is not on PATH (`which curl` finds nothing): the curl baseline is skipped and ratios are not reported.\n")
}

let directory = FileManager.default.temporaryDirectory
    .appendingPathComponent("upload-benchmarks-\(UUID().uuidString)", isDirectory: true)
if options.discard || options.download {
    var exitStatus: Int32 = 0
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if options.download {
            try await DownloadBenchmark(options: options, curl: curlPath).run(directory: directory)
        } else {
            try await DiscardBenchmark(options: options, curl: curlPath).run(directory: directory)
        }
    } catch {
        FileHandle.standardError.write(Data("upload-benchmarks: error: \(error)\n".utf8))
        exitStatus = 1
    }
    try? FileManager.default.removeItem(at: directory)
    exit(exitStatus)
}
var server: FakeGCSServer?
var status: Int32 = 0
let clock = ContinuousClock()
let startedAt = clock.now
do {
    let machine = try await MachineFacts.collect(curl: curlPath)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    progress("starting fake-gcs-server (installs it on first use) …\n")
    let started = try await FakeGCSServer.start()
    server = started
    let bucket = "bench-\(UUID().uuidString.lowercased().prefix(8))"
    try await started.createBucket(bucket)
    progress(
        "server at \(started.baseURL); writing the \(options.sizeMiB) MiB payload and uploading the references …\n")

    let runner = BenchmarkRunner(
        options: options, server: started, bucket: bucket, directory: directory, curl: curlPath)
    try await runner.prepare()
    let results = try await runner.run()
    let loadAtEnd = try await BlockingWork.run {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(
            separator: " ")
    }
    let report = BenchmarkReport(
        machine: machine,
        runsPerScenario: options.runs,
        payloadBytes: options.largeSize,
        smallUploads: options.smallCount,
        smallPayloadBytes: options.smallSize,
        baseline: curlPath == nil
            ? "none: curl is not on PATH"
            : "\(CurlBaseline.commandTemplate) (after a POST that opens the session; \(machine.curlVersion ?? "curl"))",
        reference: runner.referenceDescription,
        peakRSSResetBetweenRuns: runner.peakResetWorks,
        loadAverageAtEnd: loadAtEnd,
        totalSeconds: Double(startedAt.duration(to: clock.now).components.seconds),
        scenarios: results
    )
    print(options.json ? try ReportPrinter.json(report) : ReportPrinter.table(report), terminator: "")
} catch {
    FileHandle.standardError.write(Data("upload-benchmarks: error: \(error)\n".utf8))
    status = 1
}
server?.stop()
await server?.waitUntilStopped()
try? FileManager.default.removeItem(at: directory)
exit(status)
