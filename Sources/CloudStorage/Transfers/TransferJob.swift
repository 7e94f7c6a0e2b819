import Foundation
import Synchronization

/// The job of a ``StorageTransferTask``: plans the items once, then runs them under the
/// transfer's limits, each through the SDK's own single-object operations.
///
/// A run that is paused keeps what it built up in ``TransferState``: the outcomes of the items
/// that ended, and the upload and download tasks in flight, which it pauses (they keep their
/// server sessions and partial files). The next run resumes those first, then starts the
/// items not started yet. Copies and deletions have nothing to keep: a paused one runs again.
/// A cancelled run cancels every task in flight or kept, which discards their sessions and
/// partial files.
struct TransferJob: TaskJob {
    typealias Output = StorageTransferReport

    /// The limits every run honours, and how uploads start.
    struct Limits: Sendable {
        let maxConcurrentFiles: Int
        let memoryBudget: Int64
        let failFast: Bool
        let startUpload: StorageTransferManager.UploadStarter
    }

    let limits: Limits
    let state: TransferState

    var initialProgress: TaskProgress { TaskProgress(completedUnitCount: 0, totalUnitCount: 0) }

    func completion(_ output: StorageTransferReport) -> (progress: TaskProgress, metadata: StorageMetadata?) {
        (state.progress, nil)
    }

    func run(
        stop: TaskStop, progress: @escaping @Sendable (TaskProgress) -> Void
    ) async throws(StorageError) -> StorageTransferReport {
        if stop.reason == .cancel {
            await state.cancelKept()
            throw .cancelled()
        }
        guard limits.maxConcurrentFiles >= 1 else {
            throw .invalidArgument("maxConcurrentFiles must be at least 1; it is \(limits.maxConcurrentFiles).")
        }
        guard limits.memoryBudget >= 0 else {
            throw .invalidArgument("memoryBudget must not be negative; it is \(limits.memoryBudget).")
        }
        let items = try await state.plan(progress: progress)
        await runItems(items, stop: stop, progress: progress)
        if let reason = stop.reason {
            if reason == .cancel { await state.cancelKept() }
            throw .cancelled()
        }
        return state.report()
    }

    /// Runs every item that has not ended, within the limits, until they end, the run is
    /// stopped, or (with `failFast`) one fails.
    private func runItems(
        _ items: [StorageTransferItem], stop: TaskStop, progress: @escaping @Sendable (TaskProgress) -> Void
    ) async {
        var queue = state.pending()[...]
        await withTaskGroup(of: (Int, FileEnd).self) { group in
            var running = 0
            var bytesInFlight: Int64 = 0
            var stoppedEarly = false
            while true {
                // Start what the limits allow, in plan order; a file larger than the whole budget
                // goes alone rather than never.
                while !stoppedEarly, stop.reason == nil, let index = queue.first, running < limits.maxConcurrentFiles {
                    let cost = items[index].budgetCost
                    guard running == 0 || bytesInFlight + cost <= limits.memoryBudget else { break }
                    queue.removeFirst()
                    running += 1
                    bytesInFlight += cost
                    let kept = state.takeKept(index)
                    group.addTask {
                        (index, await perform(items[index], index: index, kept: kept, stop: stop, progress: progress))
                    }
                }
                guard let (index, end) = await group.next() else { break }
                running -= 1
                bytesInFlight -= items[index].budgetCost
                switch end {
                case .ended(let result):
                    state.record(result, for: index)
                    if case .failed = result, limits.failFast, !stoppedEarly {
                        // The others in flight stop too: their Swift tasks cancel their file tasks.
                        stoppedEarly = true
                        group.cancelAll()
                    }
                case .paused(let handle):
                    if let handle { state.keep(handle, for: index) }
                }
            }
        }
    }

    /// How one item's run ended.
    enum FileEnd: Sendable {
        case ended(StorageTransferResult)
        /// Stopped by a pause; the paused task, if the item has one to continue.
        case paused(FileTaskHandle?)
    }

    private func perform(
        _ item: StorageTransferItem, index: Int, kept: FileTaskHandle?, stop: TaskStop,
        progress: @escaping @Sendable (TaskProgress) -> Void
    ) async -> FileEnd {
        let report: @Sendable (Int64) -> Void = { bytes in state.update(index, bytes: bytes, progress: progress) }
        switch item.operation {
        case .upload(let file, let object, let metadata):
            if let kept { return await follow(kept, kept: true, stop: stop, report: report) }
            let task = await limits.startUpload(file, object, metadata)
            return await follow(FileTaskHandle(task), stop: stop, report: report)
        case .download(let object, let file):
            if let kept { return await follow(kept, kept: true, stop: stop, report: report) }
            // Below a confinement only it is made here: the download makes the rest, following no link.
            let directory = item.confinement ?? file.deletingLastPathComponent()
            do throws(StorageError) {
                try await BlockingIO.run { () throws(StorageError) in
                    do {
                        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    } catch {
                        throw StorageError(.unwritableFile, "cannot make the directory \(directory.path)")
                    }
                }
            } catch {
                return interrupted(error, stop: stop)
            }
            let task = object.write(toFile: file, preconditions: .none, confinedTo: item.confinement)
            return await follow(FileTaskHandle(task), stop: stop, report: report)
        case .copy(let source, let destination, let metadata):
            do throws(StorageError) {
                _ = try await source.copy(to: destination, metadata: metadata) { report($0.completedUnitCount) }
                report(item.size ?? 0)
                return .ended(.succeeded)
            } catch {
                return interrupted(error, stop: stop)
            }
        case .delete(let object):
            // A deletion that a pause interrupted may have happened: then the object is gone.
            let retried = state.markAttempted(index)
            do throws(StorageError) {
                try await object.delete()
                return .ended(.succeeded)
            } catch {
                if retried, error.code == .objectNotFound { return .ended(.succeeded) }
                return interrupted(error, stop: stop)
            }
        }
    }

    /// An item that threw: run again after a pause, a failure otherwise.
    private func interrupted(_ error: StorageError, stop: TaskStop) -> FileEnd {
        stop.reason == .pause ? .paused(nil) : .ended(.failed(error))
    }

    /// Follows a file task to its end, reporting its bytes; pauses it and hands it back when the
    /// run is paused, cancels it when the run is cancelled (or another file failed, with `failFast`).
    private func follow(
        _ handle: FileTaskHandle, kept: Bool = false, stop: TaskStop, report: @escaping @Sendable (Int64) -> Void
    ) async -> FileEnd {
        if kept { await handle.resume() }
        // The stream ends at the terminal snapshot, or at once when this run's Swift task is cancelled.
        for await snapshot in handle.snapshots() {
            report(snapshot.progress.completedUnitCount)
            guard snapshot.status.isTerminal else { continue }
            // The terminal snapshot says how the task ended: no need to ask the task again.
            return .ended(snapshot.error.map { .failed($0) } ?? .succeeded)
        }
        if Task.isCancelled {
            if stop.reason == .pause {
                await handle.pause()
                if !handle.hasEnded() { return .paused(handle) }
            } else {
                await handle.cancel()
            }
        }
        if let error = await handle.error() { return .ended(.failed(error)) }
        report(handle.latestProgress())
        return .ended(.succeeded)
    }
}

/// An upload or download task of one item, whatever its output type.
struct FileTaskHandle: Sendable {
    let snapshots: @Sendable () -> AsyncStream<TaskSnapshot>
    let pause: @Sendable () async -> Void
    let resume: @Sendable () async -> Void
    let cancel: @Sendable () async -> Void
    /// Waits for the task's end: nil on success, else its error.
    let error: @Sendable () async -> StorageError?
    let hasEnded: @Sendable () -> Bool
    let latestProgress: @Sendable () -> Int64

    init(_ task: some StorageTask) {
        snapshots = { task.snapshots }
        pause = { await task.pause() }
        resume = { await task.resume() }
        cancel = { await task.cancel() }
        error = {
            if case .failure(let error) = await task.result() { return error }
            return nil
        }
        hasEnded = { task.snapshot.status.isTerminal }
        latestProgress = { task.snapshot.progress.completedUnitCount }
    }
}

/// What a transfer has built up across its runs: the plan, each item's outcome and bytes,
/// and the file tasks a pause kept.
final class TransferState: Sendable {
    /// What planning produces: each item, and its outcome when planning decided it already.
    typealias Planned = [(item: StorageTransferItem, decided: StorageTransferResult?)]

    private struct Inner {
        var items: [StorageTransferItem]?
        var results: [StorageTransferResult?] = []
        /// The most bytes each item reported (a restarted copy does not take progress back).
        var bytes: [Int64] = []
        var completed: Int64 = 0
        /// Bytes of the items whose size is known, plus what the others reported.
        var total: Int64 = 0
        var counts = StorageTransferFileCounts()
        var kept: [Int: FileTaskHandle] = [:]
        var attempted: Set<Int> = []
    }

    private let planner: @Sendable () async throws(StorageError) -> Planned
    private let inner = Mutex(Inner())

    init(planner: @escaping @Sendable () async throws(StorageError) -> Planned) {
        self.planner = planner
    }

    /// The items, planned on the first call (later runs reuse them), with progress published at 0 of the total.
    func plan(progress: @Sendable (TaskProgress) -> Void) async throws(StorageError) -> [StorageTransferItem] {
        if let items = inner.withLock({ $0.items }) { return items }
        let planned = try await planner()
        return inner.withLock { inner in
            if let items = inner.items { return items }
            inner.items = planned.map(\.item)
            inner.results = planned.map(\.decided)
            inner.bytes = Array(repeating: 0, count: planned.count)
            inner.total = planned.reduce(0) { $0 + max(0, $1.item.size ?? 0) }
            inner.counts.total = planned.count
            for result in inner.results.compactMap({ $0 }) { Self.count(result, in: &inner.counts) }
            // Under the lock, so that progress is published in the order it is computed.
            progress(TaskProgress(completedUnitCount: 0, totalUnitCount: inner.total))
            return planned.map(\.item)
        }
    }

    /// The items still to run: those a pause kept first, then the others in plan order.
    func pending() -> [Int] {
        inner.withLock { inner in
            let open = inner.results.indices.filter { inner.results[$0] == nil }
            return open.filter { inner.kept[$0] != nil } + open.filter { inner.kept[$0] == nil }
        }
    }

    /// Records that item `index` has moved `bytes`, and publishes the transfer's progress.
    func update(_ index: Int, bytes: Int64, progress: @Sendable (TaskProgress) -> Void) {
        inner.withLock { inner in
            guard inner.bytes.indices.contains(index), bytes > inner.bytes[index] else { return }
            let added = bytes - inner.bytes[index]
            inner.bytes[index] = bytes
            inner.completed += added
            if inner.items?[index].size == nil { inner.total += added }
            // Under the lock: items report from many threads, and progress must never go back.
            progress(TaskProgress(completedUnitCount: inner.completed, totalUnitCount: inner.total))
        }
    }

    func record(_ result: StorageTransferResult, for index: Int) {
        inner.withLock { inner in
            guard inner.results[index] == nil else { return }
            inner.results[index] = result
            Self.count(result, in: &inner.counts)
        }
    }

    func keep(_ handle: FileTaskHandle, for index: Int) {
        inner.withLock { $0.kept[index] = handle }
    }

    func takeKept(_ index: Int) -> FileTaskHandle? {
        inner.withLock { $0.kept.removeValue(forKey: index) }
    }

    /// Records an attempt at item `index`; whether there was one before.
    func markAttempted(_ index: Int) -> Bool {
        inner.withLock { !$0.attempted.insert(index).inserted }
    }

    /// Cancels the file tasks a pause kept, and waits for their ends.
    func cancelKept() async {
        let kept = inner.withLock { inner in
            defer { inner.kept = [:] }
            return inner.kept
        }
        for (index, handle) in kept {
            await handle.cancel()
            record(await handle.error().map { .failed($0) } ?? .succeeded, for: index)
        }
    }

    var progress: TaskProgress {
        inner.withLock { TaskProgress(completedUnitCount: $0.completed, totalUnitCount: $0.total) }
    }

    var counts: StorageTransferFileCounts {
        inner.withLock { $0.counts }
    }

    /// The outcomes of the items that ended so far, in plan order.
    var outcomes: [StorageTransferOutcome] {
        inner.withLock { inner in
            guard let items = inner.items else { return [] }
            return items.indices.compactMap { index in
                inner.results[index].map { StorageTransferOutcome(item: items[index], result: $0) }
            }
        }
    }

    /// Every item's outcome; an item never started is skipped (`failFast` stopped the transfer).
    func report() -> StorageTransferReport {
        inner.withLock { inner in
            let items = inner.items ?? []
            for index in items.indices where inner.results[index] == nil {
                let result = StorageTransferResult.skipped("not started: another file failed (failFast)")
                inner.results[index] = result
                Self.count(result, in: &inner.counts)
            }
            return StorageTransferReport(
                outcomes: items.indices.map { StorageTransferOutcome(item: items[$0], result: inner.results[$0]!) })
        }
    }

    private static func count(_ result: StorageTransferResult, in counts: inout StorageTransferFileCounts) {
        switch result {
        case .succeeded: counts.succeeded += 1
        case .skipped: counts.skipped += 1
        case .failed: counts.failed += 1
        }
    }
}
