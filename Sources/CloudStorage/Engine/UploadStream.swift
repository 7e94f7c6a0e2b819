import Foundation
import HTTPClient
import Synchronization

/// The bytes of a streamed upload: an `AsyncSequence` read by one task of its own into a buffer
/// that holds only what the server has not committed yet.
///
/// Back-pressure is by demand: the reading task takes the next element only while the buffer
/// ends before the furthest offset the engine asked for (``fill(to:)``), so it never runs more
/// than one request's bytes (plus one element) ahead of the committed offset, however slowly
/// the bytes go out. The reading task is separate from the engine's run so that a pause, which
/// cancels the run, does not cancel the sequence (an `AsyncStream` ends for good when the task
/// iterating it is cancelled); ``cancel()`` ends it when the upload ends.
actor UploadStream {
    /// The size the caller declared, if any.
    nonisolated let declaredSize: Int64?
    /// The object's size once known: the declared one, or the bytes read when the sequence ended.
    nonisolated let knownTotal: Mutex<Int64?>

    private let startReading: @Sendable (UploadStream) -> Task<Void, Never>
    private var reader: Task<Void, Never>?
    /// The bytes from ``start`` on that the server has not committed, as the sequence's
    /// elements (the first one possibly cut): kept as they came, so that neither appending,
    /// nor dropping, nor a request's body copies the buffer.
    private var blocks: [Data] = []
    private var buffered: Int64 = 0
    /// The offset of the buffer's first byte: everything before it was dropped.
    private var start: Int64 = 0
    private var crc = CRC32C()
    /// The furthest offset asked for: the reader stops once the buffer reaches it.
    private var demand: Int64 = 0
    private var finished = false
    private var failure: StorageError?
    private var dataWaiter: CheckedContinuation<Void, Never>?
    private var spaceWaiter: CheckedContinuation<Void, Never>?

    init<Bytes: AsyncSequence & Sendable>(_ bytes: Bytes, size: Int64?) where Bytes.Element: Sequence<UInt8> {
        declaredSize = size
        knownTotal = Mutex(size)
        startReading = { stream in
            Task {
                do {
                    for try await element in bytes {
                        // A `Data` element is kept as it is (copy-on-write); other collections are copied once.
                        guard await stream.deliver(element as? Data ?? Data(element)) else { return }
                    }
                    await stream.finish(error: nil)
                } catch {
                    await stream.finish(error: String(describing: error))
                }
            }
        }
    }

    /// The offset just past the last byte read from the sequence.
    private var end: Int64 { start + buffered }

    /// Reads from the sequence until the buffer reaches `target` or the sequence ends.
    ///
    /// - Returns: The offset just past the last byte read, and whether the sequence has ended.
    /// - Throws: ``StorageErrorCode/unreadableFile`` when the sequence threw,
    ///   ``StorageErrorCode/invalidArgument`` when it yields more or fewer bytes than the
    ///   declared size, ``StorageErrorCode/cancelled`` when the calling task is cancelled.
    func fill(to target: Int64) async throws(StorageError) -> (end: Int64, finished: Bool) {
        demand = max(demand, target)
        if reader == nil && !finished { reader = startReading(self) }
        resumeReader()
        while failure == nil && !finished && end < target {
            if Task.isCancelled { throw .cancelled() }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    dataWaiter = continuation
                }
            } onCancel: {
                Task { await self.resumeEngine() }
            }
        }
        if let failure { throw failure }
        if Task.isCancelled { throw .cancelled() }
        return (end, finished)
    }

    /// Drops the bytes before `offset`, which the server has committed.
    ///
    /// - Throws: ``StorageErrorCode/dataLoss`` when `offset` lies before the buffer's start:
    ///   the server lost bytes that were already dropped.
    func discard(below offset: Int64) throws(StorageError) {
        guard offset >= start else {
            throw StorageError(
                .dataLoss,
                "The server needs the streamed bytes from offset \(offset) again, but only those from \(start) on are still buffered; a sequence cannot be read twice."
            )
        }
        var drop = min(offset, end) - start
        while drop > 0, let first = blocks.first {
            let cut = min(drop, Int64(first.count))
            if cut == Int64(first.count) {
                blocks.removeFirst()
            } else {
                blocks[0] = first.dropFirst(Int(cut))
            }
            start += cut
            buffered -= cut
            drop -= cut
        }
    }

    /// The buffered bytes in `[offset, offset + length)`, which must have been read.
    func body(from offset: Int64, length: Int64) -> HTTPRequestBody {
        guard length > 0 else { return .empty }
        var skip = offset - start
        var remaining = length
        var segments: [HTTPRequestBody.Segment] = []
        for block in blocks where remaining > 0 {
            let count = Int64(block.count)
            if skip >= count {
                skip -= count
                continue
            }
            let take = min(count - skip, remaining)
            let from = block.startIndex + Int(skip)
            segments.append(.data(block[from..<from + Int(take)]))
            remaining -= take
            skip = 0
        }
        return HTTPRequestBody(segments: segments)
    }

    /// The CRC32C of every byte read so far (of the whole object once the sequence ended).
    func crc32c() -> UInt32 { crc.value }

    /// Stops reading the sequence: the upload ended.
    func cancel() {
        finished = true
        reader?.cancel()
        resumeReader()
        resumeEngine()
    }

    /// Returns once the reading task waits for demand, or has ended (for tests of back-pressure).
    func waitUntilReaderParked() async {
        while spaceWaiter == nil && !finished && failure == nil {
            await Task.yield()
        }
    }

    /// Adds an element's bytes, then waits until they are wanted; false when reading should stop.
    private func deliver(_ data: Data) async -> Bool {
        guard !finished && failure == nil else { return false }
        blocks.append(data)
        buffered += Int64(data.count)
        crc.update(data)
        if let declaredSize, end > declaredSize {
            failure = .invalidArgument(
                "The sequence yielded more bytes than the \(declaredSize) declared as its size.")
        }
        resumeEngine()
        while failure == nil && !finished && end >= demand && !Task.isCancelled {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                spaceWaiter = continuation
            }
        }
        return failure == nil && !finished && !Task.isCancelled
    }

    private func finish(error: String?) {
        guard !finished else { return }
        finished = true
        if let error, failure == nil {
            failure = StorageError(.unreadableFile, "The sequence of bytes to upload threw an error: \(error)")
        } else if let declaredSize, end < declaredSize, failure == nil {
            failure = .invalidArgument(
                "The sequence ended after \(end) bytes, before the \(declaredSize) declared as its size.")
        } else if failure == nil {
            let total = end
            knownTotal.withLock { $0 = total }
        }
        resumeEngine()
    }

    private func resumeEngine() {
        dataWaiter?.resume()
        dataWaiter = nil
    }

    private func resumeReader() {
        spaceWaiter?.resume()
        spaceWaiter = nil
    }
}
