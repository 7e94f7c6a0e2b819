import FakeGCSServer
import Foundation

/// The facts about this machine that a reader needs to interpret the numbers.
struct MachineFacts: Sendable, Codable {
    var activeCores: Int
    var cores: Int
    var cpuModel: String?
    var memoryGiB: Double
    var operatingSystem: String
    var swiftCompiler: String
    var curlVersion: String?
    var loadAverageAtStart: String?

    /// Collects the facts; reads `/proc` off the cooperative pool.
    ///
    /// - Parameter curl: The curl executable, if any, to ask for its version.
    /// - Returns: The facts.
    static func collect(curl: String?) async throws -> MachineFacts {
        let proc = try await BlockingWork.run { () -> (String?, String?) in
            let model = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
                .split(separator: "\n")
                .first { $0.hasPrefix("model name") }
                .flatMap { $0.split(separator: ":", maxSplits: 1).last }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
                .split(separator: " ").prefix(3).joined(separator: " ")
            return (model, load)
        }
        var curlVersion: String?
        if let curl {
            let output = try await ProcessRunner.run(curl, ["--version"])
            curlVersion = String(decoding: output.standardOutput, as: UTF8.self)
                .split(separator: "\n").first
                .map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
        }
        let info = ProcessInfo.processInfo
        return MachineFacts(
            activeCores: info.activeProcessorCount,
            cores: info.processorCount,
            cpuModel: proc.0,
            memoryGiB: Double(info.physicalMemory) / Double(1 << 30),
            operatingSystem: info.operatingSystemVersionString,
            swiftCompiler: compilerVersion,
            curlVersion: curlVersion,
            loadAverageAtStart: proc.1
        )
    }

    /// The compiler this program was built with, as far as `#if compiler` tells.
    static var compilerVersion: String {
        #if compiler(>=6.4)
        return "Swift 6.4 or later"
        #elseif compiler(>=6.3)
        return "Swift 6.3"
        #elseif compiler(>=6.2)
        return "Swift 6.2"
        #else
        return "Swift before 6.2"
        #endif
    }
}
