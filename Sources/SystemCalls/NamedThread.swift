import Dispatch
import Foundation

extension Thread {
    /// Starts a thread that names itself `name` (the kernel keeps its first 15 bytes on Linux)
    /// and then runs `body`.
    ///
    /// swift-corelibs-foundation applies `Thread.name` only through the handle `start()`
    /// records, and `start()` records it after the new thread may already run: set before
    /// `start()` the name is dropped, and set from inside the thread it is dropped whenever the
    /// thread wins that race, leaving it its creator's name (a cooperative-pool thread's
    /// `com.apple.root…`). So the new thread waits until `start()` has returned, then names itself.
    package static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        let started = DispatchSemaphore(value: 0)
        let thread = Thread {
            started.wait()
            Thread.current.name = name
            body()
        }
        thread.start()
        started.signal()
    }
}
