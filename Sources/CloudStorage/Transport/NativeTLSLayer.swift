import NativeTLS

/// The TLS stream of one native connection, if it has one, and the buffer its
/// file regions are copied through (TLS cannot use `sendfile`).
///
/// SAFETY (`@unchecked Sendable`): like the socket it belongs to, it is used
/// by one thread at a time: the I/O thread of the request that holds the
/// connection, or nobody while the connection waits in the pool (the pool's
/// lock orders the hand-over). Cancellation never touches it: it shuts the
/// socket down, which wakes a blocked TLS read or write.
final class NativeTLSLayer: @unchecked Sendable {  // SAFETY: see the note above
    /// The established stream; nil for a plain connection or before the handshake succeeded.
    var stream: TLSStream?
    /// One reused buffer per connection for file regions, allocated on first use.
    private var fileBuffer: UnsafeMutableRawBufferPointer?

    /// Size of ``fileBufferForCopies()``: large enough that each `write` hands OpenSSL
    /// many full 16 KiB records, small enough to stay well under the memory budget per connection.
    static let fileBufferSize = 1 << 20

    init() {}

    deinit {
        stream?.close()
        fileBuffer?.deallocate()
    }

    /// The connection's buffer for `pread` copies.
    func fileBufferForCopies() -> UnsafeMutableRawBufferPointer {
        if let fileBuffer { return fileBuffer }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.fileBufferSize, alignment: 16)
        fileBuffer = buffer
        return buffer
    }

    /// Releases the TLS state (no close_notify: the connection is being dropped).
    func close() {
        stream?.close()
        stream = nil
    }
}
