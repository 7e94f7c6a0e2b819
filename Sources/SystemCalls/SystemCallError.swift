/// A system call that failed: which call, and the `errno` it left.
///
/// Callers give it their own meaning (a `StorageError`, an HTTP status, an
/// exit code); the call name makes a log line say what was being attempted.
package struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call, as its manual page names it (`open`, `pwrite`, …).
    package var call: String
    /// The `errno` the call left.
    package var errno: Int32

    /// A failure of `call` with `errno`.
    package init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The system's words for the error (`strerror`).
    package var reason: String { Errno.describe(errno) }

    /// `call: reason`, e.g. `open: No such file or directory`.
    package var description: String { "\(call): \(reason)" }
}
