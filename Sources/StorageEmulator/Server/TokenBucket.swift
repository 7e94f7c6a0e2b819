import SystemCalls

/// Paces one direction of one connection to a rate, allowing a burst: a pure value over the
/// instants its caller passes in.
///
/// The bucket holds up to `burst` bytes' worth of tokens, refilled at `rate` per second of the
/// time that passed between calls. Taking more than it holds leaves a debt, and the caller
/// waits once for it to be repaid: one wait per read or write, however large, sized to the
/// deficit (never a sleep per byte or per small piece). A caller that cannot keep up with the
/// rate never waits, and an idle moment earns at most `burst`.
struct TokenBucket {
    /// Bytes per second, at least 1.
    let rate: Int64
    /// The most tokens held; also the first burst.
    let burst: Int64
    /// Bytes that may pass now; negative while a debt is being waited out.
    private var tokens: Double
    /// When ``tokens`` was last refilled.
    private var updated: ContinuousClock.Instant

    /// A full bucket.
    init(rate: Int64, burst: Int64, now: ContinuousClock.Instant) {
        self.rate = max(1, rate)
        self.burst = max(0, burst)
        tokens = Double(self.burst)
        updated = now
    }

    /// Takes `count` bytes' worth of tokens at `now`.
    ///
    /// - Returns: How long the bytes must wait so that the direction stays within the rate:
    ///   zero while the burst covers them. A writer waits before sending them, a reader after
    ///   reading them, so that either way they reach the other side no sooner than the rate allows.
    mutating func take(_ count: Int, at now: ContinuousClock.Instant) -> Duration {
        let elapsed = updated.duration(to: now)
        if elapsed > .zero {
            let earned = elapsed.inSeconds * Double(rate)
            tokens = min(Double(burst), tokens + earned)
            updated = now
        }
        tokens -= Double(count)
        guard tokens < 0 else { return .zero }
        return .nanoseconds(Int64((-tokens / Double(rate) * 1e9).rounded(.up)))
    }
}
