import Testing

@testable import StorageEmulator

/// The network model's parts as pure values: the `--shape` syntax, the token bucket over
/// instants the test chooses, and a connection's waits on the waits-only clock.
@Suite("Network shape")
struct NetworkShapeTests {
    typealias Shape = StorageEmulator.NetworkShape

    // MARK: - Parsing

    @Test(arguments: [
        ("rate=50MB/s,latency=10ms", Shape(rate: 50_000_000, latency: .milliseconds(10))),
        ("latency=10ms,rate=50MB/s", Shape(rate: 50_000_000, latency: .milliseconds(10))),
        ("rate=2MiB/s", Shape(rate: 2 * 1024 * 1024)),
        ("rate=64KiB/s", Shape(rate: 64 * 1024)),
        ("rate=1GiB/s", Shape(rate: 1024 * 1024 * 1024)),
        ("rate=100KB/s", Shape(rate: 100_000)),
        ("rate=1.5kB/s", Shape(rate: 1_500)),
        ("rate=3B/s", Shape(rate: 3)),
        ("rate=1GB/s", Shape(rate: 1_000_000_000)),
        ("rate=2.5MB/s", Shape(rate: 2_500_000)),
        ("latency=250us", Shape(latency: .microseconds(250))),
        ("latency=1.5s", Shape(latency: .milliseconds(1500))),
        ("latency=0ms", Shape(latency: .zero)),
        ("latency=60s", Shape(latency: .seconds(60))),
    ])
    func readsAShape(text: String, expected: Shape) throws {
        #expect(try Shape(parsing: text) == expected)
    }

    @Test(arguments: [
        ("", "empty network shape; expected rate=RATE, latency=TIME or both, e.g. rate=50MB/s,latency=10ms"),
        ("rate", "bad part \"rate\": expected KEY=VALUE (rate=RATE or latency=TIME)"),
        ("rate=1MB/s,", "bad part \"\": expected KEY=VALUE (rate=RATE or latency=TIME)"),
        ("speed=5MB/s", "bad part \"speed=5MB/s\": unknown key \"speed\"; expected rate or latency"),
        ("rate=1MB/s,rate=2MB/s", "bad part \"rate=2MB/s\": rate is given twice"),
        (
            "rate=50MBps",
            "bad part \"rate=50MBps\": not a rate; expected a number and one of "
                + "KiB/s, MiB/s, GiB/s, kB/s, KB/s, MB/s, GB/s, B/s (e.g. rate=50MB/s)"
        ),
        (
            "rate=50",
            "bad part \"rate=50\": not a rate; expected a number and one of "
                + "KiB/s, MiB/s, GiB/s, kB/s, KB/s, MB/s, GB/s, B/s (e.g. rate=50MB/s)"
        ),
        (
            "rate=1e6B/s",
            "bad part \"rate=1e6B/s\": not a rate; expected a number and one of "
                + "KiB/s, MiB/s, GiB/s, kB/s, KB/s, MB/s, GB/s, B/s (e.g. rate=50MB/s)"
        ),
        (
            "rate=-1MB/s",
            "bad part \"rate=-1MB/s\": not a rate; expected a number and one of "
                + "KiB/s, MiB/s, GiB/s, kB/s, KB/s, MB/s, GB/s, B/s (e.g. rate=50MB/s)"
        ),
        ("rate=0MB/s", "bad part \"rate=0MB/s\": the rate must be at least 1 B/s"),
        ("rate=2000GB/s", "bad part \"rate=2000GB/s\": the rate must be at most 1000GB/s"),
        (
            "latency=10",
            "bad part \"latency=10\": not a latency; expected a number and one of us, ms, s (e.g. latency=10ms)"
        ),
        (
            "latency=1.2.3ms",
            "bad part \"latency=1.2.3ms\": not a latency; expected a number and one of us, ms, s (e.g. latency=10ms)"
        ),
        ("latency=61s", "bad part \"latency=61s\": the latency must be at most 60s"),
    ])
    func refusesABadShapeNamingThePart(text: String, message: String) {
        #expect {
            try Shape(parsing: text)
        } throws: { error in
            (error as? StorageEmulator.EmulatorError)?.description == message
        }
    }

    @Test(arguments: [
        Shape(rate: 50_000_000, latency: .milliseconds(10)), Shape(rate: 2 * 1024 * 1024),
        Shape(rate: 1_500, latency: .microseconds(250)), Shape(rate: 1_234_567), Shape(latency: .seconds(2)),
        Shape(latency: .nanoseconds(1_500)),
    ])
    func describesItselfInTheSyntaxItReads(shape: Shape) throws {
        #expect(try Shape(parsing: shape.description) == shape)
    }

    @Test func theBurstIs64KiBOrFiveMillisecondsAtTheRate() {
        #expect(Shape(rate: 2_000_000).burst == Int64(64 * 1024))
        #expect(Shape(rate: 50_000_000).burst == 250_000)
        #expect(Shape(latency: .milliseconds(1)).burst == nil)
    }

    // MARK: - Token bucket

    static let start = ContinuousClock.now

    @Test func theBurstPassesAtOnceThenTheDeficitIsWaitedOnce() {
        var bucket = TokenBucket(rate: 1_000, burst: 100, now: Self.start)
        #expect(bucket.take(100, at: Self.start) == .zero)
        // One wait sized to the whole deficit, however large the call.
        #expect(bucket.take(2_000, at: Self.start) == .seconds(2))
        // Once waited out, the next bytes owe only their own time.
        #expect(bucket.take(500, at: Self.start + .seconds(2)) == .milliseconds(500))
    }

    @Test func aLargeFirstTakeOwesAllButTheBurst() {
        var bucket = TokenBucket(rate: 2_000_000, burst: 65_536, now: Self.start)
        #expect(bucket.take(65_536 + 2_000_000, at: Self.start) == .seconds(1))
    }

    @Test func anIdleMomentEarnsAtMostTheBurst() {
        var bucket = TokenBucket(rate: 1_000, burst: 100, now: Self.start)
        #expect(bucket.take(100, at: Self.start) == .zero)
        let later = Self.start + .seconds(60)
        #expect(bucket.take(100, at: later) == .zero)
        #expect(bucket.take(1, at: later) == .milliseconds(1))
    }

    @Test func aCallerSlowerThanTheRateNeverWaits() {
        var bucket = TokenBucket(rate: 1_000, burst: 100, now: Self.start)
        for step in 1...100 {
            // 10 bytes every 20 ms is half the rate.
            #expect(bucket.take(10, at: Self.start + .milliseconds(20 * step)) == .zero)
        }
    }

    @Test func waitsAddUpToTheBytesBeyondTheBurstOverTheRate() {
        var bucket = TokenBucket(rate: 1_000_000, burst: 65_536, now: Self.start)
        var now = Self.start
        var total = Duration.zero
        var generator = SystemRandomNumberGenerator()
        var bytes = 0
        for _ in 0..<200 {
            let count = Int.random(in: 1...300_000, using: &generator)
            bytes += count
            let wait = bucket.take(count, at: now)
            total += wait
            now += wait
        }
        let expected = Duration.nanoseconds((bytes - 65_536) * 1_000)
        // Each wait is rounded up to a whole nanosecond.
        #expect(total >= expected && total <= expected + .nanoseconds(200))
    }

    // MARK: - A connection's waits

    /// A shape on the waits-only clock, so that the waits do not depend on the machine.
    static func shape(rate: Int64?, latency: Duration) -> Shape {
        var shape = Shape(rate: rate, latency: latency)
        shape.clock = .waitsOnly
        return shape
    }

    @Test func bothDirectionsArePacedIndependently() {
        var shaper = ConnectionShaper(Self.shape(rate: 1_000_000, latency: .zero), handshakes: 1)
        // Reading a second's worth beyond the burst costs the reader a second...
        #expect(shaper.received(65_536 + 1_000_000) == .seconds(1))
        // ...and leaves the writer's burst untouched.
        #expect(shaper.sending(65_536) == .init(latency: .zero, rate: .zero))
        #expect(shaper.sending(500_000) == .init(latency: .zero, rate: .milliseconds(500)))
        // While the writer waited, the reader's bucket refilled.
        #expect(shaper.received(65_536) == .zero)
    }

    @Test func eachAnswerWaitsOneRoundTripAndTheFirstOneTheHandshakesToo() {
        var plain = ConnectionShaper(Self.shape(rate: nil, latency: .milliseconds(10)), handshakes: 1)
        #expect(plain.received(300) == .zero)
        // TCP's handshake, then the request's round trip.
        #expect(plain.sending(100) == .init(latency: .milliseconds(20), rate: .zero))
        // The rest of the same answer flows on.
        #expect(plain.sending(100_000) == .init(latency: .zero, rate: .zero))
        // A request read ahead earlier is answered a round trip later too.
        plain.heardRequest()
        #expect(plain.sending(100).latency == .milliseconds(10))
        // `100 Continue`, then the body, then the answer: two round trips, as on a network.
        plain.heardRequest()
        #expect(plain.sending(25).latency == .milliseconds(10))
        #expect(plain.received(1_000) == .zero)
        #expect(plain.sending(100).latency == .milliseconds(10))

        var tls = ConnectionShaper(Self.shape(rate: nil, latency: .milliseconds(10)), handshakes: 2)
        tls.heardRequest()
        #expect(tls.sending(100).latency == .milliseconds(30))
    }

    @Test func theLatencyAndTheRateAddUpInOneWait() {
        var shaper = ConnectionShaper(Self.shape(rate: 1_000_000, latency: .milliseconds(10)), handshakes: 0)
        shaper.heardRequest()
        // The bucket refills during the latency: 10 ms earns 10,000 bytes, but it is already full.
        let waits = shaper.sending(65_536 + 100_000)
        #expect(waits == .init(latency: .milliseconds(10), rate: .milliseconds(100)))
        #expect(waits.total == .milliseconds(110))
    }
}
