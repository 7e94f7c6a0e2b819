import HTTPClient

/// What a failure below HTTP means for an operation: one that may pass if the request is
/// sent again, or a final error.
///
/// The one place that decides, for every request the SDK sends: storage requests
/// (``CallExecutor``) and token and metadata-server requests (``TokenEndpoint``). A retryable
/// failure is retried within the operation's retry time, and the operation ends with
/// ``StorageErrorCode/retryLimitExceeded`` (or ``StorageErrorCode/protocolViolation``, see
/// below) if it lasts; a final one ends the operation at once.
///
/// The classes, and why:
/// - **Lost connections** (``HTTPTransportError/Kind/connectionLost``): a reset, or an end of
///   the stream before the answer was complete — a FIN, a TLS close_notify, or an end inside a
///   TLS record. Retryable: that is what a network cut, a restarting server, or a proxy whose
///   backend died mid-answer looks like, and a new connection usually gets the whole answer.
/// - **Failures to connect** (``HTTPTransportError/Kind/connectFailed``): retryable, for the
///   same reasons.
/// - **Time-outs** (``HTTPTransportError/Kind/timedOut``): nothing moved for the request
///   time-out, or a request outlived its deadline. Retryable: a stall may pass. The deadlines
///   themselves keep a slow peer from stretching the operation (see
///   ``RetryBackoff/Attempts/deadline(forAttemptAt:limit:policy:)``).
/// - **Malformed HTTP** (``HTTPTransportError/Kind/malformedResponse``): retried like a lost
///   connection (the request's effect is as unknown), so that a proxy's garbled answer may
///   pass; if malformed answers last until the retry time runs out, the operation ends as
///   ``StorageErrorCode/protocolViolation``.
/// - **A corrupt TLS stream** (``HTTPTransportError/Kind/corruptStream``): bytes that are no
///   TLS record, a record that fails decryption or authentication, one longer than TLS allows.
///   Final, ``StorageErrorCode/protocolViolation``: every record after the verified handshake
///   is authenticated, so either the server's TLS is broken or something on the path alters
///   the bytes — neither passes on a retry, and sending the request (and its credential) into
///   such a path again is the wrong reflex.
/// - **An answer over the limit** (``HTTPTransportError/Kind/responseTooLarge``): final,
///   ``StorageErrorCode/protocolViolation``. The limit is far above any answer the protocols
///   produce (small JSON documents; object bytes go to a sink and have none), so a server that
///   announces or sends more is not going to send less next time.
/// - **TLS that cannot work** (``HTTPTransportError/Kind/tlsFailure``): final,
///   ``StorageErrorCode/tlsFailure`` (a certificate that does not verify, no common version, a
///   plain server, OpenSSL missing); no request byte was sent.
/// - **A transport shut down** (``HTTPTransportError/Kind/shutDown``, after
///   ``Storage/shutdown()``): final, ``StorageErrorCode/cancelled``; no request byte was sent.
/// - **Requests the transport cannot send at all** (``HTTPTransportError/permanent``): final,
///   ``StorageErrorCode/invalidArgument``.
/// - **The engine's own errors** (``HTTPTransportError/Kind/bodySourceFailed``,
///   ``HTTPTransportError/Kind/sinkFailed``): final, as the engine threw them (a file that
///   changed, a destination that cannot be written).
/// - **Anything else** (``HTTPTransportError/Kind/other``): retryable, as an unknown failure
///   below HTTP may pass.
enum TransportFailureVerdict: Sendable {
    /// The failure may pass: wait, and send the request again.
    case retryable(StorageError)
    /// The operation ends with this error.
    case final(StorageError)

    /// The verdict on `error`, a failure of a request to `server`.
    ///
    /// - Parameter server: Names the server in messages ("127.0.0.1:4443", "the token endpoint
    ///   https://…"); never a URL's path or query, which may hold a secret.
    init(_ error: HTTPTransportError, server: String) {
        if let own = CallExecutor.engineError(in: error) {
            self = .final(own)
            return
        }
        switch error.kind {
        case .tlsFailure:
            // Before any request byte: the message names the cause and the server, never a token.
            self = .final(StorageError(.tlsFailure, Self.advised(error), underlyingError: error))
        case .shutDown:
            self = .final(
                StorageError(
                    .cancelled, "The Storage was shut down (Storage.shutdown()); nothing was sent to \(server).",
                    underlyingError: error))
        case _ where error.permanent:
            self = .final(StorageError(.invalidArgument, Self.advised(error), underlyingError: error))
        case .corruptStream:
            self = .final(
                .protocolViolation(
                    "\(error.message) A retry would not help: after the verified handshake every record is authenticated.",
                    underlyingError: error))
        case .responseTooLarge:
            self = .final(
                .protocolViolation(
                    "\(error.message) No answer of the protocol is that long, so it was refused and not asked for again.",
                    underlyingError: error))
        case .malformedResponse:
            self = .retryable(
                .protocolViolation("The answer from \(server) is malformed.", underlyingError: error))
        case .connectFailed, .connectionLost, .timedOut, .other, .bodySourceFailed, .sinkFailed:
            self = .retryable(
                StorageError(.unknown, "The request to \(server) failed: \(error.kind).", underlyingError: error))
        }
    }
}

extension TransportFailureVerdict {
    /// The transport's message, with the setting of ``StorageConfiguration`` that lets the
    /// request work where the transport names a remedy.
    static func advised(_ error: HTTPTransportError) -> String {
        switch error.remedy {
        case nil:
            error.message
        case .anotherTransport:
            "\(error.message) Use StorageTransportChoice.urlSession for such URLs."
        case .transportWithOwnTrustRoots:
            "\(error.message) URLSession on Linux trusts only the system's certificate store; to trust a private"
                + " CA, use the native transport with StorageConfiguration.tls.additionalTrustRoots."
        }
    }
}
