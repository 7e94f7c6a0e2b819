internal import COpenSSLLoader

/// The OpenSSL functions resolved at run time, and the few spelled-out macros of its C API.
enum OpenSSL {
    /// Whether OpenSSL 3 loaded (otherwise ``TLSLibrary/unavailableReason`` says why).
    static let isLoaded = cs_openssl_load() != nil

    /// The function table: every entry is nil when OpenSSL is unavailable, so only use it once
    /// ``TLSLibrary/isAvailable`` said yes.
    static let api: cs_openssl = cs_openssl_load()?.pointee ?? cs_openssl()

    // Constants of the OpenSSL 3 ABI (ssl.h, tls1.h, bio.h, err.h), which the loader's header leaves out.
    static let errorNone: Int32 = 0
    static let errorSSL: Int32 = 1
    static let errorWantRead: Int32 = 2
    static let errorWantWrite: Int32 = 3
    static let errorSyscall: Int32 = 5
    static let errorZeroReturn: Int32 = 6
    static let tls11: Int32 = 0x0302
    static let tls12: Int32 = 0x0303
    static let tls13: Int32 = 0x0304
    static let ctrlMode: Int32 = 33
    static let ctrlSetTLSExtHostName: Int32 = 55
    static let ctrlChainCert: Int32 = 89
    static let ctrlSetMinProtoVersion: Int32 = 123
    static let ctrlSetMaxProtoVersion: Int32 = 124
    static let ctrlGetMinProtoVersion: Int32 = 130
    /// `OPENSSL_INIT_LOAD_CONFIG`.
    static let initLoadConfig: UInt64 = 0x40
    /// `OPENSSL_INFO_CONFIG_DIR`.
    static let infoConfigDirectory: Int32 = 1001
    static let bioShutdownWrite: Int32 = 142
    static let modeEnablePartialWrite = 0x1
    static let modeAcceptMovingWriteBuffer = 0x2
    static let verifyPeer: Int32 = 0x01
    static let optionNoRenegotiation: UInt64 = 1 << 30
    static let checkFlagNoPartialWildcards: UInt32 = 0x4
    static let nidRSAEncryption: Int32 = 6
    /// `PEM_R_NO_START_LINE`: the end of a PEM buffer.
    static let reasonNoStartLine: Int32 = 108

    /// `ERR_GET_REASON` (an inline function in the headers): whether `code` carries `reason`.
    static func hasReason(_ code: UInt, _ reason: Int32) -> Bool {
        let systemFlag: UInt = 0x8000_0000
        guard code != 0, code & systemFlag == 0 else { return false }
        return Int32(truncatingIfNeeded: code & 0x7F_FFFF) == reason
    }

    /// The directory whose `openssl.cnf` OpenSSL reads when `OPENSSL_CONF` names no file.
    static var configurationDirectory: String {
        api.OPENSSL_info!(infoConfigDirectory).map { String(cString: $0) } ?? "OpenSSL's directory"
    }

    /// The first queued OpenSSL error of this thread and its text; the queue is emptied.
    static func takeError() -> (code: UInt, message: String) {
        let api = api
        let code = api.ERR_get_error!()
        var text = ""
        if code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            buffer.withUnsafeMutableBufferPointer { api.ERR_error_string_n!(code, $0.baseAddress, $0.count) }
            text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        }
        api.ERR_clear_error!()
        return (code, text)
    }

    /// Calls `body` with a read-only memory BIO over `bytes`, freed afterwards.
    static func withMemoryBIO<R>(
        _ bytes: [UInt8], _ body: (OpaquePointer) throws(TLSError) -> R
    ) throws(TLSError) -> R {
        let api = api
        api.ERR_clear_error!()
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(TLSError) -> R in
                guard raw.count <= Int(Int32.max),
                    let bio = api.BIO_new_mem_buf!(raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count))
                else {
                    throw TLSError(.other, "cannot read PEM bytes: \(takeError().message)")
                }
                defer { _ = api.BIO_free!(bio) }
                return try body(bio)
            }
        }
        return try result.get()
    }

    /// The passphrase callback for every PEM private key: none. OpenSSL's default would prompt
    /// on the terminal for an encrypted key and block the process; this makes it an error.
    static let noPassphrase: cs_pem_password_cb = { _, _, _, _ in -1 }
}
