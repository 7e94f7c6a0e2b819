import NativeTLS

/// A streaming MD5 (RFC 1321), for the `md5Hash` of stored objects: OpenSSL's when OpenSSL 3
/// is loaded, else ``PortableMD5``.
///
/// MD5 is only a content fingerprint in the storage APIs, never a security measure. The
/// emulator hashes every byte it receives, so this is on the hot path of every upload, where
/// OpenSSL's assembly is several times faster than Swift. A value type, so that a session can
/// snapshot the state before a request and restore it if the request is rolled back: an
/// OpenSSL context shared by copies is copied before it changes (copy on write).
///
/// SAFETY (`@unchecked Sendable`): the only reference type inside is the OpenSSL context, and
/// it is changed only while this value holds the sole reference to it (see ``update(_:)``);
/// copies that share it only read it (``finalize()`` digests a copy of the context).
package struct MD5: @unchecked Sendable {  // SAFETY: see the note above
    /// OpenSSL's state; nil when ``portable`` computes instead.
    private var context: OpenSSLDigest.Context?
    private var portable = PortableMD5()

    /// Whether OpenSSL computes MD5 in this process: it loaded, and it does not refuse MD5.
    private static let openSSLComputesMD5 = (try? OpenSSLDigest.Context(.md5)) != nil

    /// MD5 of nothing yet, with OpenSSL when it can.
    package init() {
        if Self.openSSLComputesMD5 { context = try? OpenSSLDigest.Context(.md5) }
    }

    /// Feeds bytes.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard context != nil else { return portable.update(bytes) }
        if !isKnownUniquelyReferenced(&context) {
            // A snapshot shares the state: this value goes on with a copy of its own.
            do {
                context = try context?.copy()
            } catch {
                preconditionFailure("MD5: OpenSSL could not copy a digest context: \(error)")
            }
        }
        context?.update(bytes)
    }

    /// Feeds bytes.
    package mutating func update<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// The 16-byte digest of everything fed so far (the state is left untouched).
    package func finalize() -> [UInt8] {
        guard let context else { return portable.finalize() }
        do {
            return try context.finalize()
        } catch {
            preconditionFailure("MD5: OpenSSL could not finish a digest: \(error)")
        }
    }

    /// The digest of `bytes`.
    package static func digest<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var md5 = MD5()
        md5.update(bytes)
        return md5.finalize()
    }
}
