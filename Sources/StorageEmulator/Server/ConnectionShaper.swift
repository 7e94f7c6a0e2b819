/// What one connection owes the network model (see ``StorageEmulator/NetworkShape``): a token
/// bucket per direction and the latency before the next answer. A pure value; the connection
/// performs the waits it returns.
struct ConnectionShaper {
    /// The waits of one write.
    struct SendWaits: Equatable {
        /// The round trip (and, on a new connection, the handshakes) before an answer's first byte.
        var latency: Duration
        /// Waiting for the rate, after the latency.
        var rate: Duration

        /// Both, one after the other: the connection waits once.
        var total: Duration { latency + rate }
    }

    /// Paces the bytes read from the client.
    private var fromClient: TokenBucket?
    /// Paces the bytes written to the client.
    private var toClient: TokenBucket?
    private let latency: Duration
    /// Latency the next write waits whether or not the client spoke since the last one: the
    /// handshakes' round trips, until the connection's first answer.
    private var setup: Duration
    /// Bytes or a request arrived since the last write: the next write is an answer, one round trip away.
    private var heard = false
    private let clock: StorageEmulator.NetworkShape.Clock
    /// The instant the clock starts from.
    private let origin: ContinuousClock.Instant
    /// With ``StorageEmulator/NetworkShape/Clock/waitsOnly``, the time that has passed.
    private var waited = Duration.zero

    /// - Parameters:
    ///   - shape: The network model.
    ///   - handshakes: Round trips a new connection costs before its first answer (TCP's, and TLS's).
    ///   - now: The instant the connection was accepted.
    init(_ shape: StorageEmulator.NetworkShape, handshakes: Int, now: ContinuousClock.Instant = .now) {
        if let rate = shape.rate, let burst = shape.burst {
            fromClient = TokenBucket(rate: rate, burst: burst, now: now)
            toClient = TokenBucket(rate: rate, burst: burst, now: now)
        }
        latency = shape.latency
        setup = shape.latency * handshakes
        clock = shape.clock
        origin = now
    }

    private var now: ContinuousClock.Instant {
        switch clock {
        case .continuous: .now
        case .waitsOnly: origin + waited
        }
    }

    /// A request head was parsed (perhaps from bytes read ahead): it will be answered.
    mutating func heardRequest() {
        heard = true
    }

    /// `count` bytes were read from the client.
    ///
    /// - Returns: How long to wait before handing them on.
    mutating func received(_ count: Int) -> Duration {
        guard count > 0 else { return .zero }
        heard = true
        let instant = now
        let wait = fromClient?.take(count, at: instant) ?? .zero
        waited += wait
        return wait
    }

    /// `count` bytes are about to be written to the client.
    ///
    /// - Returns: How long to wait before writing them.
    mutating func sending(_ count: Int) -> SendWaits {
        let start = now
        var waits = SendWaits(latency: setup, rate: .zero)
        if heard { waits.latency += latency }
        setup = .zero
        heard = false
        if count > 0, var bucket = toClient {
            // The bytes leave after the latency; the bucket refills meanwhile.
            waits.rate = bucket.take(count, at: start + waits.latency)
            toClient = bucket
        }
        waited += waits.total
        return waits
    }
}
