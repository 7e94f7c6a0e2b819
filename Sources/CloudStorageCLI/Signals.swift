import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Delivers SIGINT and SIGTERM to a handler instead of ending the process,
/// so a Ctrl-C can stop things cleanly. Keep the value alive while handling.
///
/// When the value goes away the signals get back the disposition they had,
/// so a process that runs commands in-process (the tests do) still stops on
/// Ctrl-C afterwards.
final class SignalHandler {
    private let sources: [any DispatchSourceSignal]
    /// Put back each signal's earlier disposition (whose C type differs between platforms).
    private let restorers: [() -> Void]

    init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
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
