import CloudStorage
import Foundation
import Synchronization
import SystemCalls

/// The one progress line of `cp -r` on standard error: files done of the
/// total, bytes done (of the total, when known), failures, and the rate,
/// redrawn in place at most 10 times a second. Only on a terminal: a log
/// gets the summary at the end instead.
///
/// It shows the transfer manager's snapshots (files and bytes of the whole
/// transfer); the counts sit in a lock, the line is written outside it.
final class OverallProgress: Sendable {
    private struct State {
        var filesDone = 0
        var failed = 0
        var bytes: Int64 = 0
        var lastDraw = ContinuousClock.now - .seconds(1)
    }

    private let totalFiles: Int
    private let totalBytes: Int64?
    /// Files that failed before the transfer started (refused while planning).
    private let failedBefore: Int
    private let start = ContinuousClock.now
    private let state = Mutex(State())
    /// Whether anything is drawn.
    let isShown: Bool

    /// - Parameters:
    ///   - files: How many files there are, those refused before the transfer included.
    ///   - bytes: Their total size, when known (uploads), or nil (a listing gives no sizes).
    ///   - failedBefore: How many were refused before the transfer started.
    ///   - quiet: `--quiet`: nothing is drawn.
    init(files: Int, bytes: Int64?, failedBefore: Int, quiet: Bool) {
        totalFiles = files
        totalBytes = bytes
        self.failedBefore = failedBefore
        isShown = !quiet && StandardStream.isTerminal(StandardStream.error)
        state.withLock { $0.failed = failedBefore }
    }

    /// The transfer's latest snapshot: its files and bytes so far.
    func show(_ snapshot: StorageTransferSnapshot) {
        guard isShown else { return }
        let line = state.withLock { state -> String? in
            state.filesDone = snapshot.files.succeeded
            state.failed = failedBefore + snapshot.files.failed + snapshot.files.skipped
            state.bytes = snapshot.progress.completedUnitCount
            return drawIfDue(&state, force: false)
        }
        if let line { write(line) }
    }

    /// Draws the final line and ends it, so that what follows starts on a line of its own.
    func end() {
        guard isShown else { return }
        let line = state.withLock { state in drawIfDue(&state, force: true) }
        if let line { write(line + "\n") }
    }

    private func drawIfDue(_ state: inout State, force: Bool) -> String? {
        let now = ContinuousClock.now
        guard force || now - state.lastDraw >= .milliseconds(100) else { return nil }
        state.lastDraw = now
        let bytes = state.bytes
        var parts = ["\(state.filesDone)/\(totalFiles) files"]
        parts.append(
            ProgressBar.format(bytes: bytes) + (totalBytes.map { "/" + ProgressBar.format(bytes: $0) } ?? ""))
        if state.failed > 0 { parts.append("\(state.failed) failed") }
        let elapsed = (now - start) / .seconds(1)
        if elapsed > 0 {
            parts.append("\(ProgressBar.format(bytes: Int64(Double(bytes) / elapsed)))/s")
        }
        return "\r\u{1B}[2K" + parts.joined(separator: "  ")
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
