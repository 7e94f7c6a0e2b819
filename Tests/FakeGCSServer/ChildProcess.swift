import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A program the tests start with `posix_spawn`: the one way every test suite and helper here
/// starts another process.
///
/// Not Foundation's `Process`. Its `run()` lists `/proc/self/fd` to find the descriptors to
/// close and copies each directory entry's whole 256-byte `d_name`, reading past the end of
/// glibc's buffer when an entry sits at its tail (swiftlang/swift-corelibs-foundation#5472):
/// with the suite's thousand-odd descriptors open beside it, that crashed the test process
/// (SIGSEGV in `memcpy`) on CI. It is also reported to close descriptors other threads own
/// (swiftlang/swift#57827).
///
/// Here the child inherits only the three standard descriptors chosen by the caller (`closefrom`
/// 3 where glibc has it), starts with SIGINT and SIGTERM at their defaults and no signal
/// blocked, as a shell starts a foreground command (the test process may be ignoring them just
/// then), and gets exactly the environment given: nothing is inherited.
public final class ChildProcess: @unchecked Sendable {  // SAFETY: `status` is only touched under `lock`.
    /// Where one of the child's standard descriptors goes.
    public enum Stream: Sendable {
        /// /dev/null.
        case null
        /// A file, created or truncated (for output) or read (for input).
        case file(String)
        /// A descriptor of this process (a pipe's end), duplicated into the child; the caller
        /// closes its own copy once the child started.
        case descriptor(Int32)
        /// Standard error only: wherever standard output goes.
        case standardOutput
    }

    /// How the child ended.
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    /// The child's process identifier.
    public let processIdentifier: Int32
    private let lock = NSLock()
    /// The raw wait status, once reaped.
    private var status: Int32?

    /// Starts `executable` with `arguments` and exactly `environment`.
    ///
    /// - Throws: `POSIXError` when it cannot be started.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String],
        input: Stream = .null, output: Stream = .null, errors: Stream = .null
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        Self.add(input, as: 0, to: &actions)
        Self.add(output, as: 1, to: &actions)
        Self.add(errors, as: 2, to: &actions)
        // glibc 2.34+ (not in Swift's Glibc module): nothing else is inherited, not even the
        // descriptors of other tests that lack O_CLOEXEC (a pipe's end would stay open in the child).
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGPIPE)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let code = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard code == 0 else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EINVAL) }
        processIdentifier = pid
    }

    private static func add(_ stream: Stream, as target: Int32, to actions: inout posix_spawn_file_actions_t) {
        switch stream {
        case .null:
            posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
        case .file(let path):
            let flags = target == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
            posix_spawn_file_actions_addopen(&actions, target, path, flags, 0o600)
        case .descriptor(let fd):
            posix_spawn_file_actions_adddup2(&actions, fd, target)
        case .standardOutput:
            posix_spawn_file_actions_adddup2(&actions, 1, target)
        }
    }

    /// Makes a pipe whose ends are closed on exec, so that no other child inherits them: hand
    /// one end to a child with ``Stream/descriptor(_:)``, then close it here.
    public static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        return (fds[0], fds[1])
    }

    /// The raw wait status if the child has ended, reaping it (after waiting for its end when
    /// `blocking`). Reaping happens under the lock, so ``send(_:)`` never signals a reaped pid.
    private func reap(blocking: Bool) -> Int32? {
        if blocking {
            // Waits for the end without reaping; ECHILD when another caller reaped it already.
            var info = siginfo_t()
            while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        }
        return lock.withLock { () -> Int32? in
            if let status { return status }
            var raw: Int32 = 0
            while true {
                let result = waitpid(processIdentifier, &raw, WNOHANG)
                if result == processIdentifier {
                    status = raw
                    return raw
                }
                if result < 0 && errno == EINTR { continue }
                return nil
            }
        }
    }

    /// Whether the child has not ended yet.
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// Blocks until the child has ended. Call it on a thread of its own or a dispatch thread,
    /// never on Swift's cooperative pool (see ``exited()``).
    public func waitUntilExit() { _ = reap(blocking: true) }

    /// Waits, on a dispatch thread, until the child has ended.
    public func exited() async {
        _ = try? await BlockingWork.run { [self] in waitUntilExit() }
    }

    /// The exit status, or the signal that ended the child; -1 while it runs.
    public var terminationStatus: Int32 {
        guard let status = reap(blocking: false) else { return -1 }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    /// Whether the child exited or was ended by a signal.
    public var terminationReason: TerminationReason {
        (reap(blocking: false) ?? 0) & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    /// Sends `signal` to the child while it has not been reaped (so a recycled pid is never hit).
    public func send(_ signal: Int32) {
        lock.withLock {
            if status == nil { _ = kill(processIdentifier, signal) }
        }
    }
}
