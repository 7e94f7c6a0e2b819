import Foundation
import Synchronization

/// A program run under a tiny Python supervisor that ends it when the
/// supervisor's stdin reaches end-of-file.
///
/// We hold the only write end of the supervisor's stdin pipe. Whatever way
/// this process ends (normal exit, crash, `SIGKILL`), the kernel closes that
/// descriptor, the supervisor reads EOF and terminates the program, so the
/// program never outlives us. On Linux the program additionally gets
/// `PR_SET_PDEATHSIG`, so it is killed even if the supervisor itself is killed.
///
/// The supervisor exits as soon as the program does, with the program's
/// status, which lets us see early exits (for example a port taken between
/// choosing and binding it): a thread of its own waits for that.
final class SupervisedProcess: Sendable {
    /// How long the supervisor waits after `SIGTERM` before it sends `SIGKILL`.
    static let gracePeriodSeconds = 3

    /// The supervisor's script; `sys.argv[1:]` is the program and its arguments.
    private static let supervisorScript = #"""
        import os, signal, subprocess, sys, threading

        def die_with_supervisor():
            try:
                import ctypes
                ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            except Exception:
                pass

        extra = {"preexec_fn": die_with_supervisor} if sys.platform.startswith("linux") else {}
        child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, **extra)
        stopping = threading.Lock()

        def kill():
            try:
                child.kill()
            except OSError:
                pass

        def stop(*_):
            if not stopping.acquire(blocking=False):
                return
            try:
                child.terminate()
            except OSError:
                pass
            timer = threading.Timer(GRACE, kill)
            timer.daemon = True
            timer.start()

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, stop)

        def watch_stdin():
            try:
                sys.stdin.buffer.read()
            except Exception:
                pass
            stop()

        threading.Thread(target=watch_stdin, daemon=True).start()
        code = child.wait()
        os._exit(code if code >= 0 else 128 - code)
        """#.replacingOccurrences(of: "GRACE", with: String(gracePeriodSeconds))

    /// How many bytes of the program's stderr are kept for error messages.
    private static let errorTailLimit = 16 * 1024

    private struct State {
        /// The write end of the supervisor's stdin; `nil` once closed.
        var input: FileHandle?
        var exitStatus: Int32?
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        var errorTail: [UInt8] = []
        var errorClosed = false
    }

    private let process: ChildProcess
    private let state: Mutex<State>

    /// The supervisor's process identifier.
    var processIdentifier: Int32 {
        process.processIdentifier
    }

    /// Launches `program` with `arguments` under the supervisor run by `python`.
    ///
    /// Spawning blocks briefly; call this from a dispatch thread.
    ///
    /// - Parameters:
    ///   - python: the command that runs Python 3 (an executable path and leading arguments).
    ///   - program: the program to supervise.
    ///   - arguments: the program's arguments.
    /// - Throws: `FakeGCSServerError` with code `launchFailed` if the supervisor cannot be spawned.
    init(python: [String], program: String, arguments: [String]) throws {
        let launchFailed = { (error: any Error) in
            FakeGCSServerError(
                .launchFailed,
                "could not launch the supervisor `\(python.joined(separator: " "))` for \(program): \(error)")
        }
        let input: (read: Int32, write: Int32)
        let errors: (read: Int32, write: Int32)
        do {
            input = try ChildProcess.makePipe()
            errors = try ChildProcess.makePipe()
        } catch {
            throw launchFailed(error)
        }
        // The child's ends are closed here whatever happens; ours are owned by file handles.
        defer {
            close(input.read)
            close(errors.write)
        }
        let writer = FileHandle(fileDescriptor: input.write, closeOnDealloc: true)
        let reader = FileHandle(fileDescriptor: errors.read, closeOnDealloc: true)
        do {
            process = try ChildProcess(
                python[0], Array(python.dropFirst()) + ["-c", Self.supervisorScript, program] + arguments,
                environment: ProcessInfo.processInfo.environment,
                input: .descriptor(input.read), output: .null, errors: .descriptor(errors.write))
        } catch {
            throw launchFailed(error)
        }
        state = Mutex(State(input: writer))
        let process = process
        let waiter = Thread { [weak self] in
            process.waitUntilExit()
            self?.didExit(status: process.terminationStatus)
        }
        waiter.start()
        let thread = Thread { [weak self] in
            // A dedicated thread may block in read(2); it ends at EOF, once
            // both the supervisor and the program have exited.
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                self?.appendError(chunk)
            }
            try? reader.close()
            self?.state.withLock { $0.errorClosed = true }
        }
        thread.name = "FakeGCSServer stderr"
        thread.start()
    }

    deinit {
        // Closing our stdin write end makes the supervisor stop the program.
        stop()
    }

    /// Whether the supervisor (and so the program) has not exited yet.
    var isRunning: Bool {
        state.withLock { $0.exitStatus == nil }
    }

    /// The supervisor's exit status (the program's, or 128 + signal), once it has exited.
    var exitStatus: Int32? {
        state.withLock { $0.exitStatus }
    }

    /// Asks the supervisor to end the program: closes its stdin and sends it `SIGTERM`.
    ///
    /// Idempotent; returns without waiting (see ``waitForExit()``).
    func stop() {
        let (input, running) = state.withLock { state -> (FileHandle?, Bool) in
            let input = state.input
            state.input = nil
            return (input, state.exitStatus == nil)
        }
        try? input?.close()
        if running, input != nil {
            process.send(SIGTERM)
        }
    }

    /// Closes the supervisor's stdin only, as the kernel does when this process dies.
    func closeInput() {
        let input = state.withLock { state -> FileHandle? in
            let input = state.input
            state.input = nil
            return input
        }
        try? input?.close()
    }

    /// Returns once the supervisor has exited and been reaped.
    func waitForExit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = state.withLock { state -> Bool in
                if state.exitStatus != nil { return true }
                state.exitWaiters.append(continuation)
                return false
            }
            if exited { continuation.resume() }
        }
    }

    /// The last bytes the program wrote to stderr, as text.
    ///
    /// After an exit, waits up to `settle` for the rest of stderr to arrive.
    func errorTail(settle: Duration = .zero) async -> String {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: settle)
        while clock.now < deadline, !state.withLock({ $0.errorClosed }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let bytes = state.withLock { $0.errorTail }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "(no output on stderr)" : text
    }

    private func appendError(_ chunk: Data) {
        state.withLock { state in
            state.errorTail.append(contentsOf: chunk)
            let excess = state.errorTail.count - Self.errorTailLimit
            if excess > 0 {
                state.errorTail.removeFirst(excess)
            }
        }
    }

    private func didExit(status: Int32) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.exitStatus = status
            let waiters = state.exitWaiters
            state.exitWaiters = []
            return waiters
        }
        for waiter in waiters {
            waiter.resume()
        }
    }
}
