import Synchronization

/// A socket descriptor that one thread owns and any thread may shut down.
///
/// The owner reads, writes and finally closes it; another thread may shut it
/// down to wake the owner from a blocking call (a cancelled request, a server
/// stopping). A shutdown racing with the owner's close could hit a descriptor
/// number the system has meanwhile reused, so ``shutdown()`` *pins* the
/// descriptor, and a close requested while it is pinned is carried out by the
/// last unpin. No lock is held during either system call. A descriptor never
/// closed is closed when the object goes away.
package final class SocketDescriptor: Sendable {
    private struct State {
        var pins = 0
        var closeRequested = false
        var closed = false
    }

    /// The descriptor; valid until ``close()``.
    package let fd: Int32
    private let state = Mutex(State())

    /// Takes ownership of `fd`.
    package init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        // Nobody can hold a pin once the last reference is gone.
        let needsClose = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if needsClose { POSIXSocket.closeDescriptor(fd) }
    }

    /// Shuts both directions down unless the descriptor is closed; callable from any thread, idempotent.
    ///
    /// A thread blocked in `poll`, `recv`, `send`, `sendmsg` or `sendfile` on it returns at once.
    package func shutdown() {
        pinned(POSIXSocket.shutdownBoth)
    }

    /// Shuts the receiving side down unless the descriptor is closed; callable from any thread, idempotent.
    ///
    /// A thread blocked in `poll` or `recv` on it returns at once (reading what is left, then
    /// the end of the stream), and the owner can still send, e.g. a last answer before it closes.
    package func shutdownReading() {
        pinned(POSIXSocket.shutdownRead)
    }

    /// Runs `call` on the descriptor unless it is closed, keeping a close requested meanwhile for the end.
    private func pinned(_ call: (Int32) -> Void) {
        let pinned = state.withLock { state in
            guard !state.closeRequested else { return false }
            state.pins += 1
            return true
        }
        guard pinned else { return }
        call(fd)
        let closeNow = state.withLock { state in
            state.pins -= 1
            guard state.pins == 0, state.closeRequested, !state.closed else { return false }
            state.closed = true
            return true
        }
        if closeNow { POSIXSocket.closeDescriptor(fd) }
    }

    /// Closes the descriptor now, or when a shutdown in progress ends. Idempotent.
    package func close() {
        let closeNow = state.withLock { state in
            guard !state.closeRequested else { return false }
            state.closeRequested = true
            guard state.pins == 0 else { return false }
            state.closed = true
            return true
        }
        if closeNow { POSIXSocket.closeDescriptor(fd) }
    }
}
