import HTTPClient
import Synchronization

/// One credential's access token, shared by every copy of its ``StorageAuthorization`` and
/// every ``Storage`` using it: handed out while fresh, and replaced by one exchange however
/// many operations need a new one at once.
///
/// Single flight: the first caller that finds no fresh token starts an exchange as a task
/// of its own; every caller until it ends waits for that exchange. A waiter whose task is
/// cancelled leaves at once with ``StorageErrorCode/cancelled``, and one whose
/// ``TokenRequestContext/deadline`` passes leaves then with an error carrying
/// ``RetryTimeRanOut``, while the exchange goes on for the others; only when the last
/// waiter has left is the exchange cancelled (nobody wants its token). Continuations are
/// resumed outside the lock.
final class TokenCache: Sendable {
    /// Performs one exchange with what the caller that started it brought (its transport,
    /// its retry time).
    typealias Exchange = @Sendable (_ context: TokenRequestContext) async throws(StorageError) -> AccessToken

    private typealias Waiter = CheckedContinuation<Result<AccessToken, StorageError>, Never>

    private struct InFlight {
        let id: UInt64
        var task: Task<Void, Never>?
        var waiters: [UInt64: Waiter] = [:]
    }

    private struct State {
        var token: AccessToken?
        var inFlight: InFlight?
        var nextID: UInt64 = 0
        var exchanges = 0

        mutating func makeID() -> UInt64 {
            nextID += 1
            return nextID
        }
    }

    /// What a caller does once it has let go of the lock.
    private enum Action {
        case resume(Waiter, Result<AccessToken, StorageError>)
        case start(exchangeID: UInt64)
        case wait
    }

    private let exchange: Exchange
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())

    /// - Parameters:
    ///   - now: The clock freshness is judged by (tests move it).
    ///   - exchange: Fetches a new token.
    init(
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        exchange: @escaping Exchange
    ) {
        self.now = now
        self.exchange = exchange
    }

    /// How many exchanges have started (for tests).
    var exchangeCount: Int { state.withLock { $0.exchanges } }

    /// How many callers wait for the exchange in flight (for tests).
    var waiterCount: Int { state.withLock { $0.inFlight?.waiters.count ?? 0 } }

    /// A fresh token: the cached one, or the result of the exchange in flight, or of a new one.
    ///
    /// - Parameters:
    ///   - context: What an exchange this call starts uses.
    ///   - stale: A token the server refused (HTTP 401): if the cache still holds it, it is
    ///     dropped and a new one fetched; if the cache holds another (someone already
    ///     replaced it), that one is returned. So N operations refused at once for the same
    ///     token cause one exchange, not N.
    /// - Throws: The exchange's error; ``StorageErrorCode/cancelled`` when the calling task is
    ///   cancelled, and an error carrying ``RetryTimeRanOut`` when the context's deadline
    ///   passes first (the exchange goes on for the other waiters).
    func token(
        context: TokenRequestContext, replacing stale: String? = nil
    ) async throws(StorageError) -> AccessToken {
        let id = state.withLock { $0.makeID() }
        // Leaves at the deadline as a cancel would. Sleeping never ends early, so a timer that
        // fires before the waiter is registered finds it past the deadline there (checked below).
        let timer = context.deadline.map { deadline in
            Task { [weak self] in
                guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                self?.leave(id, with: Self.deadlinePassed)
            }
        }
        defer { timer?.cancel() }
        let result: Result<AccessToken, StorageError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                let action = state.withLock { state -> Action in
                    if let stale, state.token?.value == stale { state.token = nil }
                    if let token = state.token, token.isFresh(at: now()) {
                        return .resume(continuation, .success(token))
                    }
                    // Checked under the lock: a cancellation handler or timer that runs later finds the waiter.
                    if Task.isCancelled { return .resume(continuation, .failure(.cancelled())) }
                    if let deadline = context.deadline, ContinuousClock.now >= deadline {
                        return .resume(continuation, .failure(Self.deadlinePassed))
                    }
                    if state.inFlight != nil {
                        state.inFlight?.waiters[id] = continuation
                        return .wait
                    }
                    let exchangeID = state.makeID()
                    state.inFlight = InFlight(id: exchangeID, waiters: [id: continuation])
                    state.exchanges += 1
                    return .start(exchangeID: exchangeID)
                }
                switch action {
                case .resume(let waiter, let result):
                    waiter.resume(returning: result)
                case .wait:
                    break
                case .start(let exchangeID):
                    start(exchangeID, context: context)
                }
            }
        } onCancel: {
            leave(id, with: .cancelled())
        }
        return try result.get()
    }

    /// The error of a caller whose deadline passed while it waited.
    private static var deadlinePassed: StorageError {
        RetryTimeRanOut.error(during: "the wait for an access token")
    }

    /// Forgets the cached token (tests; a credential that learned it is revoked).
    func invalidate() {
        state.withLock { $0.token = nil }
    }

    private func start(_ exchangeID: UInt64, context: TokenRequestContext) {
        let task = Task { [exchange] in
            let result: Result<AccessToken, StorageError>
            do throws(StorageError) {
                result = .success(try await exchange(context))
            } catch {
                result = .failure(error)
            }
            self.finish(exchangeID, with: result)
        }
        let orphaned = state.withLock { state -> Bool in
            guard state.inFlight?.id == exchangeID else { return true }
            state.inFlight?.task = task
            return false
        }
        // Every waiter left before the task was recorded: nobody wants its token.
        if orphaned { task.cancel() }
    }

    private func finish(_ exchangeID: UInt64, with result: Result<AccessToken, StorageError>) {
        let waiters = state.withLock { state -> [Waiter] in
            guard let inFlight = state.inFlight, inFlight.id == exchangeID else { return [] }
            state.inFlight = nil
            if case .success(let token) = result { state.token = token }
            return Array(inFlight.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    /// Ends the wait of caller `id` with `error`, if it still waits; cancels the exchange when
    /// nobody else does.
    private func leave(_ id: UInt64, with error: StorageError) {
        let (waiter, abandoned) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
            guard let waiter = state.inFlight?.waiters.removeValue(forKey: id) else { return (nil, nil) }
            guard state.inFlight?.waiters.isEmpty == true else { return (waiter, nil) }
            let task = state.inFlight?.task
            state.inFlight = nil
            return (waiter, task)
        }
        abandoned?.cancel()
        waiter?.resume(returning: .failure(error))
    }
}
