internal import CAESGCM
internal import COpenSSLLoader

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
        guard wanted, let library = Self.providerLibrary else { return (nil, nil) }
        return (library.pointer, Self.query)
    }

    /// The library context accelerated TLS contexts are made in: OpenSSL's default provider
    /// plus CAESGCM's (``query`` prefers it), or nil where the CPU lacks VAES or VPCLMULQDQ or
    /// the provider does not load. A context of its own keeps the provider from every other
    /// OpenSSL user in the process, and from its configuration file.
    private static let providerLibrary: LibraryContext? = {
        guard OpenSSL.isLoaded, cs_gcm_is_accelerated() == 1 else { return nil }
        let api = OpenSSL.api
        api.ERR_clear_error!()
        guard let library = api.OSSL_LIB_CTX_new!() else { return nil }
        let name = String(cString: cs_gcm_provider_name)
        guard api.OSSL_PROVIDER_add_builtin!(library, name, cs_gcm_provider_init) == 1,
            api.OSSL_PROVIDER_load!(library, "default") != nil,
            api.OSSL_PROVIDER_load!(library, name) != nil
        else {
            api.ERR_clear_error!()
            api.OSSL_LIB_CTX_free!(library)
            return nil
        }
        return LibraryContext(pointer: library)
    }()

    /// An OpenSSL library context (`OSSL_LIB_CTX`), made once and kept for the process.
    ///
    /// SAFETY (`@unchecked Sendable`): a library context is safe to use from any thread once
    /// its providers are loaded, which happens before this value exists; it is never freed.
    private struct LibraryContext: @unchecked Sendable {  // SAFETY: see the note above
        let pointer: OpaquePointer
    }

    /// The property query that makes contexts of ``providerLibrary`` take CAESGCM's AES-GCM, and
    /// OpenSSL's default provider for everything else.
    private static let query = "?provider=" + String(cString: cs_gcm_provider_name)

    /// How many AES-GCM cipher contexts CAESGCM has made in this process (tests).
    static var contextsMade: UInt { cs_gcm_provider_contexts() }
}
