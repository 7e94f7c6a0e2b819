import Foundation
import Synchronization
import SystemCalls

/// A file descriptor's bytes (standard input for `cp -`) as an asynchronous
/// sequence of blocks, read with blocking `read(2)` on a thread of its own,
/// never on the cooperative pool.
///
/// Back-pressure: the thread reads a block only when the consumer asks for one
/// or has just taken one, so at most one block waits ahead of the consumer
/// (memory stays at about two blocks whatever the input's size, and a slow
/// upload holds the writer of a pipe back). Each block is filled up to
/// `blockSize` unless the input ends first; the sequence ends at end of file.
///
/// Termination: the iteration ends at end of file, with ``ReadFailed`` on a
/// read error, or when the consuming task is cancelled or the iterator is
/// dropped; the thread then ends once its `read` returns (a read cannot be
/// interrupted, so a pipe whose writer never writes again keeps it until the
/// process ends). The descriptor is not closed. Iterate once.
struct FileDescriptorBlocks: AsyncSequence, Sendable {
    typealias Element = Data
    typealias Failure = any Error

    /// A `read(2)` failed.
    struct ReadFailed: Error, CustomStringConvertible {
        /// The `errno` of the failed read.
        let code: Int32
        var description: String { "cannot read standard input: \(Errno.describe(code))" }
    }

    let fd: Int32
    let blockSize: Int

    init(fd: Int32, blockSize: Int = 1 << 20) {
        self.fd = fd
        self.blockSize = blockSize
    }

    func makeAsyncIterator() -> Iterator {
        Iterator(owner: Owner(reader: BlockReader(fd: fd, blockSize: blockSize)))
    }

    /// Takes the blocks in order.
    struct Iterator: AsyncIteratorProtocol {
        fileprivate let owner: Owner

        mutating func next() async throws -> Data? {
            try await owner.reader.next()
        }
    }

    /// Stops the reading thread when the iterator goes away.
    fileprivate final class Owner: Sendable {
        let reader: BlockReader
        init(reader: BlockReader) { self.reader = reader }
        deinit { reader.stop() }
    }
}

/// What the reading thread produced.
private enum BlockRead: Sendable {
    case block(Data)
    case end
    case failed(Int32)
    case cancelled
}

/// The consumer and the reading thread, meeting under a lock.
private final class BlockReader: Sendable {
    private struct State {
        /// A block read ahead, not yet taken.
        var ready: BlockRead?
        /// A consumer waiting for the next block.
        var waiting: CheckedContinuation<BlockRead, Never>?
        /// Whether the thread should read one more block.
        var wanted = false
        var started = false
        /// Set by cancellation or the iterator's end: the thread ends.
        var stopped = false
        /// Set once the input ended or failed: nothing more is read.
        var ended = false
    }

    private let fd: Int32
    private let blockSize: Int
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    init(fd: Int32, blockSize: Int) {
        self.fd = fd
        self.blockSize = max(1, blockSize)
    }

    func next() async throws -> Data? {
        let read = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<BlockRead, Never>) in
                enum Action { case resume(BlockRead), wait, start }
                let action = state.withLock { state -> Action in
                    if state.stopped { return .resume(.cancelled) }
                    if let ready = state.ready {
                        state.ready = nil
                        if case .block = ready, !state.ended { state.wanted = true }  // read the next one ahead
                        return .resume(ready)
                    }
                    if state.ended { return .resume(.end) }
                    state.waiting = continuation
                    state.wanted = true
                    if state.started { return .wait }
                    state.started = true
                    return .start
                }
                switch action {
                case .resume(let read):
                    continuation.resume(returning: read)
                    wake.signal()
                case .wait:
                    wake.signal()
                case .start:
                    // Started at the first request, so nothing is read before the upload wants it.
                    Thread.start(named: "cloud-storage input") { [self] in readLoop() }
                    wake.signal()
                }
            }
        } onCancel: {
            stop()
        }
        switch read {
        case .block(let data): return data
        case .end: return nil
        case .failed(let code): throw FileDescriptorBlocks.ReadFailed(code: code)
        case .cancelled: throw CancellationError()
        }
    }

    /// Ends the iteration: a waiting consumer is told so, and the thread ends after its read.
    func stop() {
        let waiting = state.withLock { state -> CheckedContinuation<BlockRead, Never>? in
            state.stopped = true
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume(returning: .cancelled)
        wake.signal()
    }

    private func readLoop() {
        while true {
            wake.wait()
            let proceed = state.withLock { state -> Bool? in
                if state.stopped || state.ended { return nil }
                guard state.wanted, state.ready == nil else { return false }
                state.wanted = false
                return true
            }
            guard let proceed else { return }
            guard proceed else { continue }
            let (read, endOfInput) = readBlock()
            let waiting = state.withLock { state -> CheckedContinuation<BlockRead, Never>? in
                // A terminal gives end of file once per Ctrl-D: it is not asked again.
                if endOfInput { state.ended = true }
                if let waiting = state.waiting {
                    state.waiting = nil
                    // Taken at once: the next block may be read ahead.
                    if !endOfInput { state.wanted = true }
                    return waiting
                }
                state.ready = read
                return nil
            }
            if let waiting {
                waiting.resume(returning: read)
                wake.signal()
            }
        }
    }

    /// Reads until the block is full or the input ends; whether it ended (or failed).
    private func readBlock() -> (BlockRead, endOfInput: Bool) {
        var block = Data(count: blockSize)
        var filled = 0
        var ended = false
        let failure: Int32? = block.withUnsafeMutableBytes { raw -> Int32? in
            while filled < raw.count {
                do throws(SystemCallError) {
                    let count = try SystemCall.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
                    if count == 0 {
                        ended = true
                        return nil
                    }
                    filled += count
                } catch {
                    return error.errno
                }
            }
            return nil
        }
        if let failure, filled == 0 { return (.failed(failure), true) }
        if filled == 0 { return (.end, true) }
        block.count = filled
        // A failure after some bytes is reported by the next read, which fails again.
        return (.block(block), ended)
    }
}
