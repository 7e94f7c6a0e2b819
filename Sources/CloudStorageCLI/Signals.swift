import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    static let ignoredAtStart: Set<Int32> = Set([SIGINT, SIGTERM].filter(isIgnored))

    /// Whether `number`'s disposition is `SIG_IGN` now; asked without changing it.
    static func isIgnored(_ number: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(number, nil, &current) == 0 else { return false }
        #if canImport(Darwin)
        let handler = current.__sigaction_u.__sa_handler
        #else
        let handler = current.__sigaction_handler.sa_handler
        #endif
        return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }

    init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        let signals = signals.filter { !Self.ignoredAtStart.contains($0) }
        restorers = signals.map { number in
            let earlier = signal(number, SIG_IGN)
            return { _ = signal(number, earlier) }
        }
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
