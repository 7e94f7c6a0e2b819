/// How a client verifies servers. Verification is always on; there is no switch to disable it.
///
/// The system trust store comes from OpenSSL's default locations, which honour the
/// `SSL_CERT_FILE` and `SSL_CERT_DIR` environment variables. Private CAs are added with
/// ``additionalTrustRoots``.
///
/// ```swift
/// var configuration = TLSClientConfiguration()
/// configuration.additionalTrustRoots = [.file("/etc/my-company/ca.pem")]
/// let context = try TLSContext(client: configuration)
/// ```
public struct TLSClientConfiguration: Sendable, Hashable {
    /// Certificates trusted in addition to (or, without ``trustsSystemRoots``, instead of)
    /// the system's; each source may hold several PEM certificates.
    public var additionalTrustRoots: [TLSPEMSource]

    /// Whether the system trust store is trusted. Turning it off narrows trust to
    /// ``additionalTrustRoots``; it never weakens verification.
    public var trustsSystemRoots: Bool

    /// The system store's certificate file instead of `SSL_CERT_FILE` or OpenSSL's default (tests).
    var systemTrustFile: String?

    /// Creates a configuration that trusts the system store plus `additionalTrustRoots`.
    ///
    /// - Parameters:
    ///   - additionalTrustRoots: PEM certificates to trust as well.
    ///   - trustsSystemRoots: Whether to trust the system store too.
    public init(additionalTrustRoots: [TLSPEMSource] = [], trustsSystemRoots: Bool = true) {
        self.additionalTrustRoots = additionalTrustRoots
        self.trustsSystemRoots = trustsSystemRoots
    }
}
