import Dispatch
import Foundation
import Synchronization
import SystemCalls

/// Hands a configuration's events to its handler on a thread of its own, through a bounded
/// buffer, so that whoever emits an event (an I/O thread, a request's task) only takes a lock,
/// appends and signals, and never waits for the handler.
///
/// The thread takes everything buffered at once and delivers it in order. While the handler is
/// busy, at most `capacity` events wait; the ones after are counted, not kept, and the count
/// takes their place in the buffer (one item however many were lost in a row), to be delivered
/// as an ``StorageEvent/Kind/eventsDropped`` event exactly where they would have been.
///
/// The thread ends once the last configuration holding this delivery is gone and the buffer is
/// delivered.
final class StorageEventDelivery: Sendable {
    /// What the thread delivers in order.
    private enum Item: Sendable {
        case event(StorageEvent)
        /// Resumed once every item before it is delivered (``flush()``); never dropped.
        case marker(CheckedContinuation<Void, Never>)
        /// This many events were lost here, the buffer being full.
        case dropped(Int)
    }

    /// The buffer the emitters and the thread share; the thread holds only this, not the delivery.
    private final class Buffer: Sendable {
        struct State {
            var items: [Item] = []
            /// Events in `items` (markers and drop counts do not count toward the capacity; a
            /// drop count follows an event or a marker, so there are at most as many).
            var events = 0
            var closed = false
        }

        let state = Mutex(State())
        let wake = DispatchSemaphore(value: 0)
        let capacity: Int

        init(capacity: Int) { self.capacity = capacity }
    }

    let handler: any StorageEventHandler
    private let buffer: Buffer

    var capacity: Int { buffer.capacity }

    /// Starts the delivery thread.
    ///
    /// - Parameters:
    ///   - handler: Who receives the events.
    ///   - capacity: How many events may wait while the handler is busy; at least 1.
    init(handler: any StorageEventHandler, capacity: Int) {
        self.handler = handler
        buffer = Buffer(capacity: capacity)
        Thread.start(named: "storage-events") { [buffer, handler] in Self.deliver(buffer, to: handler) }
    }

    deinit {
        buffer.state.withLock { $0.closed = true }
        buffer.wake.signal()
    }

    /// Buffers `event` for the handler, or counts it as dropped when the buffer is full. Never waits.
    func emit(_ event: StorageEvent) {
        let buffered = buffer.state.withLock { state -> Bool in
            guard state.events < buffer.capacity else {
                if case .dropped(let count)? = state.items.last {
                    state.items[state.items.count - 1] = .dropped(count + 1)
                } else {
                    state.items.append(.dropped(1))
                }
                return false
            }
            state.items.append(.event(event))
            state.events += 1
            return true
        }
        if buffered { buffer.wake.signal() }
    }

    /// Waits until the handler has returned from every event emitted before this call (except
    /// those dropped).
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            buffer.state.withLock { $0.items.append(.marker(continuation)) }
            buffer.wake.signal()
        }
    }

    /// The delivery thread's loop.
    private static func deliver(_ buffer: Buffer, to handler: any StorageEventHandler) {
        while true {
            buffer.wake.wait()
            let (items, closed) = buffer.state.withLock { state in
                defer {
                    state.items = []
                    state.events = 0
                }
                return (state.items, state.closed)
            }
            for item in items {
                switch item {
                case .event(let event):
                    handler.handle(event)
                case .marker(let continuation):
                    continuation.resume()
                case .dropped(let count):
                    handler.handle(
                        StorageEvent(
                            kind: .eventsDropped, level: .warning, operationID: nil,
                            message: "\(count) events were dropped: the handler fell behind",
                            metadata: ["count": .integer(Int64(count))]))
                }
            }
            if closed { return }
        }
    }
}

/// Emits one operation's events to its configuration's delivery, if it has one; costs a nil
/// check otherwise (the message and metadata are not even built).
struct StorageEventEmitter: Sendable {
    /// Numbers operations across the process.
    private static let lastOperationID = Atomic<UInt64>(0)

    let delivery: StorageEventDelivery?
    let operationID: UInt64?

    /// An emitter for a new operation of a configuration with `delivery`.
    init(newOperationOf delivery: StorageEventDelivery?) {
        self.delivery = delivery
        operationID = delivery.map { _ in Self.lastOperationID.add(1, ordering: .relaxed).newValue }
    }

    /// An emitter for events of no operation.
    init(noOperationOf delivery: StorageEventDelivery?) {
        self.delivery = delivery
        operationID = nil
    }

    /// Whether events go anywhere.
    var isEnabled: Bool { delivery != nil }

    /// Emits an event if a handler is set.
    func emit(
        _ kind: StorageEvent.Kind, _ level: StorageEvent.Level, _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> [String: StorageEvent.Value] = [:]
    ) {
        guard let delivery else { return }
        delivery.emit(
            StorageEvent(kind: kind, level: level, operationID: operationID, message: message(), metadata: metadata()))
    }
}
