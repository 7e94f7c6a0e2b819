import Synchronization

/// The work a storage task carries out: an upload or a download.
///
/// A ``TaskRunner`` calls ``run(stop:progress:)`` once per *worker*: when the
/// task starts, and again after every resume. A run that is told to stop
/// learns why from its ``TaskStop``, and the job, not the runner, decides what
/// that means for what it has built up: a pause keeps it (the server session,
/// the bytes already written) so that the next run continues from there; a
/// cancel discards it before the run returns.
protocol TaskJob: Sendable {
    /// What a successful run produces: the stored object's metadata, or the download's value.
    associatedtype Output: Sendable & Equatable

    /// Progress before the first byte moves.
    var initialProgress: TaskProgress { get }

    /// Carries the work forward from where earlier runs left it, until it
    /// ends or `stop` asks it to stop.
    ///
    /// A run whose `stop` already says ``TaskStop/Reason/cancel`` when it
    /// starts only discards what earlier runs left behind.
    ///
    /// - Parameters:
    ///   - stop: Why the run is asked to stop, once it is. The runner also
    ///     cancels the run's Swift task, which aborts the request in flight.
    ///   - progress: Called as bytes move.
    /// - Returns: The output of the finished work.
    /// - Throws: The error that ended the work; ``StorageErrorCode/cancelled``
    ///   when it stopped because `stop` asked it to.
    func run(
        stop: TaskStop,
        progress: @escaping @Sendable (TaskProgress) -> Void
    ) async throws(StorageError) -> Output

    /// The progress and metadata of the terminal snapshot of a run that produced `output`.
    func completion(_ output: Output) -> (progress: TaskProgress, metadata: StorageMetadata?)
}
