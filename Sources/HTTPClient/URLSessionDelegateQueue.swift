import Foundation
import Synchronization

/// The `URLSession` transport's delegate queue: serial, and it holds back
/// whoever adds work while too many callbacks already wait, so what the
/// session receives cannot pile up in memory faster than it is consumed.
///
/// swift-corelibs-foundation hands every chunk libcurl reads to the delegate
/// queue with `addOperation` and reads on without waiting for the delegate
/// (its own comments say it cannot pause the transfer). A response sink that
/// writes more slowly than the network delivers (a slow disk, a loopback
/// server) would let queued chunks, and the process, grow without bound.
/// Blocking the caller of `addOperation` (libcurl's work queue) stops libcurl
/// reading the socket, and TCP flow control pushes back on the server: at
/// most ``limit`` callbacks, each at most one libcurl buffer (16 KiB by
/// default), wait at any time.
///
/// The cost: while it waits, the process's other `URLSession`s wait too
/// (swift-corelibs-foundation runs them all on one serial queue); that lasts
/// only as long as the delegate is behind. Work added from the queue itself is
/// never held back, since only the queue can make room.
final class URLSessionDelegateQueue: OperationQueue, @unchecked Sendable {  // SAFETY: see below
    // SAFETY: `limit` is immutable; `slots` and `holdBacks` are thread-safe; the rest is
    // OperationQueue's own state, which it guards itself.

    /// The most callbacks that may wait to run.
    let limit: Int
    private let slots: DispatchSemaphore
    private let holdBacks = Atomic(0)

    /// - Parameter limit: The most callbacks that may wait to run; at least 1.
    init(limit: Int) {
        self.limit = max(1, limit)
        self.slots = DispatchSemaphore(value: max(1, limit))
        super.init()
        name = "HTTPClient.URLSessionTransport"
        maxConcurrentOperationCount = 1
    }

    /// How many times a caller had to wait for room; for tests.
    var holdBackCount: Int { holdBacks.load(ordering: .relaxed) }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        let takesSlot = OperationQueue.current !== self
        if takesSlot, slots.wait(timeout: .now()) == .timedOut {
            holdBacks.add(1, ordering: .relaxed)
            slots.wait()
        }
        super.addOperation { [slots] in
            block()
            if takesSlot { slots.signal() }
        }
    }
}
