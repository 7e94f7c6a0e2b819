import NativeTLS
import SystemCalls

/// The TLS layer of one native connection, if it has one, and the buffer its file regions
/// are copied through and large reads land in.
///
/// SAFETY (`@unchecked Sendable`): like the socket it belongs to, it is used
/// by one thread at a time: the I/O thread of the request that holds the
/// connection, or nobody while the connection waits in the pool (the pool's
/// lock orders the hand-over). Cancellation never touches it: it shuts the
/// socket down, which wakes a wait for the socket.
final class NativeTLSLayer: @unchecked Sendable {  // SAFETY: see the note above
    /// The TLS engine; nil for a plain connection.
    var engine: TLSEngine?
    /// One reused buffer per connection, allocated on first use.
    private var buffer: UnsafeMutableRawBufferPointer?

    /// Size of ``copyBuffer()``: large enough that each pass moves many full 16 KiB records,
    /// small enough to stay well under the memory budget per connection.
    static let copyBufferSize = 1 << 20

    init() {}

    deinit {
        buffer?.deallocate()
    }

    /// The connection's buffer for `pread` copies and large reads.
    ///
    /// It starts on a page boundary (``SystemCall/allocateFileBuffer(byteCount:)``): at the
    /// heap's 16-byte offset an https upload cost 1.14× curl's CPU instead of 0.74×.
    func copyBuffer() -> UnsafeMutableRawBufferPointer {
        if let buffer { return buffer }
        let made = SystemCall.allocateFileBuffer(byteCount: Self.copyBufferSize)
        buffer = made
        return made
    }

    /// Releases the TLS state (no close_notify: the connection is being dropped).
    func close() {
        engine = nil
    }
}
