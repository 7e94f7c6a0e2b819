import NativeTLS

extension StorageEmulator {
    /// The certificate chain and private key an emulator serves HTTPS with (see
    /// ``Configuration/tls``).
    ///
    /// ```swift
    /// var configuration = StorageEmulator.Configuration()
    /// configuration.tls = .init(certificateChain: .file("localhost.pem"), privateKey: .file("localhost.key"))
    /// let emulator = try StorageEmulator.start(configuration)   // https://127.0.0.1:<port>
    /// ```
    public struct TLSIdentity: Sendable, Hashable {
        /// PEM text, given as bytes or as a file read when the emulator starts.
        public enum PEM: Sendable, Hashable {
            /// The PEM text itself.
            case bytes([UInt8])
            /// A file holding the PEM text.
            case file(String)
        }

        /// The leaf certificate first, then any intermediates.
        public var certificateChain: PEM
        /// The leaf's unencrypted private key (PKCS #8 or traditional).
        public var privateKey: PEM

        /// Creates an identity.
        ///
        /// - Parameters:
        ///   - certificateChain: The leaf certificate followed by its intermediates.
        ///   - privateKey: The leaf's private key.
        public init(certificateChain: PEM, privateKey: PEM) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
        }

        /// Loads OpenSSL and the identity into a server context. Blocking (reads files).
        func makeContext() throws(EmulatorError) -> TLSContext {
            do {
                return try TLSContext(
                    server: TLSServerConfiguration(
                        certificateChain: Self.source(certificateChain), privateKey: Self.source(privateKey)))
            } catch  where error.kind == .libraryUnavailable {
                throw EmulatorError(description: "Cannot serve TLS: OpenSSL 3 could not be loaded: \(error.message)")
            } catch {
                throw EmulatorError(description: "Cannot serve TLS: \(error.message)")
            }
        }

        private static func source(_ pem: PEM) -> TLSPEMSource {
            switch pem {
            case .bytes(let bytes): .bytes(bytes)
            case .file(let path): .file(path)
            }
        }
    }
}
