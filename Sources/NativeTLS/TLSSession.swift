/// A resumable TLS session held for a later connection to the same server.
///
/// SAFETY (`@unchecked Sendable`): the pointer is never changed after init, OpenSSL
/// reference-counts `SSL_SESSION` atomically and treats an established session as
/// read-only, so several threads may offer the same one (OpenSSL's own client cache
/// does exactly that). The reference is released once, in `deinit`.
final class TLSSession: @unchecked Sendable {  // SAFETY: see the note above
    /// The `SSL_SESSION`; this object owns one reference to it.
    let pointer: OpaquePointer

    /// Takes over one reference to `pointer` (as returned by `SSL_get1_session`).
    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        OpenSSL.api.SSL_SESSION_free!(pointer)
    }
}
