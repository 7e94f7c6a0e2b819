import FakeGCSServer
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU time of a process and its descendants, from `/proc/<pid>/stat`.
///
/// The fake-gcs-server binary runs under a Python supervisor (and may be
/// wrapped again), so its CPU time is found by walking the tree below the
/// supervisor. All methods block; call them through ``BlockingWork``.
enum ProcessTree {
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User + system seconds of `root` and every live descendant, or nil
    /// when `/proc` cannot be read.
    ///
    /// - Parameter root: The process at the top of the tree.
    /// - Returns: The seconds, or nil.
    static func cpuSeconds(root: Int32) -> Double? {
        guard ticksPerSecond > 0,
            let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc")
        else { return nil }
        var parentOf: [Int32: Int32] = [:]
        var ticksOf: [Int32: Double] = [:]
        for entry in entries {
            guard let pid = Int32(entry), let stat = self.stat(pid) else { continue }
            parentOf[pid] = stat.parent
            ticksOf[pid] = stat.ticks
        }
        guard ticksOf[root] != nil else { return nil }
        var childrenOf: [Int32: [Int32]] = [:]
        for (pid, parent) in parentOf {
            childrenOf[parent, default: []].append(pid)
        }
        var total = 0.0
        var pending = [root]
        var visited = 0
        // A process tree has at most as many members as /proc lists.
        while let pid = pending.popLast(), visited <= parentOf.count {
            visited += 1
            total += ticksOf[pid] ?? 0
            pending.append(contentsOf: childrenOf[pid] ?? [])
        }
        return total / ticksPerSecond
    }

    /// The parent and the user + system clock ticks of one process.
    private static func stat(_ pid: Int32) -> (parent: Int32, ticks: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime …
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let parent = Int32(fields[1]), let user = Double(fields[11]),
            let system = Double(fields[12])
        else { return nil }
        return (parent, user + system)
    }
}
