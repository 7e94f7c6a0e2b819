/// Why a socket call failed, before either side gives it its own meaning:
/// the SDK's transport turns it into `HTTPTransportError`, the emulator into
/// `ServerIOError`.
package enum SocketError: Error, Hashable, Sendable {
    /// Nothing could be sent or received within the time allowed.
    case timedOut
    /// The host is not an address this call accepts, or the port is out of range.
    case invalidAddress
    /// A system call failed with this `errno`.
    case system(Int32)

    /// The system's words for `code` (`strerror`).
    package static func describe(_ code: Int32) -> String {
        Errno.describe(code)
    }
}
