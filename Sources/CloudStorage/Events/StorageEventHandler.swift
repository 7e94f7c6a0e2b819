/// Receives what the SDK does: requests, retries, upload sessions, tokens, the transport chosen
/// and checksum verdicts, one ``StorageEvent`` at a time.
///
/// Set one with ``StorageConfiguration/Events/setHandler(_:bufferCapacity:)``. The SDK
/// guarantees an implementation that:
/// - ``handle(_:)`` is called on one thread of the SDK's own (named `storage-events`), made for
///   that configuration's events, never on an I/O thread of the transport, never on Swift's cooperative thread pool
///   and never on a task that sends a request. It may block (write to a file, a pipe, a
///   terminal): requests never wait for it;
/// - calls are serial (never two at once), in the order the events happened; in particular
///   each operation's events (those with the same ``StorageEvent/operationID``) arrive in the
///   order that operation emitted them;
/// - when the handler falls behind by more than the buffer's capacity, newer events are
///   dropped, never delayed, and a ``StorageEvent/Kind/eventsDropped`` event then says how
///   many were lost, in their place;
/// - no event carries a secret: no access token or other credential, no upload session URL
///   (a bearer capability), no signed URL signature, no encryption key, no query value but
///   those known to be harmless (see ``StorageEvent/metadata``).
///
/// Like swift-log's `LogHandler`, it is a small protocol with no dependencies, so a few lines
/// bridge it to any logging or metrics system:
///
/// ```swift
/// struct PrintingHandler: StorageEventHandler {
///     func handle(_ event: StorageEvent) {
///         print(event)  // "#3 request GET https://storage.googleapis.com/storage/v1/b/b/o/a: 200 in 41 ms"
///     }
/// }
/// var configuration = StorageConfiguration()
/// try configuration.events.setHandler(PrintingHandler())
/// let storage = Storage(bucket: "my-bucket", configuration: configuration)
/// ```
public protocol StorageEventHandler: Sendable {
    /// Handles one event. Called serially on the SDK's event thread; it may block.
    ///
    /// - Parameter event: What happened.
    func handle(_ event: StorageEvent)
}
