import FakeGCSServer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What this process (and the server's process tree) had used at one instant:
/// CPU time from `getrusage`, resident memory from `/proc/self/status`, and
/// the server's CPU time from `/proc/<pid>/stat`.
///
/// Taking one reads `/proc`, so it runs off the cooperative pool.
struct ResourceSnapshot: Sendable {
    /// User + system CPU seconds of this process (all its threads).
    var selfCPU: Double
    /// Voluntary + involuntary context switches of this process (all its threads).
    var contextSwitches: Int64
    /// Current resident set size (`VmRSS`), in bytes; nil where `/proc` is missing.
    var residentBytes: Int64?
    /// Resident high-water mark (`VmHWM`), in bytes; nil where `/proc` is missing.
    var peakResidentBytes: Int64?
    /// CPU seconds of the server's supervisor and all its descendants; nil when unreadable.
    var serverCPU: Double?

    /// Takes a snapshot.
    ///
    /// - Parameters:
    ///   - resetPeak: First reset the high-water mark, so that `VmHWM`
    ///     read later covers only what follows.
    ///   - serverRoot: The process whose subtree's CPU time to add up; nil for none (an in-process server).
    /// - Returns: The snapshot, and whether the reset worked (false when not asked).
    static func take(resetPeak: Bool, serverRoot: Int32?) async throws -> (ResourceSnapshot, peakWasReset: Bool) {
        try await BlockingWork.run {
            let reset = resetPeak ? resetPeakResident() : false
            let memory = readStatus()
            let usage = selfUsage()
            let snapshot = ResourceSnapshot(
                selfCPU: usage.cpu,
                contextSwitches: usage.switches,
                residentBytes: memory.rss,
                peakResidentBytes: memory.hwm,
                serverCPU: serverRoot.flatMap { ProcessTree.cpuSeconds(root: $0) }
            )
            return (snapshot, reset)
        }
    }

    /// CPU seconds (user + system) and the maximum resident size in bytes.
    /// User + system CPU seconds and context switches of every thread of this process (`RUSAGE_SELF`).
    private static func selfUsage() -> (cpu: Double, switches: Int64) {
        var info = rusage()
        #if canImport(Glibc)
        // Glibc imports the RUSAGE_* constants as an enum but takes an Int32.
        let who = __rusage_who_t(RUSAGE_SELF.rawValue)
        #else
        let who = RUSAGE_SELF
        #endif
        guard getrusage(who, &info) == 0 else { return (0, 0) }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return (seconds(info.ru_utime) + seconds(info.ru_stime), Int64(info.ru_nvcsw) + Int64(info.ru_nivcsw))
    }

    /// Writes "5" to `/proc/self/clear_refs`, which sets `VmHWM` to the current RSS.
    private static func resetPeakResident() -> Bool {
        let descriptor = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return write(descriptor, "5", 1) == 1
    }

    private static func readStatus() -> (rss: Int64?, hwm: Int64?) {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (nil, nil) }
        var rss: Int64?
        var hwm: Int64?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("VmRSS:") { rss = kibibytes(line) }
            if line.hasPrefix("VmHWM:") { hwm = kibibytes(line) }
        }
        return (rss, hwm)
    }

    /// Reads a line such as `VmHWM:	  123456 kB` as bytes.
    private static func kibibytes(_ line: Substring) -> Int64? {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 2, let value = Int64(fields[1]) else { return nil }
        return value * 1024
    }
}
