public import Foundation

extension StorageConfiguration {
    /// Whom the SDK's own transport trusts for `https://` servers.
    ///
    /// Verification itself is never relaxed: the chain must lead to a trusted
    /// root, and the certificate must name the host and be within its
    /// validity dates.
    ///
    /// ```swift
    /// var configuration = StorageConfiguration()
    /// configuration.tls.additionalTrustRoots = [.file(URL(fileURLWithPath: "/etc/my-company/ca.pem"))]
    /// ```
    public struct TLS: Sendable, Hashable {
        /// Certificates of private certificate authorities that the SDK's own
        /// transport trusts for `https://` servers, in addition to the system's
        /// trust store (OpenSSL's default locations, which honour `SSL_CERT_FILE`
        /// and `SSL_CERT_DIR`). Empty by default.
        ///
        /// A root that cannot be used (an unreadable file, no certificate in it)
        /// fails each `https://` request with ``StorageErrorCode/tlsFailure``,
        /// naming the problem.
        ///
        /// Used by the native transport, which carries `https://` on Linux by
        /// default (``StorageTransportChoice/automatic``) and with
        /// ``StorageTransportChoice/native``. `URLSession` on Linux cannot use
        /// them: it trusts the system store only, so with
        /// ``StorageTransportChoice/urlSession`` (or where OpenSSL 3 cannot be
        /// loaded) a server signed by a private CA fails with
        /// ``StorageErrorCode/tlsFailure`` as untrusted.
        public var additionalTrustRoots: [TrustRoot] = []

        /// Creates the default TLS settings: the system's trust store only.
        public init() {}
    }

    /// One or more PEM-encoded CA certificates to trust, given as bytes or as a file.
    ///
    /// ```swift
    /// let fromFile = StorageConfiguration.TrustRoot.file(URL(fileURLWithPath: "/etc/my-company/ca.pem"))
    /// let inline = try StorageConfiguration.TrustRoot.pem(Data(pemText.utf8))
    /// ```
    public struct TrustRoot: Sendable, Hashable {
        enum Source: Sendable, Hashable {
            case bytes([UInt8])
            case file(String)
        }

        let source: Source

        /// Certificates in PEM text (`-----BEGIN CERTIFICATE-----` blocks), checked here for
        /// at least one such block; OpenSSL parses them when the first `https://` request
        /// needs them.
        ///
        /// - Parameter pem: The PEM text.
        /// - Throws: ``StorageErrorCode/invalidArgument`` when `pem` holds no certificate block.
        public static func pem(_ pem: Data) throws(StorageError) -> TrustRoot {
            let bytes = [UInt8](pem)
            let marker = Array("-----BEGIN CERTIFICATE-----".utf8)
            guard bytes.count >= marker.count,
                (0...(bytes.count - marker.count)).contains(where: {
                    bytes[$0..<($0 + marker.count)].elementsEqual(marker)
                })
            else {
                throw .invalidArgument(
                    "A trust root must hold at least one PEM certificate (-----BEGIN CERTIFICATE-----).")
            }
            return TrustRoot(source: .bytes(bytes))
        }

        /// A PEM file of certificates, read when the first `https://` request needs it.
        ///
        /// - Parameter url: A `file:` URL.
        public static func file(_ url: URL) -> TrustRoot {
            TrustRoot(source: .file(url.path))
        }
    }
}
