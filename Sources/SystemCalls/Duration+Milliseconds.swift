extension Duration {
    /// The duration in seconds, as a `Double`.
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole milliseconds for `poll`, rounded up so a short wait never becomes a busy loop, saturating.
    package var pollMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let milliseconds = seconds.multipliedReportingOverflow(by: 1000)
        guard !milliseconds.overflow else { return .max }
        let rest = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds.partialValue + rest)
    }

    /// Whole milliseconds, rounded down, saturating.
    package var milliseconds: Int {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? Int.min : Int.max }
        return Int(clamping: product + attoseconds / 1_000_000_000_000_000)
    }
}
