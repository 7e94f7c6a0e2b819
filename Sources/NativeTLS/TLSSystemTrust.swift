internal import COpenSSLLoader
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The system trust store, set up as `SSL_CTX_set_default_verify_paths` does (the default
/// certificate file or `SSL_CERT_FILE`, the hashed directory or `SSL_CERT_DIR`, OpenSSL's
/// default store), except that the file is read only when a verification first needs an
/// issuer that is not in memory yet.
///
/// Parsing the system bundle (about 140 certificates) costs OpenSSL 3.0 some 40 ms of CPU,
/// half of a short `cloud-storage` command's; a connection to a server whose chain ends at a
/// root given in ``TLSClientConfiguration/additionalTrustRoots`` never pays it. Once read, the
/// file's certificates are in the store, ahead of the directory, as before.
///
/// SAFETY (`@unchecked Sendable`): `path` never changes and `loaded` is a `Mutex`; OpenSSL
/// calls ``find(_:_:_:_:)`` from any thread that verifies, and the store's own lock guards
/// what it reads there.
final class TLSSystemTrust: @unchecked Sendable {  // SAFETY: see the note above
    /// The certificate file read on first need.
    let path: String
    /// Whether the file was read (successfully or not: a missing file stays missing).
    private let loaded = Mutex(false)

    /// Adds the system store's lookups to `store`; `file` replaces the default file (tests).
    init(store: OpaquePointer, file: String?) {
        let api = OpenSSL.api
        path = file ?? Self.defaultFile
        if let method = Self.method, let lookup = api.X509_STORE_add_lookup!(store, method.pointer) {
            _ = api.X509_LOOKUP_set_method_data!(lookup, Unmanaged.passUnretained(self).toOpaque())
        }
        // X509_LOOKUP_add_dir(lookup, NULL, X509_FILETYPE_DEFAULT) and X509_LOOKUP_add_store(lookup, NULL).
        if let lookup = api.X509_STORE_add_lookup!(store, api.X509_LOOKUP_hash_dir!()) {
            _ = api.X509_LOOKUP_ctrl!(lookup, Self.controlAddDirectory, nil, Self.fileTypeDefault, nil)
        }
        if let lookup = api.X509_STORE_add_lookup!(store, api.X509_LOOKUP_store!()) {
            _ = api.X509_LOOKUP_ctrl!(lookup, Self.controlAddStore, nil, 0, nil)
        }
        api.ERR_clear_error!()
    }

    /// `SSL_CERT_FILE`, or OpenSSL's compiled-in default.
    private static var defaultFile: String {
        let api = OpenSSL.api
        if let variable = api.X509_get_default_cert_file_env!(), let value = getenv(variable) {
            return String(cString: value)
        }
        return api.X509_get_default_cert_file!().map { String(cString: $0) } ?? ""

    }

    private static let controlAddDirectory: Int32 = 2  // X509_L_ADD_DIR
    private static let controlAddStore: Int32 = 3  // X509_L_ADD_STORE
    private static let fileTypeDefault = 3  // X509_FILETYPE_DEFAULT
    private static let fileTypePEM: Int32 = 1  // X509_FILETYPE_PEM
    private static let lookupCertificate: Int32 = 1  // X509_LU_X509

    /// The lookup method, made once per process.
    ///
    /// SAFETY (`@unchecked Sendable`): OpenSSL only reads a lookup method once it is set up.
    private struct Method: @unchecked Sendable {  // SAFETY: see the note above
        let pointer: OpaquePointer
    }

    private static let method: Method? = {
        let api = OpenSSL.api
        guard let method = api.X509_LOOKUP_meth_new!("CloudStorage system trust file, read on first need") else {
            return nil
        }
        _ = api.X509_LOOKUP_meth_set_get_by_subject!(method) { lookup, type, name, result in
            TLSSystemTrust.find(lookup, type, name, result)
        }
        return Method(pointer: method)
    }()

    /// The lookup's search by subject: reads the file into the store once, then answers from
    /// the store as OpenSSL's directory lookup does (the store keeps the reference).
    private static func find(
        _ lookup: OpaquePointer?, _ type: Int32, _ name: OpaquePointer?, _ result: OpaquePointer?
    ) -> Int32 {
        let api = OpenSSL.api
        guard type == lookupCertificate, let lookup, let name, let result,
            let data = api.X509_LOOKUP_get_method_data!(lookup), let store = api.X509_LOOKUP_get_store!(lookup)
        else { return 0 }
        let trust = Unmanaged<TLSSystemTrust>.fromOpaque(data).takeUnretainedValue()
        trust.loaded.withLock { loaded in
            guard !loaded else { return }
            loaded = true
            // Certificates already in the store are skipped, not errors.
            _ = api.X509_load_cert_crl_file!(lookup, trust.path, fileTypePEM)
            api.ERR_clear_error!()
        }
        // Always from the store: another thread may have read the file while this one waited.
        guard api.X509_STORE_lock!(store) == 1 else { return 0 }
        defer { _ = api.X509_STORE_unlock!(store) }
        guard let found = api.X509_OBJECT_retrieve_by_subject!(api.X509_STORE_get0_objects!(store), type, name),
            let certificate = api.X509_OBJECT_get0_X509!(found), api.X509_OBJECT_set1_X509!(result, certificate) == 1
        else { return 0 }
        api.X509_free!(certificate)  // set1 took a reference; the store holds the one the caller counts on
        return 1
    }
}
