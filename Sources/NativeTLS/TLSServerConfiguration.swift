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
    /// Tests only: serve TLS 1.1 and nothing newer, with the security level that requires,
    /// to check that clients refuse it.
    var legacyTLS11OnlyForTesting = false
    /// Whose AES-GCM encrypts the records (tests choose; everyone else gets `.automatic`).
    var aesGCM = TLSAESGCM.automatic

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
