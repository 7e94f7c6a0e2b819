import Synchronization

/// The waits the network model computed, summed over every connection of a server: what
/// tests compare with the least the bytes and the rate imply.
package final class ShapingCounters: Sendable {
    /// A reading of the counters.
    package struct Totals: Sendable, Equatable {
        /// Connections that were shaped.
        package var connections = 0
        /// Waits after reading request bytes, for the rate.
        package var received = Duration.zero
        /// Waits before writing response bytes, for the rate.
        package var sent = Duration.zero
        /// Waits before answers, for the latency (handshakes included).
        package var latency = Duration.zero

        /// No connection, no wait.
        package init() {}
    }

    private let connections = Atomic<Int>(0)
    private let receivedNanoseconds = Atomic<Int64>(0)
    private let sentNanoseconds = Atomic<Int64>(0)
    private let latencyNanoseconds = Atomic<Int64>(0)

    func addConnection() {
        connections.add(1, ordering: .relaxed)
    }

    func addReceived(_ wait: Duration) {
        receivedNanoseconds.add(wait.nanoseconds, ordering: .relaxed)
    }

    func addSent(_ waits: ConnectionShaper.SendWaits) {
        sentNanoseconds.add(waits.rate.nanoseconds, ordering: .relaxed)
        latencyNanoseconds.add(waits.latency.nanoseconds, ordering: .relaxed)
    }

    var totals: Totals {
        var totals = Totals()
        totals.connections = connections.load(ordering: .relaxed)
        totals.received = .nanoseconds(receivedNanoseconds.load(ordering: .relaxed))
        totals.sent = .nanoseconds(sentNanoseconds.load(ordering: .relaxed))
        totals.latency = .nanoseconds(latencyNanoseconds.load(ordering: .relaxed))
        return totals
    }
}

extension Duration {
    /// Whole nanoseconds, rounded down, saturating.
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
            ? .max : product + attoseconds / 1_000_000_000
    }
}
