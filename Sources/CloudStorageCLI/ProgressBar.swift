import CloudStorage
import Foundation
import SystemCalls

/// Shows a transfer's progress on standard error: a bar redrawn in place on a
/// terminal (bytes, percent, rate, time left), or a plain line at each tenth
/// and each status change when the output goes to a file or a pipe.
struct ProgressBar {
    private let isTerminal = StandardStream.isTerminal(StandardStream.error)
    private let start = ContinuousClock.now
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var lastTenth = -1
    private var rate = RateEstimator()

    mutating func show(_ snapshot: TaskSnapshot) {
        let progress = snapshot.progress
        // Until the file is opened its size is unknown: a bar of 0/0 says nothing.
        guard progress.totalUnitCount > 0 || snapshot.status != .resume else { return }
        show(snapshot.status, progress)
    }

    /// Shows the bytes of a stream whose size is not known (standard output), on a terminal only.
    ///
    /// - Parameters:
    ///   - bytes: How many bytes went so far.
    ///   - finished: Whether this is the last call (the line is then ended).
    mutating func show(streamed bytes: Int64, finished: Bool) {
        guard isTerminal else { return }
        show(finished ? .success : .progress, TaskProgress(completedUnitCount: bytes, totalUnitCount: 0))
    }

    /// Shows a server-side copy's progress: the bytes the server copied so far, of the object's size.
    ///
    /// - Parameters:
    ///   - progress: The copy's progress, as the SDK reports it after each call.
    ///   - finished: Whether the copy is done (the line is then ended).
    mutating func show(copied progress: TaskProgress, finished: Bool) {
        show(finished ? .success : .progress, progress)
    }

    private mutating func show(_ status: TaskStatus, _ progress: TaskProgress) {
        let now = ContinuousClock.now
        rate.record(bytes: progress.completedUnitCount, at: now)
        if isTerminal {
            // Redraw at most 10 times a second, but always for a status change.
            guard status != .progress || now - lastDraw >= .milliseconds(100) else { return }
            lastDraw = now
            let line = "\r\u{1B}[2K" + render(status, progress)
            write(status.isTerminal ? line + "\n" : line)
        } else {
            let tenth = Int(progress.fractionCompleted * 10)
            guard status != .progress || tenth != lastTenth else { return }
            lastTenth = tenth
            write(render(status, progress) + "\n")
        }
    }

    private func render(_ status: TaskStatus, _ progress: TaskProgress) -> String {
        var parts: [String]
        let known = progress.totalUnitCount > 0
        if known {
            let width = 24
            let filled = Int(progress.fractionCompleted * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            let percent = String(format: "%5.1f%%", progress.fractionCompleted * 100)
            let bytes =
                "\(Self.format(bytes: progress.completedUnitCount))/\(Self.format(bytes: progress.totalUnitCount))"
            parts = [bar, percent, bytes]
        } else {
            // A stream of unknown size (standard input or output): what went, and how fast.
            parts = [Self.format(bytes: progress.completedUnitCount)]
        }
        switch status {
        case .progress, .resume:
            if let perSecond = rate.bytesPerSecond {
                parts.append("\(Self.format(bytes: Int64(perSecond)))/s")
                if known {
                    let left = Double(progress.totalUnitCount - progress.completedUnitCount) / max(perSecond, 1)
                    parts.append("ETA \(Self.format(seconds: left))")
                }
            }
        case .pause:
            parts.append("paused")
        case .success:
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            parts.append("done in \(Self.format(seconds: elapsed))")
        case .failure:
            parts.append("failed")
        }
        return parts.joined(separator: "  ")
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func format(bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func format(seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--:--" }
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%02d:%02d", total / 60, total % 60)
    }
}

/// Bytes per second over the last few seconds, so the rate follows changes.
struct RateEstimator {
    private var samples: [(bytes: Int64, at: ContinuousClock.Instant)] = []

    mutating func record(bytes: Int64, at instant: ContinuousClock.Instant) {
        if let last = samples.last, bytes < last.bytes {
            samples.removeAll()  // the upload went back (a restart): start over
        }
        samples.append((bytes, instant))
        samples.removeAll { instant - $0.at > .seconds(5) }
    }

    var bytesPerSecond: Double? {
        guard let first = samples.first, let last = samples.last, last.at > first.at else { return nil }
        return Double(last.bytes - first.bytes) / ((last.at - first.at) / .seconds(1))
    }
}
