/// A server's identity: its certificate chain and private key.
///
/// ```swift
/// let context = try TLSContext(server: TLSServerConfiguration(
///     certificateChain: .file("server.pem"), privateKey: .file("server.key")))
/// ```
public struct TLSServerConfiguration: Sendable, Hashable {
    /// The leaf certificate first, then any intermediates, in PEM.
    public var certificateChain: TLSPEMSource
    /// The leaf's private key in unencrypted PEM (PKCS #8 or traditional).
    public var privateKey: TLSPEMSource
    /// Tests only: serve this one protocol version, to check that clients refuse it (TLS 1.1,
    /// with the security level it requires) or that their host's policy does (TLS 1.2).
    ///
    /// `package` so that the shared test servers (Tests/HTTPTestServers, a regular target that
    /// cannot `@testable import`) can set it; no product's public API shows it.
    package var onlyVersionForTesting: OnlyVersion?

    /// The versions a test server can be limited to.
    package enum OnlyVersion: Sendable, Hashable {
        case tls11, tls12
    }

    /// Creates a server configuration.
    ///
    /// - Parameters:
    ///   - certificateChain: The leaf certificate followed by its intermediates.
    ///   - privateKey: The leaf's private key.
    public init(certificateChain: TLSPEMSource, privateKey: TLSPEMSource) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}
