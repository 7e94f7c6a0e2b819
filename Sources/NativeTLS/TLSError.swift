/// An error of the TLS stream layer: what went wrong, and a message that names the cause.
///
/// The layer knows nothing of storage; callers above it map these to their own errors.
/// Certificate problems (``Kind-swift.struct/untrustedIssuer``, ``Kind-swift.struct/nameMismatch``,
/// ``Kind-swift.struct/expired``, ``Kind-swift.struct/notYetValid``,
/// ``Kind-swift.struct/certificateRejected``), protocol mismatches, a plain HTTP server and a
/// ``Kind-swift.struct/corruptStream`` are permanent: retrying cannot help, so callers should
/// fail at once.
///
/// ```swift
/// do {
///     try stream.handshake()
/// } catch let error where error.kind == .nameMismatch {
///     print(error.message)  // names the host and the verification failure
/// }
/// ```
public struct TLSError: Error, Sendable, CustomStringConvertible {
    /// The category of a ``TLSError``; new categories may be added later.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case untrustedIssuer, nameMismatch, expired, notYetValid, certificateRejected
            case protocolVersion, handshakeFailed, plainHTTPServer, peerClosed, corruptStream, timedOut
            case io, libraryUnavailable, hostConfiguration, invalidConfiguration, other
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The peer's certificate chain does not lead to a trusted root.
        public static let untrustedIssuer = Kind(.untrustedIssuer)
        /// The certificate is valid but for another host name or IP address.
        public static let nameMismatch = Kind(.nameMismatch)
        /// The certificate (or one in its chain) has expired.
        public static let expired = Kind(.expired)
        /// The certificate (or one in its chain) is not valid yet (often a wrong clock).
        public static let notYetValid = Kind(.notYetValid)
        /// Certificate verification failed for another reason (the message says which).
        public static let certificateRejected = Kind(.certificateRejected)
        /// The peers share no protocol version (this side requires TLS 1.2 or newer) or cipher.
        public static let protocolVersion = Kind(.protocolVersion)
        /// The handshake failed for a reason not covered by a more specific kind.
        public static let handshakeFailed = Kind(.handshakeFailed)
        /// The server answered the TLS handshake in clear text (`HTTP/…`, or any other bytes
        /// that are no TLS record): an `https://` address points at a plain server.
        public static let plainHTTPServer = Kind(.plainHTTPServer)
        /// The peer closed the connection without a TLS close_notify (during the handshake,
        /// or mid-stream, even inside a record: the data may be truncated).
        public static let peerClosed = Kind(.peerClosed)
        /// After the handshake, TLS itself failed on the stream: the peer sent bytes that are
        /// no TLS record (garbage, a record header longer than TLS allows), a record that
        /// fails decryption or authentication, a message out of place, or a fatal alert.
        ///
        /// Unlike a connection cut short (``peerClosed``, ``io``), this does not pass on a
        /// retry: every record is authenticated, so the peer's TLS is broken or something on
        /// the path alters the bytes.
        public static let corruptStream = Kind(.corruptStream)
        /// The socket's send or receive time-out expired during a blocking call, or the
        /// deadline of a call on a non-blocking socket passed.
        public static let timedOut = Kind(.timedOut)
        /// A system call on the socket failed (``TLSError/systemError`` has the `errno`).
        public static let io = Kind(.io)
        /// OpenSSL 3 could not be loaded on this machine (or this is not Linux).
        public static let libraryUnavailable = Kind(.libraryUnavailable)
        /// The host's OpenSSL configuration (`openssl.cnf`, or the file `OPENSSL_CONF` names)
        /// leaves no TLS this side can speak: default properties no loaded provider meets (FIPS
        /// without a FIPS provider), or cipher lists and versions that leave no cipher suite for
        /// TLS 1.2 or newer. Permanent: nothing was sent, and nothing will be until the host's
        /// configuration changes.
        public static let hostConfiguration = Kind(.hostConfiguration)
        /// A certificate, key or trust root given in the configuration could not be used.
        public static let invalidConfiguration = Kind(.invalidConfiguration)
        /// Anything else, including use of a stream in the wrong state.
        public static let other = Kind(.other)

        /// Whether this kind is a failure to verify the peer's certificate.
        public var isCertificateFailure: Bool {
            switch base {
            case .untrustedIssuer, .nameMismatch, .expired, .notYetValid, .certificateRejected: true
            default: false
            }
        }

        /// A short name for logs, such as `untrustedIssuer`.
        public var description: String {
            "\(base)"
        }
    }

    /// What went wrong.
    public let kind: Kind
    /// A human-readable explanation that names the cause (and the peer, where known).
    public let message: String
    /// The `errno` of the failing system call, for ``Kind-swift.struct/io`` and
    /// ``Kind-swift.struct/timedOut`` (`ETIMEDOUT` when a deadline passed).
    public let systemError: Int32?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - kind: The category.
    ///   - message: An explanation that names the cause.
    ///   - systemError: The `errno` involved, if any.
    public init(_ kind: Kind, _ message: String, systemError: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.systemError = systemError
    }

    /// `kind: message`.
    public var description: String {
        "TLS \(kind): \(message)"
    }
}
