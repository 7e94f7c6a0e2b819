import Foundation
import Synchronization
import Testing

@testable import CloudStorage
@testable import HTTPClient

/// The token cache on its own: exchanges are closures the tests hold until they decide, so
/// nothing depends on timing.
@Suite("Token cache: single flight, refresh margin, stale tokens, cancellation", .timeLimit(.minutes(10)))
struct TokenCacheTests {
    /// An exchange that counts its calls and, when gated, waits until the test opens the gate.
    final class ScriptedExchange: Sendable {
        private struct State {
            var calls = 0
            var gateOpen: Bool
            var parked: [CheckedContinuation<Void, Never>] = []
            var outcomes: [Result<String, StorageError>] = []
        }

        private let state: Mutex<State>
        let lifetime: Duration
        let cancelledExchanges = Atomic(0)

        init(gated: Bool = false, lifetime: Duration = .seconds(3600), outcomes: [Result<String, StorageError>] = []) {
            state = Mutex(State(gateOpen: !gated, outcomes: outcomes))
            self.lifetime = lifetime
        }

        var calls: Int { state.withLock { $0.calls } }

        func open() {
            let parked = state.withLock { state in
                state.gateOpen = true
                defer { state.parked = [] }
                return state.parked
            }
            for continuation in parked { continuation.resume() }
        }

        /// token-1, token-2, … unless an outcome was scripted for this call.
        func run(now: ContinuousClock.Instant) async throws(StorageError) -> AccessToken {
            let (call, scripted) = state.withLock { state -> (Int, Result<String, StorageError>?) in
                state.calls += 1
                return (state.calls, state.outcomes.isEmpty ? nil : state.outcomes.removeFirst())
            }
            await withCheckedContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    if !state.gateOpen { state.parked.append(continuation) }
                    return state.gateOpen
                }
                if open { continuation.resume() }
            }
            if Task.isCancelled {
                cancelledExchanges.add(1, ordering: .relaxed)
                throw .cancelled()
            }
            let value = try (scripted ?? .success("token-\(call)")).get()
            return AccessToken(value: value, lifetime: lifetime, issued: now)
        }
    }

    /// A clock the test moves by hand.
    final class ManualClock: Sendable {
        let origin = ContinuousClock.now
        private let offset = Mutex(Duration.zero)
        var now: ContinuousClock.Instant { origin + offset.withLock { $0 } }
        func advance(_ by: Duration) { offset.withLock { $0 += by } }
    }

    static let context = TokenRequestContext(
        transport: URLSessionTransport.shared, requestTimeout: .seconds(5),
        retryBackoff: RetryBackoff(configuration: StorageConfiguration(), operation: .other))

    static func cache(_ exchange: ScriptedExchange, clock: ManualClock = ManualClock()) -> TokenCache {
        TokenCache(now: { clock.now }) { _ throws(StorageError) in try await exchange.run(now: clock.now) }
    }

    /// Waits until `condition` holds, yielding between looks. No time bound of its own: the
    /// suite's time limit cancels a test that waits for ever, and that ends the wait.
    static func waitUntil(_ condition: () -> Bool) async throws {
        while !condition() {
            try Task.checkCancellation()
            await Task.yield()
        }
    }

    @Test("1,000 concurrent callers share one exchange")
    func singleFlight() async throws {
        let exchange = ScriptedExchange(gated: true)
        let cache = Self.cache(exchange)
        async let tokens = withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<1000 {
                group.addTask { try await cache.token(context: Self.context).value }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        // Every caller waits for one exchange (a second one would show as more than one call).
        try await Self.waitUntil { cache.waiterCount == 1000 || exchange.calls > 1 }
        exchange.open()
        let values = try await tokens
        #expect(values.count == 1000)
        #expect(Set(values) == ["token-1"])
        #expect(exchange.calls == 1)
        #expect(cache.exchangeCount == 1)
        // Cached afterwards: no exchange at all.
        #expect(try await cache.token(context: Self.context).value == "token-1")
        #expect(exchange.calls == 1)
    }

    @Test("a token is replaced once less than min(4 minutes, half its lifetime) remains")
    func refreshMargin() async throws {
        let clock = ManualClock()
        // One hour: the margin is 4 minutes.
        let hour = ScriptedExchange(lifetime: .seconds(3600))
        let cache = Self.cache(hour, clock: clock)
        #expect(try await cache.token(context: Self.context).value == "token-1")
        clock.advance(.seconds(3600 - 241))
        #expect(try await cache.token(context: Self.context).value == "token-1")
        clock.advance(.seconds(2))
        #expect(try await cache.token(context: Self.context).value == "token-2")

        // Five minutes: half the lifetime (150 s) is the margin, not 4 minutes.
        let short = ScriptedExchange(lifetime: .seconds(300))
        let shortClock = ManualClock()
        let shortCache = Self.cache(short, clock: shortClock)
        #expect(try await shortCache.token(context: Self.context).value == "token-1")
        shortClock.advance(.seconds(149))
        #expect(try await shortCache.token(context: Self.context).value == "token-1")
        shortClock.advance(.seconds(2))
        #expect(try await shortCache.token(context: Self.context).value == "token-2")
    }

    @Test("callers refused with the same stale token cause one exchange; a caller with an old one gets the new token")
    func staleTokenReplacedOnce() async throws {
        let exchange = ScriptedExchange()
        let cache = Self.cache(exchange)
        #expect(try await cache.token(context: Self.context).value == "token-1")
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 {
                group.addTask { try await cache.token(context: Self.context, replacing: "token-1").value }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(values == ["token-2"])
        #expect(exchange.calls == 2)
        // A refusal of a token the cache no longer holds fetches nothing.
        #expect(try await cache.token(context: Self.context, replacing: "token-1").value == "token-2")
        #expect(exchange.calls == 2)
        // Refusing the current one does.
        #expect(try await cache.token(context: Self.context, replacing: "token-2").value == "token-3")
    }

    @Test("a cancelled waiter leaves at once; the exchange goes on for the others")
    func cancelledWaiterLeaves() async throws {
        let exchange = ScriptedExchange(gated: true)
        let cache = Self.cache(exchange)
        let staying = Task { try await cache.token(context: Self.context).value }
        try await Self.waitUntil { cache.waiterCount == 1 }
        let leaving = Task { try await cache.token(context: Self.context).value }
        try await Self.waitUntil { cache.waiterCount == 2 }
        leaving.cancel()
        // Returns while the exchange is still parked: cancellation does not wait for it.
        let error = await #expect(throws: StorageError.self) { try await leaving.value }
        #expect(error?.code == .cancelled)
        #expect(cache.waiterCount == 1)
        exchange.open()
        #expect(try await staying.value == "token-1")
        #expect(exchange.cancelledExchanges.load(ordering: .relaxed) == 0)
        #expect(exchange.calls == 1)
    }

    @Test("when every waiter has left, the exchange is cancelled and the next caller starts a new one")
    func abandonedExchangeCancelled() async throws {
        let exchange = ScriptedExchange(gated: true)
        let cache = Self.cache(exchange)
        let only = Task { try await cache.token(context: Self.context).value }
        try await Self.waitUntil { cache.waiterCount == 1 && exchange.calls == 1 }
        only.cancel()
        let error = await #expect(throws: StorageError.self) { try await only.value }
        #expect(error?.code == .cancelled)
        exchange.open()
        try await Self.waitUntil { exchange.cancelledExchanges.load(ordering: .relaxed) == 1 }
        #expect(try await cache.token(context: Self.context).value == "token-2")
    }

    /// The deadline of a waiter that is in its operation's retry time: it leaves then, as a
    /// cancelled one would, and the exchange goes on for the waiters still there. The
    /// exchange is parked until the test opens it, so only the deadline can end the wait.
    @Test("a waiter whose deadline passes leaves then; the exchange goes on for the others")
    func waiterDeadlinePasses() async throws {
        let exchange = ScriptedExchange(gated: true)
        let cache = Self.cache(exchange)
        let staying = Task { try await cache.token(context: Self.context).value }
        try await Self.waitUntil { cache.waiterCount == 1 }
        let hurried = TokenRequestContext(
            transport: URLSessionTransport.shared, requestTimeout: .seconds(5),
            retryBackoff: RetryBackoff(configuration: StorageConfiguration(), operation: .other),
            deadline: .now + .milliseconds(50))
        let error = await #expect(throws: StorageError.self) { try await cache.token(context: hurried) }
        #expect(error?.underlyingError is RetryTimeRanOut, "\(String(describing: error))")
        #expect(cache.waiterCount == 1)
        exchange.open()
        #expect(try await staying.value == "token-1")
        #expect(exchange.cancelledExchanges.load(ordering: .relaxed) == 0)
        #expect(exchange.calls == 1)
    }

    @Test("a waiter whose deadline passed before it asked never waits")
    func waiterDeadlineAlreadyPassed() async throws {
        let exchange = ScriptedExchange(gated: true)
        let cache = Self.cache(exchange)
        let late = TokenRequestContext(
            transport: URLSessionTransport.shared, requestTimeout: .seconds(5),
            retryBackoff: RetryBackoff(configuration: StorageConfiguration(), operation: .other),
            deadline: .now - .seconds(1))
        let error = await #expect(throws: StorageError.self) { try await cache.token(context: late) }
        #expect(error?.underlyingError is RetryTimeRanOut)
        #expect(exchange.calls == 0)
    }

    @Test("a caller cancelled before it asks never waits")
    func cancelledBeforeAsking() async throws {
        let exchange = ScriptedExchange(gated: true)
        let cache = Self.cache(exchange)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await cache.token(context: Self.context).value
        }
        let error = await #expect(throws: StorageError.self) { try await task.value }
        #expect(error?.code == .cancelled)
        #expect(exchange.calls == 0)
    }

    @Test("a failed exchange fails every waiter and is not cached")
    func failureNotCached() async throws {
        let refusal = StorageError(.unauthenticated, "refused", httpStatus: 400, serverMessage: "Invalid grant")
        let exchange = ScriptedExchange(gated: true, outcomes: [.failure(refusal)])
        let cache = Self.cache(exchange)
        let waiters = (0..<10).map { _ in Task { try await cache.token(context: Self.context).value } }
        try await Self.waitUntil { cache.waiterCount == 10 }
        exchange.open()
        for waiter in waiters {
            let error = await #expect(throws: StorageError.self) { try await waiter.value }
            #expect(error?.serverMessage == "Invalid grant")
        }
        #expect(exchange.calls == 1)
        #expect(try await cache.token(context: Self.context).value == "token-2")
    }

    @Test("an access token's descriptions never show it")
    func tokenRedacted() {
        let token = AccessToken(value: "ya29.SECRET", lifetime: .seconds(60), issued: .now)
        for text in [String(describing: token), String(reflecting: token), "\(token)", Self.dumped(token)] {
            #expect(!text.contains("SECRET"), "\(text)")
        }
    }

    static func dumped(_ value: some Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }
}
