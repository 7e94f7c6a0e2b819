import CloudStorage
import Foundation
import StorageEmulator

/// `--discard`: raw throughput of one large `putFile` per transport against
/// the built-in emulator in discard mode (bytes are counted and checked, not
/// stored), in this process, next to a curl PUT of the same file to the same
/// emulator. No fake-gcs-server is involved.
struct DiscardBenchmark {
    let options: BenchmarkOptions
    let curl: String?

    /// The transports to time, by their `--transport` names.
    var transports: [(name: String, choice: StorageTransportChoice)] {
        let all: [(String, StorageTransportChoice)] = [("native", .native), ("urlsession", .urlSession)]
        return options.transport == "both" ? all : all.filter { $0.0 == options.transport }
    }

    func run(directory: URL) async throws {
        var configuration = StorageEmulator.Configuration()
        configuration.backing = .discard
        let emulator = try StorageEmulator.start(configuration)
        defer { emulator.stop() }
        let bucket = "bench"
        try emulator.createBucket(bucket)
        let file = directory.appendingPathComponent("payload.bin")
        progress("writing the \(options.sizeMiB) MiB payload …\n")
        try Payload.writeFile(at: file, size: options.largeSize, seed: 1)

        var scenarios: [(String, [Double])] = []
        if curl != nil { scenarios.append(("curl PUT", [])) }
        for transport in transports { scenarios.append(("putFile \(transport.name)", [])) }
        let clock = ContinuousClock()
        for round in 1...options.runs {
            for index in scenarios.indices {
                let name = scenarios[index].0
                progress("round \(round)/\(options.runs): \(name) … ")
                let started = clock.now
                if name == "curl PUT", let curl {
                    let baseline = CurlBaseline(curl: curl, baseURL: emulator.baseURL, bucket: bucket)
                    let result = try await baseline.upload(file: file, size: options.largeSize, object: "curl-\(round)")
                    guard result.facts.size == options.largeSize else {
                        throw BenchmarkError("curl stored a wrong size")
                    }
                } else {
                    let choice = transports.first { "putFile \($0.name)" == name }?.choice ?? .automatic
                    var settings = StorageConfiguration()
                    settings.transport = choice
                    let storage = Storage(bucket: bucket, endpoint: .gcs(emulator.baseURL), configuration: settings)
                    let metadata = try await storage.reference(withPath: "sdk-\(round)").putFileAsync(from: file)
                    guard metadata.size == options.largeSize else {
                        throw BenchmarkError("\(name) stored a wrong size")
                    }
                }
                let seconds = Self.seconds(started.duration(to: clock.now))
                scenarios[index].1.append(seconds)
                progress(String(format: "%.0f MB/s\n", Double(options.largeSize) / seconds / 1e6))
            }
        }
        print("\(options.sizeMiB) MiB to the built-in emulator (--discard, in-process), \(options.runs) runs each")
        print("scenario             median MB/s   best MB/s")
        for (name, times) in scenarios {
            let rates = times.map { Double(options.largeSize) / $0 / 1e6 }.sorted()
            let median = rates[rates.count / 2]
            print(
                name.padding(toLength: 20, withPad: " ", startingAt: 0)
                    + String(format: " %11.0f %11.0f", median, rates.last ?? 0))
        }
        if curl != nil {
            print("curl command: \(CurlBaseline.commandTemplate) (after a POST that opens the session)")
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
