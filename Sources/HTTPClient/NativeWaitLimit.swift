/// How long one wait of a native request may last: at most its idle time-out, and never past
/// its deadline, the instant by which the whole exchange must be over.
///
/// The idle time-out starts again with every wait, so a peer that sends a byte now and then
/// keeps it from firing; the deadline is fixed when the request starts, so no pace of bytes
/// moves it. Each wait is computed afresh from both, right before it begins.
struct NativeWaitLimit: Sendable {
    /// How long a wait may last.
    let idle: Duration
    /// When the whole exchange must be over; nil for no such bound.
    let deadline: ContinuousClock.Instant?

    /// When a wait that starts at `now` must end, and whether that end is the deadline.
    func end(from now: ContinuousClock.Instant = .now) -> (instant: ContinuousClock.Instant, isDeadline: Bool) {
        let idleEnd = now + idle
        if let deadline, deadline <= idleEnd { return (deadline, true) }
        return (idleEnd, false)
    }

    /// The failure of a wait on the connection to `key` that reached its end; `isDeadline`
    /// says whether that end was the deadline rather than the idle time-out.
    func expired(_ key: String, isDeadline: Bool) -> HTTPTransportError {
        HTTPTransportError(
            kind: .timedOut,
            message: isDeadline
                ? "The exchange with \(key) was not over by its deadline (however steadily bytes moved)."
                : "Nothing moved to or from \(key) for \(idle).")
    }
}
