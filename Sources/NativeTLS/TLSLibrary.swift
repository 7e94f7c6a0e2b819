internal import COpenSSLLoader

/// Whether this process can use the system's OpenSSL 3, loaded at run time.
///
/// On Linux the first use opens `libssl.so.3` and `libcrypto.so.3` with `dlopen`
/// (once per process, thread-safe), refuses a library older than OpenSSL 3.0, and resolves
/// only the functions this target calls; nothing about OpenSSL is needed at build time. On
/// other platforms the loader always reports unavailable: Apple platforms use their own
/// TLS frameworks.
///
/// ```swift
/// if let reason = TLSLibrary.unavailableReason {
///     print("https:// falls back to URLSession: \(reason)")
/// }
/// ```
public enum TLSLibrary {
    /// `true` when OpenSSL 3 loaded and every function it needs resolved. Blocking on first use (file I/O).
    public static var isAvailable: Bool {
        OpenSSL.isLoaded
    }

    /// Why OpenSSL could not be loaded (which library or function was missing, or that it is
    /// older than 3.0), or `nil` when it is available. Blocking on first use (file I/O).
    public static var unavailableReason: String? {
        guard let reason = cs_openssl_unavailable_reason() else { return nil }
        return String(cString: reason)
    }

    /// Tries to load the named libraries without touching the process-wide loader, then
    /// unloads them: a diagnostic, and the way tests reach the failure paths.
    ///
    /// - Parameters:
    ///   - libssl: A name or path for `dlopen`, such as `libssl.so.3`.
    ///   - libcrypto: A name or path for `dlopen`, such as `libcrypto.so.3`.
    /// - Returns: `nil` when both loaded with every needed function, otherwise the reason.
    static func probe(libssl: String, libcrypto: String) -> String? {
        var message = [CChar](repeating: 0, count: 512)
        let loaded = message.withUnsafeMutableBufferPointer { buffer in
            cs_openssl_probe(libssl, libcrypto, buffer.baseAddress, buffer.count)
        }
        if loaded == 1 { return nil }
        return message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Why a run-time `OpenSSL_version_num()` of `version` is refused, or `nil` when it is 3.0 or newer.
    static func versionRefusal(_ version: UInt) -> String? {
        var message = [CChar](repeating: 0, count: 256)
        let accepted = message.withUnsafeMutableBufferPointer { buffer in
            cs_openssl_check_version(version, buffer.baseAddress, buffer.count)
        }
        if accepted == 1 { return nil }
        return message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
