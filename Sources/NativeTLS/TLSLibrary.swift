internal import CCloudStorage

/// Whether this process can use the system's OpenSSL 3, loaded at run time.
///
/// On Linux the first use opens `libssl.so.3` and `libcrypto.so.3` with `dlopen`
/// (once per process, thread-safe) and resolves only the functions this target calls;
/// nothing about OpenSSL is needed at build time. On other platforms the loader is a
/// stub that always reports unavailable: Apple platforms use their own TLS frameworks.
///
/// ```swift
/// if let reason = TLSLibrary.unavailableReason {
///     print("https:// falls back to URLSession: \(reason)")
/// }
/// ```
public enum TLSLibrary {
    /// `true` when OpenSSL 3 loaded and every function it needs resolved. Blocking on first use (file I/O).
    public static var isAvailable: Bool {
        cs_tls_load() == 1
    }

    /// Why OpenSSL could not be loaded (which library or which function was missing), or
    /// `nil` when it is available. Blocking on first use (file I/O).
    public static var unavailableReason: String? {
        guard let reason = cs_tls_unavailable_reason() else { return nil }
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
            cs_tls_load_from(libssl, libcrypto, buffer.baseAddress, buffer.count)
        }
        if loaded == 1 { return nil }
        return message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
