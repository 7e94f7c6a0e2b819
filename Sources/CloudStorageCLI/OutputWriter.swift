import Dispatch
import Foundation
import Synchronization
import SystemCalls

/// Writes a command's output to a file descriptor (standard output by
/// default) from a thread of its own.
///
/// `write(2)` to a pipe or terminal blocks while the reader is slow, so it
/// never runs on the cooperative pool: each ``write(_:)`` hands its bytes to
/// the writer's thread and suspends until they are all written (partial
/// writes, `EINTR`, and `EAGAIN` on a descriptor left non-blocking are
/// continued), so at most one caller's buffer waits at a time. SIGPIPE is
/// blocked on that thread, so a reader that goes away
/// (`cloud-storage cat … | head -c 10`) makes the write fail with `EPIPE`,
/// reported as ``Closed``, instead of killing the process; a SIGPIPE left
/// pending on the thread is discarded when the thread ends.
final class OutputWriter: Sendable {
    /// The reader closed its end (`EPIPE`), or another write error: no more output can go.
    struct Closed: Error {
        /// The `errno` of the failed write.
        let code: Int32
    }

    private struct Job {
        let bytes: Data
        let done: @Sendable (Result<Void, Closed>) -> Void
    }

    private struct State {
        var jobs: [Job] = []
        var finished = false
        /// Set once a write failed: later writes fail at once.
        var failure: Closed?
    }

    private let fd: Int32
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// Starts the writing thread; call ``finish()`` when done, or it waits for work for ever.
    ///
    /// - Parameter fd: Where the bytes go; it is not closed.
    init(fd: Int32 = StandardStream.output) {
        self.fd = fd
        Thread.start(named: "cloud-storage output") { [self] in run() }
    }

    /// Writes all of `bytes`, waiting until they are written.
    ///
    /// - Throws: ``Closed`` when the descriptor no longer takes bytes (the reader went away).
    func write(_ bytes: Data) async throws(Closed) {
        guard !bytes.isEmpty else { return }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, Closed>, Never>) in
            let failure = state.withLock { state -> Closed? in
                if let failure = state.failure { return failure }
                if state.finished { return Closed(code: Errno.badDescriptor) }
                state.jobs.append(Job(bytes: bytes, done: { continuation.resume(returning: $0) }))
                return nil
            }
            if let failure {
                continuation.resume(returning: .failure(failure))
            } else {
                wake.signal()
            }
        }
        try result.get()
    }

    /// Writes `text` followed by nothing: put the line feeds in `text`.
    func write(_ text: String) async throws(Closed) {
        try await write(Data(text.utf8))
    }

    /// Writes a page of output gathered in `text`, then empties it for the next page.
    ///
    /// - Returns: False when the reader has gone (a closed pipe): the caller stops listing.
    func writePage(_ text: inout String) async -> Bool {
        do {
            try await write(text)
        } catch {
            return false
        }
        text = ""
        return true
    }

    /// Lets the thread end once the writes already given are done.
    func finish() {
        state.withLock { $0.finished = true }
        wake.signal()
    }

    private func run() {
        ProcessSignal.blockOnCurrentThread(ProcessSignal.brokenPipe)
        while true {
            wake.wait()
            let next = state.withLock { state -> Job?? in
                if !state.jobs.isEmpty { return state.jobs.removeFirst() }
                return state.finished ? .some(nil) : nil
            }
            guard let job = next else { continue }
            guard let job else { return }
            let outcome = writeAll(job.bytes)
            if case .failure(let failure) = outcome {
                state.withLock { $0.failure = failure }
            }
            job.done(outcome)
        }
    }

    private func writeAll(_ bytes: Data) -> Result<Void, Closed> {
        bytes.withUnsafeBytes { raw -> Result<Void, Closed> in
            var offset = 0
            while offset < raw.count {
                do throws(SystemCallError) {
                    let written = try SystemCall.write(fd, UnsafeRawBufferPointer(rebasing: raw[offset...]))
                    guard written > 0 else { return .failure(Closed(code: Errno.inputOutput)) }
                    offset += written
                } catch  where error.errno == Errno.wouldBlock {
                    // A descriptor the shell left non-blocking: wait until it takes bytes again.
                    SystemCall.waitWritable(fd)
                } catch {
                    return .failure(Closed(code: error.errno))
                }
            }
            return .success(())
        }
    }
}
