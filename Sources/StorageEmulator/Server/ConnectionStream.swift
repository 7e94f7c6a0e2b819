import NativeTLS
import SystemCalls

/// The byte stream under one connection's HTTP/1.1 exchange: the plain socket, or TLS over it.
///
/// Both cases read into and write from the caller's buffers, so the plain path stays a
/// direct `recv`/`send` with no extra copy. Blocking, like everything on a connection's thread.
enum ConnectionStream {
    /// Bytes go straight to and from the socket.
    case plain(Int32)
    /// Bytes are encrypted by a TLS stream over the socket (after its handshake).
    case tls(TLSConnection)

    /// A TLS stream with the socket under it and what the connection remembers about both.
    final class TLSConnection {
        let stream: TLSStream
        let socket: Int32
        /// The socket's `SO_RCVTIMEO` as last set, so that a read with the same time-out
        /// (the common case) costs no extra system call.
        var receiveTimeout: Duration?
        /// close_notify went out (or was tried): a second `SSL_shutdown` would wait for the peer's.
        var finished = false

        init(stream: TLSStream, socket: Int32) {
            self.stream = stream
            self.socket = socket
        }

        /// Sets the socket's `SO_RCVTIMEO`, which bounds each blocking receive of the TLS stream.
        func setReceiveTimeout(_ timeout: Duration) {
            guard receiveTimeout != timeout else { return }
            receiveTimeout = timeout
            POSIXSocket.setReceiveTimeout(socket, timeout)
        }
    }

    /// Reads what is available (waiting up to `timeout` for the first byte) into `buffer`.
    ///
    /// - Returns: The bytes read; 0 when the peer closed (over TLS, with or without close_notify:
    ///   the HTTP framing, not TLS, tells whether a message was whole).
    func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(ServerIOError) -> Int {
        switch self {
        case .plain(let fd):
            do {
                return try POSIXSocket.receive(fd, into: buffer, timeout: timeout)
            } catch {
                throw ServerIOError(error)
            }
        case .tls(let connection):
            guard !buffer.isEmpty else { return 0 }
            // OpenSSL may hold decrypted bytes the socket no longer shows as readable, so a poll
            // cannot bound the wait; the socket's receive time-out does (an expiry fails the stream).
            connection.setReceiveTimeout(timeout)
            do {
                return try connection.stream.read(into: buffer)
            } catch  where error.kind == .peerClosed {
                return 0
            } catch {
                throw ServerIOError(error)
            }
        }
    }

    /// Sends every byte (bounded by the socket's send time-out).
    func send(_ bytes: UnsafeRawBufferPointer) throws(ServerIOError) {
        switch self {
        case .plain(let fd):
            do {
                try POSIXSocket.sendAll(fd, bytes)
            } catch {
                throw ServerIOError(error)
            }
        case .tls(let connection):
            do {
                try connection.stream.write(bytes)
            } catch {
                throw ServerIOError(error)
            }
        }
    }

    /// Before closing cleanly: over TLS, sends close_notify (best effort) so the peer can tell
    /// the end from a truncation. Nothing for the plain socket.
    /// Idempotent; a stream that already failed sends nothing.
    func finishWriting() {
        guard case .tls(let connection) = self, !connection.finished else { return }
        connection.finished = true
        try? connection.stream.shutdown()
    }

    /// Releases the TLS state (sending nothing more); the caller closes the socket. Idempotent.
    func release() {
        guard case .tls(let connection) = self else { return }
        connection.finished = true
        connection.stream.close()
    }
}
