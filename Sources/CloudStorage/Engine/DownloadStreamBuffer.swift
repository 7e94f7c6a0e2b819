import Foundation
import Synchronization

/// The hand-over between a streamed download's response sink and the
/// consumer of ``StorageDownloadStream``: a few chunks, never more.
///
/// The sink writes on the transport's thread (never the cooperative pool), so
/// when the buffer is full it may block there until the consumer takes a
/// chunk: the transport then stops reading the socket and TCP flow control
/// holds the server back, whatever the object's size. Every wait ends: a
/// taken chunk, ``cancel()`` (the consumer's task was cancelled, it broke out
/// of its loop, or its iterator was dropped) or the download's end.
///
/// State changes happen under one lock; continuations are resumed and
/// semaphores signalled only after it is released.
final class DownloadStreamBuffer: DownloadDestination {
    /// The most bytes one chunk holds (the transport's reads are appended to a
    /// chunk the consumer has not taken yet, up to this size).
    let chunkSize: Int
    /// The most bytes held at once, beyond which the sink waits (one read may
    /// exceed it only when the buffer is empty).
    let limit: Int64
    /// Whether the sink may wait for room. Not over `URLSession`: swift-corelibs-foundation
    /// delivers every session's data on one serial queue, so a sink waiting there for a
    /// consumer stalls every `URLSession` request in the process, and a consumer that needs one
    /// (or whose threads are all stuck in `URLSession` calls) would never come. There the
    /// buffer takes what arrives, and memory follows the consumer's lag instead.
    let waits: Bool

    struct State {
        var chunks: [Data] = []
        /// Index of the oldest chunk not taken yet (chunks before it are spent).
        var head = 0
        /// Bytes held in `chunks[head...]`.
        var buffered: Int64 = 0
        /// The most bytes ever held at once (for tests of the bound).
        var peakBuffered: Int64 = 0
        /// A consumer waiting for the next chunk; only while nothing is buffered.
        var consumer: CheckedContinuation<Result<Data?, StorageError>, Never>?
        /// The sink, waiting for room on the transport's thread.
        var producer: DispatchSemaphore?
        /// How the download ended, once it did.
        var end: Result<Void, StorageError>?
        /// Set by ``cancel()``: every wait ends and every later write fails.
        var cancelled = false
        /// Whether the consumer was told the stream ended (nil or an error); later calls get nil.
        var delivered = false
        /// The task running the download, cancelled with the stream.
        var task: Task<Void, Never>?
        /// The object's metadata from the first answer's head, once it arrived (``metadata()``).
        var metadata: StorageMetadata?
        /// Someone waiting in ``metadata()`` for the first answer's head.
        var metadataWaiter: CheckedContinuation<Result<StorageMetadata, StorageError>, Never>?
    }

    let state = Mutex(State())

    /// Whether ``metadata()`` is used: the engine then hands over each answer's metadata.
    let tracksMetadata: Bool

    init(chunkSize: Int = 256 * 1024, limit: Int64 = 1024 * 1024, waits: Bool = true, tracksMetadata: Bool = false) {
        self.chunkSize = max(1, chunkSize)
        self.limit = max(1, limit)
        self.waits = waits
        self.tracksMetadata = tracksMetadata
    }

    // MARK: Producer (the transport's thread)

    /// The stream hands bytes on as they come; what was handed on cannot be taken back.
    var isRewindable: Bool { false }

    func reset() throws(StorageError) {
        // Never called: the engine fails a non-rewindable download whose object changed.
        throw StorageError(.objectChanged, "A streamed download cannot start over.")
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StorageError) {
        var rest = bytes
        while !rest.isEmpty {
            let count = min(rest.count, chunkSize)
            try push(UnsafeRawBufferPointer(rebasing: rest[..<count]))
            rest = UnsafeRawBufferPointer(rebasing: rest[count...])
        }
    }

    func discard() async {}

    /// Only a download that carries its metadata (``StorageReference/download(preconditions:)``) waits for it.
    var wantsMetadata: Bool { tracksMetadata }

    func received(_ metadata: StorageMetadata) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<StorageMetadata, StorageError>, Never>? in
            // The first answer's: a resumption serves the same generation, or the stream ends.
            guard state.metadata == nil else { return nil }
            state.metadata = metadata
            defer { state.metadataWaiter = nil }
            return state.metadataWaiter
        }
        waiter?.resume(returning: .success(metadata))
    }

    private enum PushAction {
        case handOver(CheckedContinuation<Result<Data?, StorageError>, Never>, Data)
        case wait(DispatchSemaphore)
        case done
    }

    /// Buffers `bytes` (at most one chunk), waiting for room first.
    private func push(_ bytes: UnsafeRawBufferPointer) throws(StorageError) {
        let count = Int64(bytes.count)
        let chunkSize = chunkSize
        let limit = waits ? limit : Int64.max
        while true {
            let action = try state.withLock { (state) throws(StorageError) -> PushAction in
                if state.cancelled { throw .cancelled() }
                if let consumer = state.consumer {
                    // Waiting means nothing is buffered: the bytes go straight to it.
                    state.consumer = nil
                    return .handOver(consumer, Data(bytes))
                }
                guard state.buffered == 0 || state.buffered + count <= limit else {
                    let semaphore = DispatchSemaphore(value: 0)
                    state.producer = semaphore
                    return .wait(semaphore)
                }
                if state.head < state.chunks.count,
                    state.chunks[state.chunks.count - 1].count + bytes.count <= chunkSize
                {
                    state.chunks[state.chunks.count - 1].append(contentsOf: bytes)
                } else {
                    if state.head == state.chunks.count {
                        // Everything was taken: drop the spent slots instead of growing the array.
                        state.chunks.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    var chunk = Data(capacity: chunkSize)
                    chunk.append(contentsOf: bytes)
                    state.chunks.append(chunk)
                }
                state.buffered += count
                state.peakBuffered = max(state.peakBuffered, state.buffered)
                return .done
            }
            switch action {
            case .handOver(let consumer, let data):
                consumer.resume(returning: .success(data))
                return
            case .wait(let semaphore):
                // On the transport's thread: the socket is not read while this waits.
                semaphore.wait()
            case .done:
                return
            }
        }
    }

    /// Records how the download ended; the consumer sees it after every buffered chunk.
    func finish(_ result: Result<Void, StorageError>) {
        let (consumer, waiter) = state.withLock {
            state -> (
                CheckedContinuation<Result<Data?, StorageError>, Never>?,
                CheckedContinuation<Result<StorageMetadata, StorageError>, Never>?
            ) in
            guard state.end == nil, !state.cancelled else { return (nil, nil) }
            state.end = result
            state.task = nil
            let waiter = state.metadataWaiter
            state.metadataWaiter = nil
            guard let consumer = state.consumer else { return (nil, waiter) }
            state.consumer = nil
            state.delivered = true
            return (consumer, waiter)
        }
        consumer?.resume(returning: result.map { nil })
        // A download that ended before any head (an error answer) has no metadata to give.
        waiter?.resume(
            returning: .failure(
                Self.failure(of: result)))
    }

    /// Why a download that ended has no metadata to give: its error, or (it succeeded without
    /// any answer's head, which cannot happen) an internal error.
    private static func failure(of end: Result<Void, StorageError>) -> StorageError {
        if case .failure(let error) = end { return error }
        return .internalError("The download ended without an answer that carried the object.")
    }

    /// The object's metadata from the first answer's head, waiting for it; or the error that
    /// ended the download before one came.
    ///
    /// - Throws: The download's ``StorageError``; ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    func metadata() async throws(StorageError) -> StorageMetadata {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<StorageMetadata, StorageError>, Never>) in
                let immediate = state.withLock { state -> Result<StorageMetadata, StorageError>? in
                    if let metadata = state.metadata { return .success(metadata) }
                    if state.cancelled { return .failure(.cancelled()) }
                    if let end = state.end {
                        return .failure(
                            Self.failure(of: end))
                    }
                    state.metadataWaiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            cancel()
        }
        return try result.get()
    }

    // MARK: Consumer

    /// Starts the download unless the stream was cancelled first.
    func attach(_ task: Task<Void, Never>) {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.task = task }
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// The next chunk, nil after the last, or the error that ended the download.
    func next() async throws(StorageError) -> Data? {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Data?, StorageError>, Never>) in
                let (immediate, producer) = state.withLock {
                    state -> (Result<Data?, StorageError>?, DispatchSemaphore?) in
                    if state.delivered { return (.success(nil), nil) }
                    if state.cancelled {
                        state.delivered = true
                        return (.failure(.cancelled()), nil)
                    }
                    if state.head < state.chunks.count {
                        let chunk = state.chunks[state.head]
                        state.chunks[state.head] = Data()
                        state.head += 1
                        state.buffered -= Int64(chunk.count)
                        defer { state.producer = nil }
                        return (.success(chunk), state.producer)
                    }
                    if let end = state.end {
                        state.delivered = true
                        return (end.map { nil }, nil)
                    }
                    state.consumer = continuation
                    return (nil, nil)
                }
                producer?.signal()
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            cancel()
        }
        return try result.get()
    }

    /// Ends the stream: wakes the consumer (with ``StorageErrorCode/cancelled``)
    /// and the sink (which then aborts the request), drops the buffered chunks
    /// and cancels the download's task. Idempotent; a no-op once the download ended.
    func cancel() {
        let (consumer, producer, task, waiter) = state.withLock {
            state -> (
                CheckedContinuation<Result<Data?, StorageError>, Never>?, DispatchSemaphore?, Task<Void, Never>?,
                CheckedContinuation<Result<StorageMetadata, StorageError>, Never>?
            )
            in
            guard !state.cancelled, state.end == nil || !state.delivered else { return (nil, nil, nil, nil) }
            state.cancelled = true
            let waiter = state.metadataWaiter
            state.metadataWaiter = nil
            // A waiting consumer is told now; later calls end the loop quietly.
            if state.consumer != nil { state.delivered = true }
            state.chunks = []
            state.head = 0
            state.buffered = 0
            defer {
                state.consumer = nil
                state.producer = nil
                state.task = nil
            }
            return (state.consumer, state.producer, state.task, waiter)
        }
        consumer?.resume(returning: .failure(.cancelled()))
        waiter?.resume(returning: .failure(.cancelled()))
        producer?.signal()
        task?.cancel()
    }
}
