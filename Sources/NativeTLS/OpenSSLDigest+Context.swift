extension OpenSSLDigest {
    /// A digest fed piece by piece (OpenSSL's `EVP_MD_CTX`), for bodies hashed while they stream.
    ///
    /// A reference to mutable OpenSSL state, so not `Sendable`: a value type that wraps it
    /// copies it (``copy()``) before changing a context it shares.
    ///
    /// ```swift
    /// let context = try OpenSSLDigest.Context(.md5)
    /// bytes.withUnsafeBytes { context.update($0) }
    /// let digest = try context.finalize()   // 16 bytes; the context can go on
    /// ```
    public final class Context {
        /// The digests a context computes.
        public enum Algorithm: Sendable {
            /// MD5 (RFC 1321), 16 bytes: a content fingerprint, never a security measure.
            case md5
            /// SHA-256, 32 bytes.
            case sha256
        }

        private let context: OpaquePointer
        // The functions used per call, resolved once (the table is a large struct to copy).
        private static let update = OpenSSL.api.EVP_DigestUpdate
        private static let free = OpenSSL.api.EVP_MD_CTX_free

        /// A context with nothing fed yet.
        ///
        /// - Parameter algorithm: The digest to compute.
        /// - Throws: ``TLSError/Kind-swift.struct/libraryUnavailable`` without OpenSSL, or
        ///   ``TLSError/Kind-swift.struct/other`` when OpenSSL refuses the algorithm (MD5 in a
        ///   FIPS-only configuration, for one).
        public init(_ algorithm: Algorithm) throws(TLSError) {
            guard TLSLibrary.isAvailable else {
                throw TLSError(.libraryUnavailable, TLSLibrary.unavailableReason ?? "OpenSSL is unavailable")
            }
            let api = OpenSSL.api
            guard let context = api.EVP_MD_CTX_new!() else { throw TLSError(.other, "digest: no memory") }
            let type = algorithm == .md5 ? api.EVP_md5!() : api.EVP_sha256!()
            guard api.EVP_DigestInit_ex!(context, type, nil) == 1 else {
                api.EVP_MD_CTX_free!(context)
                throw TLSError(.other, "digest: \(OpenSSL.takeError().message)")
            }
            self.context = context
        }

        private init(adopting context: OpaquePointer) {
            self.context = context
        }

        deinit {
            Self.free!(context)
        }

        /// Feeds bytes.
        public func update(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            // Cannot fail for an initialised software digest.
            _ = Self.update!(context, base, bytes.count)
        }

        /// An independent context in the same state.
        ///
        /// - Throws: ``TLSError/Kind-swift.struct/other`` when OpenSSL fails (no memory).
        public func copy() throws(TLSError) -> Context {
            let api = OpenSSL.api
            guard let copy = api.EVP_MD_CTX_new!() else { throw TLSError(.other, "digest: no memory") }
            guard api.EVP_MD_CTX_copy_ex!(copy, context) == 1 else {
                api.EVP_MD_CTX_free!(copy)
                throw TLSError(.other, "digest: \(OpenSSL.takeError().message)")
            }
            return Context(adopting: copy)
        }

        /// The digest of everything fed so far; the context is left as it was, and can be fed on.
        ///
        /// - Returns: The digest (16 bytes for MD5, 32 for SHA-256).
        /// - Throws: ``TLSError/Kind-swift.struct/other`` when OpenSSL fails (no memory).
        public func finalize() throws(TLSError) -> [UInt8] {
            let finished = try copy()
            var digest = [UInt8](repeating: 0, count: 64)
            var size: UInt32 = 0
            let ok = digest.withUnsafeMutableBufferPointer { output in
                OpenSSL.api.EVP_DigestFinal_ex!(finished.context, output.baseAddress, &size) == 1
            }
            guard ok else { throw TLSError(.other, "digest: \(OpenSSL.takeError().message)") }
            return Array(digest.prefix(Int(size)))
        }
    }
}
