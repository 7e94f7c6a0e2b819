extension StorageConfiguration {
    /// Where the SDK reports what it does: a ``StorageEventHandler`` of yours, or nowhere (the
    /// default, which costs nothing).
    ///
    /// Setting a handler starts one thread that delivers this configuration's events to it (see
    /// ``StorageEventHandler`` for the guarantees); copies of the configuration, and every
    /// ``Storage`` made with one, share it. The thread ends when the last of them is gone.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// try configuration.events.setHandler(PrintingHandler(), bufferCapacity: 4096)
    /// ```
    ///
    /// Two values are equal when they deliver to the same thread (the same
    /// ``setHandler(_:bufferCapacity:)`` call), or both deliver nowhere.
    public struct Events: Sendable, Hashable {
        /// The capacity ``setHandler(_:bufferCapacity:)`` uses unless told otherwise.
        public static let defaultBufferCapacity = 1024

        var delivery: StorageEventDelivery?

        /// Creates the default: no handler.
        public init() {}

        /// The handler events go to; nil when they go nowhere.
        public var handler: (any StorageEventHandler)? { delivery?.handler }

        /// How many events may wait while the handler is busy before newer ones are dropped.
        public var bufferCapacity: Int { delivery?.capacity ?? Self.defaultBufferCapacity }

        /// Sends events to `handler` from now on, through a buffer of `bufferCapacity` events.
        ///
        /// ```swift
        /// try configuration.events.setHandler(PrintingHandler())
        /// try configuration.events.setHandler(nil)  // events go nowhere again
        /// ```
        ///
        /// - Parameters:
        ///   - handler: Who receives the events; nil for nobody.
        ///   - bufferCapacity: How many events may wait while the handler is busy; newer ones are
        ///     then dropped and counted (``StorageEvent/Kind/eventsDropped``). At least 1.
        /// - Throws: ``StorageErrorCode/invalidArgument`` for a capacity below 1; the handler is
        ///   then unchanged.
        public mutating func setHandler(
            _ handler: (any StorageEventHandler)?, bufferCapacity: Int = Events.defaultBufferCapacity
        ) throws(StorageError) {
            guard bufferCapacity >= 1 else {
                throw .invalidSetting("events.bufferCapacity", must: "at least 1", is: bufferCapacity)
            }
            delivery = handler.map { StorageEventDelivery(handler: $0, capacity: bufferCapacity) }
        }

        /// Waits until the handler has returned from every event emitted before this call,
        /// except those dropped; at once when there is no handler. For a program that prints
        /// events and is about to exit, or a test.
        ///
        /// ```swift
        /// try await storage.reference(withPath: "a").delete()
        /// await storage.configuration.events.flush()
        /// ```
        public func flush() async {
            await delivery?.flush()
        }

        /// Whether both deliver to the same thread, or both nowhere.
        public static func == (lhs: Events, rhs: Events) -> Bool {
            lhs.delivery === rhs.delivery
        }

        /// Hashes the identity of the delivery thread.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(delivery.map(ObjectIdentifier.init))
        }

        /// An emitter for a new operation.
        func emitter() -> StorageEventEmitter {
            StorageEventEmitter(newOperationOf: delivery)
        }
    }
}
