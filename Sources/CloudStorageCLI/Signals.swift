import Dispatch
import SystemCalls

/// Delivers SIGINT and SIGTERM to a handler instead of ending the process,
/// so a Ctrl-C can stop things cleanly. Keep the value alive while handling.
///
/// A signal the process was started with ignored stays ignored, as Unix
/// programs do: a shell starts background jobs of a script with SIGINT
/// ignored, so that a Ctrl-C meant for the foreground does not reach them.
///
/// When the value goes away the signals get back the disposition they had,
/// so a process that runs commands in-process (the tests do) still stops on
/// Ctrl-C afterwards.
final class SignalHandler {
    private let sources: [any DispatchSourceSignal]
    /// Put back each signal's earlier disposition (whose C type differs between platforms).
    private let restorers: [() -> Void]

    /// The signals among those handlers take that were ignored when the process started.
    ///
    /// Read once, on first use, which comes before any handler changes a disposition (each
    /// reads it first), so handlers that come and go, or overlap, never mistake one another's
    /// `SIG_IGN` (set while a handler is active) for the parent's choice.
    static let ignoredAtStart: Set<Int32> = Set(
        [ProcessSignal.interrupt, ProcessSignal.terminate].filter(ProcessSignal.isIgnored))

    init(
        _ signals: [Int32] = [ProcessSignal.interrupt, ProcessSignal.terminate],
        handler: @escaping @Sendable (Int32) -> Void
    ) {
        let signals = signals.filter { !Self.ignoredAtStart.contains($0) }
        restorers = signals.map(ProcessSignal.ignore)
        sources = signals.map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    deinit {
        for source in sources {
            source.cancel()
        }
        for restore in restorers {
            restore()
        }
    }
}
