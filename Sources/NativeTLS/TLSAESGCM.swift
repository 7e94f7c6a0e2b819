internal import CAESGCM

/// Which code encrypts and decrypts a context's AES-GCM records (both TLS 1.3 suites and the
/// TLS 1.2 GCM suites).
///
/// OpenSSL 3.0 and 3.1 have no AES-GCM for 256-bit vector AES (VAES): on CPUs with it but
/// without AVX-512 (AMD Zen 3 and 4, Intel Alder Lake and later) they run 128-bit AES-NI.
/// CAESGCM does two blocks per instruction and eight per loop turn, about 1.5 times OpenSSL's
/// speed on this project's benchmark machine, and OpenSSL keeps the whole protocol: the
/// provider swaps only the cipher under its record layer.
enum TLSAESGCM: Sendable, Hashable {
    /// CAESGCM's where the CPU has the instructions and the code was compiled optimized;
    /// OpenSSL's otherwise.
    case automatic
    /// CAESGCM's wherever the CPU has the instructions, even unoptimized (tests).
    case accelerated
    /// OpenSSL's own.
    case openSSL

    /// The library context and property query for `SSL_CTX_new_ex`: (nil, nil) for OpenSSL's.
    var library: (context: OpaquePointer?, query: String?) {
        let wanted =
            switch self {
            case .automatic: cs_gcm_is_optimized() == 1
            case .accelerated: true
            case .openSSL: false
            }
        guard wanted, let library = OpenSSL.acceleratedAESGCMLibrary else { return (nil, nil) }
        return (library.pointer, OpenSSL.acceleratedAESGCMQuery)
    }

    /// How many AES-GCM cipher contexts CAESGCM has made in this process (tests).
    static var contextsMade: UInt { cs_gcm_provider_contexts() }
}
