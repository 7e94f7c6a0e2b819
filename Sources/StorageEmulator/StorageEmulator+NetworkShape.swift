extension StorageEmulator {
    /// A model of the wide-area network between the emulator and its clients: a rate cap per
    /// connection and a round-trip latency (see ``Configuration/networkShape``).
    ///
    /// Loopback has no latency and no per-stream limit, so one connection is always enough on
    /// it; a shape makes the emulator behave like a server across a real network, where a single
    /// TCP stream is capped far below the link. It is a model of the network, not a fault:
    /// every byte arrives, in order, only later. What it models, exactly:
    ///
    /// - **Rate**: each connection carries at most ``rate`` bytes per second in each direction,
    ///   independently (request bytes read from the client, response bytes written to it).
    ///   A token bucket per direction allows a burst of ``burst`` bytes
    ///   (max(64 KiB, 5 ms at the rate)), then paces: the bytes of a read reach the
    ///   application, and the bytes of a write leave for the client, only once the rate allows.
    ///   TLS is paced on its plaintext (the record overhead is not counted).
    /// - **Latency**: one round trip. Each answer the server gives after hearing from the client
    ///   (a response, or `100 Continue`) waits ``latency`` before its first byte, so a request
    ///   costs at least one round trip however small. A new connection's first answer waits one
    ///   more round trip for the TCP handshake, and over TLS another for the TLS 1.3 handshake.
    ///   Bandwidth-delay effects (TCP windows, slow start) are not modelled; the rate alone caps
    ///   a stream.
    ///
    /// The waits run on the connection's own thread (never Swift's cooperative pool), one per
    /// read or write, and ``StorageEmulator/stop()`` cuts them short.
    ///
    /// ```swift
    /// var configuration = StorageEmulator.Configuration()
    /// configuration.networkShape = try .init(parsing: "rate=50MB/s,latency=10ms")
    /// // or: .init(rate: 50_000_000, latency: .milliseconds(10))
    /// let emulator = try StorageEmulator.start(configuration)
    /// ```
    public struct NetworkShape: Sendable, Hashable, CustomStringConvertible {
        /// Bytes per second per connection in each direction; nil for no cap.
        public var rate: Int64?
        /// The round-trip time added before each answer's first byte (see ``NetworkShape``).
        public var latency: Duration
        /// Where the shaper reads the time (tests of the waits use ``Clock/waitsOnly``).
        package var clock = Clock.continuous

        /// How the shaper tells the time.
        package enum Clock: Sendable, Hashable {
            /// The monotonic clock.
            case continuous
            /// Per connection, time passes only by the shaper's own waits, as on an infinitely
            /// fast machine: the waits' total is then exactly what the bytes and the rate
            /// imply, whatever the load (for tests of that total).
            case waitsOnly
        }

        /// The most bytes either direction of a connection may send at once, after an idle
        /// moment, before the rate paces it: max(64 KiB, 5 ms at ``rate``); nil without a rate.
        public var burst: Int64? {
            rate.map { max(64 * 1024, $0 / 200) }
        }

        /// A shape with a rate, a latency or both.
        ///
        /// ```swift
        /// let shape = StorageEmulator.NetworkShape(rate: 50_000_000, latency: .milliseconds(10))
        /// ```
        ///
        /// - Parameters:
        ///   - rate: Bytes per second per connection in each direction (at least 1), or nil for no cap.
        ///   - latency: The round trip added before each answer (zero for none).
        public init(rate: Int64? = nil, latency: Duration = .zero) {
            self.rate = rate
            self.latency = latency
        }

        /// Reads a shape written as `rate=RATE,latency=TIME` (either key optional), as
        /// `cloud-storage emulator --shape` takes it.
        ///
        /// A rate is a number with one of the units `B/s`, `kB/s`, `KB/s`, `MB/s`, `GB/s`
        /// (powers of 1000) or `KiB/s`, `MiB/s`, `GiB/s` (powers of 1024), at least 1 B/s and at
        /// most 1000 GB/s; a latency is a number with `us`, `ms` or `s`, at most 60 s.
        ///
        /// ```swift
        /// let shape = try StorageEmulator.NetworkShape(parsing: "rate=50MB/s,latency=10ms")
        /// ```
        ///
        /// - Parameter text: The shape, such as `rate=50MB/s,latency=10ms` or `latency=2.5ms`.
        /// - Throws: ``EmulatorError`` naming the part that could not be read, and why.
        public init(parsing text: String) throws(EmulatorError) {
            guard !text.isEmpty else {
                throw EmulatorError(
                    description: "empty network shape; expected rate=RATE, latency=TIME or both, "
                        + "e.g. rate=50MB/s,latency=10ms")
            }
            self.init()
            var seen: Set<Substring> = []
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                func refuse(_ why: String) -> EmulatorError {
                    EmulatorError(description: "bad part \"\(part)\": \(why)")
                }
                guard let equals = part.firstIndex(of: "=") else {
                    throw refuse("expected KEY=VALUE (rate=RATE or latency=TIME)")
                }
                let key = part[..<equals]
                let value = part[part.index(after: equals)...]
                guard key == "rate" || key == "latency" else {
                    throw refuse("unknown key \"\(key)\"; expected rate or latency")
                }
                guard seen.insert(key).inserted else { throw refuse("\(key) is given twice") }
                if key == "rate" {
                    guard let (number, multiplier) = Self.quantity(value, units: Self.rateUnits) else {
                        throw refuse(
                            "not a rate; expected a number and one of "
                                + Self.rateUnits.map(\.unit).joined(separator: ", ") + " (e.g. rate=50MB/s)")
                    }
                    let bytes = (number * multiplier).rounded()
                    guard bytes >= 1 else { throw refuse("the rate must be at least 1 B/s") }
                    guard bytes <= 1e12 else { throw refuse("the rate must be at most 1000GB/s") }
                    rate = Int64(bytes)
                } else {
                    guard let (number, multiplier) = Self.quantity(value, units: Self.latencyUnits) else {
                        throw refuse(
                            "not a latency; expected a number and one of "
                                + Self.latencyUnits.map(\.unit).joined(separator: ", ") + " (e.g. latency=10ms)")
                    }
                    let nanoseconds = (number * multiplier).rounded()
                    guard nanoseconds <= 60e9 else { throw refuse("the latency must be at most 60s") }
                    latency = .nanoseconds(Int64(nanoseconds))
                }
            }
        }

        /// The shape in the syntax ``init(parsing:)`` reads, e.g. `rate=50MB/s,latency=10ms`.
        public var description: String {
            var parts: [String] = []
            if let rate {
                // The largest unit that divides the rate (KB/s reads the same as kB/s: not printed).
                let unit = Self.rateUnits.filter { $0.unit != "KB/s" && rate % Int64($0.multiplier) == 0 }
                    .max { $0.multiplier < $1.multiplier }
                parts.append("rate=\(rate / Int64(unit?.multiplier ?? 1))\(unit?.unit ?? "B/s")")
            }
            if latency != .zero || rate == nil {
                let (seconds, attoseconds) = latency.components
                let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
                if let unit = Self.latencyUnits.reversed().first(where: { nanoseconds % Int64($0.multiplier) == 0 }) {
                    parts.append("latency=\(nanoseconds / Int64(unit.multiplier))\(unit.unit)")
                } else {
                    parts.append("latency=\(Double(nanoseconds) / 1_000)us")
                }
            }
            return parts.joined(separator: ",")
        }

        /// Rate units and their bytes per second; the longer names first, so that `KiB/s` is not read as `B/s`.
        private static let rateUnits: [(unit: String, multiplier: Double)] = [
            ("KiB/s", 1024), ("MiB/s", 1024 * 1024), ("GiB/s", 1024 * 1024 * 1024),
            ("kB/s", 1e3), ("KB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("B/s", 1),
        ]

        /// Latency units and their nanoseconds; `us` and `ms` before `s`.
        private static let latencyUnits: [(unit: String, multiplier: Double)] = [
            ("us", 1e3), ("ms", 1e6), ("s", 1e9),
        ]

        /// A plain decimal number (digits with at most one point) followed by one of `units`.
        private static func quantity(
            _ text: Substring, units: [(unit: String, multiplier: Double)]
        ) -> (number: Double, multiplier: Double)? {
            guard let unit = units.first(where: { text.hasSuffix($0.unit) }) else { return nil }
            let digits = text.dropLast(unit.unit.count)
            // Double(_:) alone would also take "1e9", "inf" and "nan".
            guard !digits.isEmpty, digits != ".", digits.filter({ $0 == "." }).count <= 1,
                digits.allSatisfy({ $0 == "." || ("0"..."9").contains($0) }),
                let number = Double(digits)
            else { return nil }
            return (number, unit.multiplier)
        }
    }
}
