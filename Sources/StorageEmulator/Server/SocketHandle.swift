import Synchronization

/// A connected socket that one thread owns and any thread may shut down.
///
/// The owning thread reads, writes and finally closes the descriptor.
/// ``EmulatorHTTPServer/stop()`` needs to shut it down from another thread;
/// if it did so after the owner had closed the descriptor, the number could
/// already name another file. So shutdown *pins* the descriptor, and a close
/// requested while it is pinned is carried out by the last unpin — no lock is
/// held during either system call.
final class SocketHandle: Sendable {
    private struct State {
        var pins = 0
        var closeRequested = false
    }

    let fd: Int32
    private let state = Mutex(State())

    init(fd: Int32) {
        self.fd = fd
    }

    /// Shuts the socket down in both directions unless it is already closed; callable from any thread.
    func shutdown() {
        let pinned = state.withLock { state in
            guard !state.closeRequested else { return false }
            state.pins += 1
            return true
        }
        guard pinned else { return }
        POSIXSocket.shutdownBoth(fd)
        unpin()
    }

    /// Closes the descriptor now, or when the last shutdown in progress finishes. Idempotent.
    func close() {
        let closeNow = state.withLock { state in
            guard !state.closeRequested else { return false }
            state.closeRequested = true
            return state.pins == 0
        }
        if closeNow { POSIXSocket.closeDescriptor(fd) }
    }

    private func unpin() {
        let closeNow = state.withLock { state in
            state.pins -= 1
            return state.pins == 0 && state.closeRequested
        }
        if closeNow { POSIXSocket.closeDescriptor(fd) }
    }
}
