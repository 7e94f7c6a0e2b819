import Synchronization

/// Delivers one publisher's elements to any number of `for await` loops.
///
/// The upload task publishes its snapshots here, and every access to its
/// snapshot stream calls ``subscribe()`` for a fresh stream (design decision 7).
/// Each subscriber has a mailbox of its own: a queue of undelivered elements
/// and the consumer waiting for the next one. Publishing appends to every
/// mailbox under one lock and resumes waiting consumers after unlocking, so
/// publishers never run consumer code and never wait for a slow consumer.
///
/// ```swift
/// let broadcast = SnapshotBroadcast(initial: snapshot)
/// let stream = broadcast.subscribe()        // nothing after this can be missed
/// broadcast.publishStatus(running, progressEpoch: 1)
/// broadcast.publishProgress(halfway, epoch: 1)
/// broadcast.finish(with: success)
/// for await snapshot in stream { … }        // snapshot, running, halfway, success
/// ```
///
/// Ordering rules:
/// - A stream first yields the element that was ``latest`` when ``subscribe()``
///   returned (the initial element, the latest status or progress, or the
///   terminal element), then every element published after that call returned.
/// - Per subscriber, elements arrive in publish order. Publishes that race on
///   different threads are ordered by the lock: every subscriber sees them in
///   the same order.
/// - Status elements and the terminal element are never dropped.
/// - Progress may be coalesced: when a subscriber's undelivered queue ends with
///   a progress element, a newer progress element replaces it. A slow consumer
///   therefore sees at most one pending progress between two statuses, always
///   the newest, and its queue holds at most one progress element per status
///   change: memory grows with status changes, never with progress volume.
/// - Progress is accepted only for the epoch named by the last
///   ``publishStatus(_:progressEpoch:)`` (none before the first one), so a
///   worker that was already paused or replaced cannot publish progress after
///   the status that stopped it.
///
/// Termination rules:
/// - ``finish(with:)`` publishes the terminal element, and every stream
///   finishes (its iterator returns `nil`) right after yielding it. Only the
///   first call has an effect; later publishes are ignored.
/// - ``subscribe()`` after ``finish(with:)`` returns a stream that yields the
///   terminal element and finishes.
/// - A consumer whose task is cancelled gets `nil` at once (even if elements
///   were pending) and its subscriber is removed.
/// - A stream that is released (never iterated, or abandoned part way)
///   removes its subscriber when the last copy of it and its iterators goes.
/// - Calling `next()` concurrently on one stream is not supported; it does
///   not crash, each element goes to one of the callers, and every caller
///   returns once the stream has finished.
final class SnapshotBroadcast<Element: Sendable>: Sendable {
    private let state: Mutex<State>

    /// Creates a broadcast whose ``latest`` element is `initial`.
    ///
    /// - Parameter initial: The first element every subscriber gets until
    ///   something is published. It counts as a status (it is never coalesced).
    init(initial: Element) {
        self.state = Mutex(State(initial: initial, progressEpoch: nil))
    }

    /// Creates a broadcast whose ``latest`` element is `initial`, a status
    /// that already accepts progress for `progressEpoch` (as if it had been
    /// published with ``publishStatus(_:progressEpoch:)``).
    init(initial: Element, progressEpoch: UInt64) {
        self.state = Mutex(State(initial: initial, progressEpoch: progressEpoch))
    }

    /// The most recent element published (status or progress, or the terminal one).
    var latest: Element {
        state.withLock { $0.latest }
    }

    /// The number of live subscribers: streams that have not finished, been
    /// cancelled, or been released. For tests and leak checks.
    var subscriberCount: Int {
        state.withLock { $0.subscribers.count }
    }

    /// The number of undelivered elements queued for each live subscriber.
    /// A test hook: it shows that coalescing bounds memory.
    var pendingCounts: [Int] {
        state.withLock { state in state.subscribers.values.map(\.queue.count) }
    }

    /// The number of `next()` calls suspended waiting for an element.
    /// A test hook: it lets tests cancel a consumer that is certainly waiting.
    var waitingCount: Int {
        state.withLock { state in state.subscribers.values.reduce(0) { $0 + $1.waiters.count } }
    }

    /// Returns a new stream that yields ``latest`` first, then every later element.
    ///
    /// The subscriber is registered before this returns, without suspending,
    /// so nothing published after the call can be missed.
    ///
    /// - Returns: A stream that finishes right after the terminal element, when
    ///   the consuming task is cancelled, or never if nobody finishes the
    ///   broadcast. Releasing it unregisters the subscriber.
    func subscribe() -> AsyncStream<Element> {
        subscribe { $0 }
    }

    /// Returns a new stream like ``subscribe()`` whose elements pass through
    /// `transform` as they are yielded.
    ///
    /// What the broadcast keeps (``latest``, queued elements) stays free of
    /// whatever `transform` adds, so an owner can attach a reference to itself
    /// to each element without the broadcast holding that reference.
    ///
    /// - Parameter transform: Applied to every element a consumer receives.
    /// - Returns: The stream, with the same rules as ``subscribe()``.
    func subscribe<Output: Sendable>(
        _ transform: @escaping @Sendable (Element) -> Output
    ) -> AsyncStream<Output> {
        switch state.withLock({ $0.subscribe() }) {
        case .subscribed(let id):
            // The token is captured by both closures, which the stream's storage
            // owns, so the token (and with it the subscriber) lives exactly as
            // long as the stream or one of its iterators. `onCancel` runs when
            // the task calling `next()` is cancelled (also if it already was);
            // the stream then returns nil for good. Tests pin both behaviours.
            let subscription = Subscription(broadcast: self, id: id)
            return AsyncStream(
                unfolding: { await subscription.next().map(transform) },
                onCancel: { subscription.cancel() }
            )
        case .finished(let terminal):
            let (stream, continuation) = AsyncStream.makeStream(
                of: Output.self,
                bufferingPolicy: .bufferingNewest(1)
            )
            continuation.yield(transform(terminal))
            continuation.finish()
            return stream
        }
    }

    /// Publishes a status change, which no subscriber ever misses.
    ///
    /// Ignored after ``finish(with:)``.
    ///
    /// - Parameters:
    ///   - element: The new status; it becomes ``latest``.
    ///   - progressEpoch: The epoch whose progress is accepted from now on, or
    ///     `nil` to accept none (while paused, for example).
    func publishStatus(_ element: Element, progressEpoch: UInt64?) {
        let resumptions = state.withLock { $0.publishStatus(element, progressEpoch: progressEpoch) }
        resume(resumptions)
    }

    /// Publishes progress, which may be coalesced with other progress.
    ///
    /// Ignored unless `epoch` is the one named by the last
    /// ``publishStatus(_:progressEpoch:)``, and ignored after ``finish(with:)``.
    ///
    /// - Parameters:
    ///   - element: The progress; if accepted, it becomes ``latest``.
    ///   - epoch: The epoch of the worker that measured it.
    func publishProgress(_ element: Element, epoch: UInt64) {
        let resumptions = state.withLock { $0.publishProgress(element, epoch: epoch) }
        resume(resumptions)
    }

    /// Publishes the terminal element and finishes every stream right after it.
    ///
    /// - Parameter terminal: The last element; it becomes ``latest`` for good.
    /// - Returns: `true` for the first call; `false`, having done nothing, after that.
    @discardableResult
    func finish(with terminal: Element) -> Bool {
        let (finished, resumptions) = state.withLock { $0.finish(with: terminal) }
        resume(resumptions)
        return finished
    }

    // MARK: - Consumer side

    /// Returns the next element for subscriber `id`, waiting if there is none
    /// yet; `nil` once the subscriber has finished or been removed.
    private func next(for id: UInt64) async -> Element? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
            if let resumption = state.withLock({ $0.next(for: id, continuation: continuation) }) {
                resumption.perform()
            }
        }
    }

    /// Removes subscriber `id` and ends its waiting `next()` calls. Idempotent.
    private func unsubscribe(_ id: UInt64) {
        let waiters = state.withLock { $0.remove(id) }
        for waiter in waiters {
            waiter.resume(returning: nil)
        }
    }

    private func resume(_ resumptions: [Resumption]) {
        for resumption in resumptions {
            resumption.perform()
        }
    }

    /// Ties a subscriber's registration to the lifetime of its stream.
    private final class Subscription: Sendable {
        let broadcast: SnapshotBroadcast<Element>
        let id: UInt64

        init(broadcast: SnapshotBroadcast<Element>, id: UInt64) {
            self.broadcast = broadcast
            self.id = id
        }

        deinit {
            broadcast.unsubscribe(id)
        }

        func next() async -> Element? {
            await broadcast.next(for: id)
        }

        func cancel() {
            broadcast.unsubscribe(id)
        }
    }
}

// MARK: - State machine

extension SnapshotBroadcast {
    /// A continuation to resume, decided under the lock and performed after it.
    struct Resumption {
        let continuation: CheckedContinuation<Element?, Never>
        let element: Element?

        func perform() {
            continuation.resume(returning: element)
        }
    }

    /// What ``State/subscribe()`` decided.
    enum Subscribed {
        case subscribed(id: UInt64)
        case finished(terminal: Element)
    }

    /// One undelivered element.
    struct Entry {
        let element: Element
        /// Progress entries may be replaced by newer progress; others never are.
        let isProgress: Bool
    }

    /// A subscriber's undelivered elements and suspended consumers.
    ///
    /// Invariant: `queue` is empty whenever `waiters` is not, because a
    /// consumer only waits on an empty queue and a delivery goes to a waiting
    /// consumer first.
    struct Mailbox {
        var queue: Queue
        var waiters: [CheckedContinuation<Element?, Never>] = []
        /// The terminal element is in `queue`: remove the subscriber once it is taken.
        var isTerminated = false

        mutating func deliver(_ entry: Entry, into resumptions: inout [Resumption]) {
            if !waiters.isEmpty {
                resumptions.append(Resumption(continuation: waiters.removeFirst(), element: entry.element))
            } else if entry.isProgress, queue.last?.isProgress == true {
                queue.replaceLast(with: entry)
            } else {
                queue.append(entry)
            }
        }
    }

    /// A first-in first-out queue with O(1) amortized append and removal.
    struct Queue {
        private var storage: [Entry]
        private var head = 0

        init(_ first: Entry) {
            storage = [first]
        }

        var count: Int { storage.count - head }

        var last: Entry? { head < storage.count ? storage[storage.count - 1] : nil }

        mutating func append(_ entry: Entry) {
            storage.append(entry)
        }

        mutating func replaceLast(with entry: Entry) {
            storage[storage.count - 1] = entry
        }

        mutating func popFirst() -> Entry? {
            guard head < storage.count else { return nil }
            let entry = storage[head]
            head += 1
            if head == storage.count {
                storage.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 16, head * 2 >= storage.count {
                // Compact, so taken entries neither pin memory nor their elements.
                storage.removeFirst(head)
                head = 0
            }
            return entry
        }
    }

    /// Everything the lock protects; pure, so it can be reasoned about (and
    /// tested) without threads. Every mutation returns the continuations to
    /// resume instead of resuming them.
    struct State {
        private(set) var latest: Element
        private var latestIsProgress = false
        private var progressEpoch: UInt64?
        private var isFinished = false
        private(set) var subscribers: [UInt64: Mailbox] = [:]
        private var nextID: UInt64 = 0

        init(initial: Element, progressEpoch: UInt64?) {
            latest = initial
            self.progressEpoch = progressEpoch
        }

        mutating func subscribe() -> Subscribed {
            if isFinished {
                return .finished(terminal: latest)
            }
            let id = nextID
            nextID += 1
            subscribers[id] = Mailbox(queue: Queue(Entry(element: latest, isProgress: latestIsProgress)))
            return .subscribed(id: id)
        }

        mutating func publishStatus(_ element: Element, progressEpoch: UInt64?) -> [Resumption] {
            guard !isFinished else { return [] }
            self.progressEpoch = progressEpoch
            return publish(Entry(element: element, isProgress: false))
        }

        mutating func publishProgress(_ element: Element, epoch: UInt64) -> [Resumption] {
            guard !isFinished, progressEpoch == epoch else { return [] }
            return publish(Entry(element: element, isProgress: true))
        }

        mutating func finish(with terminal: Element) -> (Bool, [Resumption]) {
            guard !isFinished else { return (false, []) }
            isFinished = true
            progressEpoch = nil
            latest = terminal
            latestIsProgress = false
            var resumptions: [Resumption] = []
            var drained: [UInt64] = []
            for (id, mailbox) in subscribers where !mailbox.waiters.isEmpty {
                // The queue is empty (Mailbox invariant): the first waiter takes
                // the terminal element, any other concurrent caller ends.
                resumptions.append(Resumption(continuation: mailbox.waiters[0], element: terminal))
                for waiter in mailbox.waiters.dropFirst() {
                    resumptions.append(Resumption(continuation: waiter, element: nil))
                }
                drained.append(id)
            }
            for id in drained {
                subscribers[id] = nil
            }
            for index in subscribers.values.indices {
                subscribers.values[index].queue.append(Entry(element: terminal, isProgress: false))
                subscribers.values[index].isTerminated = true
            }
            return (true, resumptions)
        }

        /// Takes the next element for subscriber `id`, or stores `continuation`
        /// to receive it. Returns the resumption to perform now, if any.
        mutating func next(
            for id: UInt64,
            continuation: CheckedContinuation<Element?, Never>
        ) -> Resumption? {
            guard let index = subscribers.index(forKey: id) else {
                // Finished, cancelled or released: the stream is over.
                return Resumption(continuation: continuation, element: nil)
            }
            // Mutated through `values[index]`, in place: no copy of the queue.
            if let entry = subscribers.values[index].queue.popFirst() {
                if subscribers.values[index].isTerminated, subscribers.values[index].queue.count == 0 {
                    subscribers.remove(at: index)
                }
                return Resumption(continuation: continuation, element: entry.element)
            }
            subscribers.values[index].waiters.append(continuation)
            return nil
        }

        /// Removes subscriber `id`, returning its suspended consumers to end.
        mutating func remove(_ id: UInt64) -> [CheckedContinuation<Element?, Never>] {
            subscribers.removeValue(forKey: id)?.waiters ?? []
        }

        private mutating func publish(_ entry: Entry) -> [Resumption] {
            latest = entry.element
            latestIsProgress = entry.isProgress
            var resumptions: [Resumption] = []
            for index in subscribers.values.indices {
                subscribers.values[index].deliver(entry, into: &resumptions)
            }
            return resumptions
        }
    }
}
