#ifndef CLOUDSTORAGE_TLS_H
#define CLOUDSTORAGE_TLS_H

/*
 * The run-time OpenSSL 3 loader and the small wrappers the NativeTLS target
 * calls. No OpenSSL header is included anywhere: `libssl.so.3` and
 * `libcrypto.so.3` are opened with dlopen on first use and only the functions
 * listed in tls_openssl.c are resolved. OpenSSL types appear here as
 * incomplete structs, so Swift sees opaque pointers, never varargs or macros.
 *
 * On platforms other than Linux every function compiles to a stub and
 * `cs_tls_load()` reports the library unavailable.
 */

#include <stddef.h>
#include <stdint.h>

/// An OpenSSL `SSL_CTX` (shared configuration for many connections).
typedef struct cs_tls_ctx cs_tls_ctx;
/// One TLS connection: an OpenSSL `SSL` plus what the shim records about it.
typedef struct cs_tls_conn cs_tls_conn;
/// An OpenSSL `SSL_SESSION` that a later connection can resume.
typedef struct cs_tls_session cs_tls_session;

/// Values of `cs_tls_io_result.ssl_error` (OpenSSL's `SSL_ERROR_*`, stable ABI).
#define CS_TLS_ERROR_NONE 0
#define CS_TLS_ERROR_SSL 1
#define CS_TLS_ERROR_WANT_READ 2
#define CS_TLS_ERROR_WANT_WRITE 3
#define CS_TLS_ERROR_SYSCALL 5
#define CS_TLS_ERROR_ZERO_RETURN 6

/// Protocol version numbers as OpenSSL spells them on the wire.
#define CS_TLS_VERSION_1_1 0x0302
#define CS_TLS_VERSION_1_2 0x0303
#define CS_TLS_VERSION_1_3 0x0304

/// What one read, write, handshake or shutdown call did, captured right after
/// the call on the calling thread (errno and the OpenSSL error queue are
/// thread-local and would be overwritten by anything that runs later).
typedef struct cs_tls_io_result {
    /// 1 when the call succeeded, otherwise 0.
    int ok;
    /// `SSL_get_error` for a failed call, `CS_TLS_ERROR_NONE` on success.
    int ssl_error;
    /// `errno` right after the call (meaningful for `CS_TLS_ERROR_SYSCALL` and timeouts).
    int sys_errno;
    /// Bytes read or written (read/write calls only).
    size_t count;
    /// The first entry of OpenSSL's error queue (0 when empty); the queue is cleared.
    unsigned long error_code;
    /// `ERR_error_string_n` of `error_code`, NUL-terminated ("" when none).
    char error_message[256];
} cs_tls_io_result;

/// Loads `libssl.so.3` and `libcrypto.so.3` once per process (thread-safe).
/// Returns 1 when every needed symbol resolved, otherwise 0; then
/// `cs_tls_unavailable_reason()` says what failed.
int cs_tls_load(void);

/// Why `cs_tls_load()` failed (library or symbol missing), or NULL when it succeeded.
/// Calls `cs_tls_load()` first, so it is always the answer for this process.
const char *cs_tls_unavailable_reason(void);

/// Tries to load the given libraries into a scratch table, then unloads them.
/// For tests and diagnostics: the process-wide table `cs_tls_load()` fills is
/// never touched. Returns 1 on success; otherwise 0 with a NUL-terminated
/// explanation in `message` (at most `capacity` bytes).
int cs_tls_load_from(const char *libssl_path, const char *libcrypto_path, char *message, size_t capacity);

/// Whether `code` (from `cs_tls_io_result.error_code`) carries OpenSSL reason `reason`.
int cs_tls_error_has_reason(unsigned long code, int reason);

/// `X509_verify_cert_error_string` for a verification result.
const char *cs_tls_verify_error_string(long result);

// MARK: contexts

/// A new context for clients (`server` 0) or servers (`server` 1) with TLS 1.2
/// as the lowest version, renegotiation off, and (clients) peer verification
/// required. Returns NULL on failure; `result` then holds the OpenSSL error.
cs_tls_ctx *cs_tls_ctx_new(int server, cs_tls_io_result *result);

/// Frees a context (connections made from it keep their own reference).
void cs_tls_ctx_free(cs_tls_ctx *ctx);

/// Adds OpenSSL's default trust locations (which honour `SSL_CERT_FILE` and `SSL_CERT_DIR`).
int cs_tls_ctx_use_default_trust(cs_tls_ctx *ctx, cs_tls_io_result *result);

/// Adds every certificate in a PEM buffer as a trust root. Returns the number
/// added (0 when the buffer holds none), or -1 on a malformed certificate.
int cs_tls_ctx_add_trust_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result);

/// Sets the leaf certificate (the first in the PEM) and its chain (the rest).
int cs_tls_ctx_use_certificate_chain_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result);

/// Sets the private key (PEM, unencrypted) and checks it matches the certificate.
int cs_tls_ctx_use_private_key_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result);

/// Offers (client) or selects when offered (server) ALPN `http/1.1`.
int cs_tls_ctx_use_alpn_http11(cs_tls_ctx *ctx, int server);

/// Restricts protocol versions (`CS_TLS_VERSION_*`, 0 for "no limit").
int cs_tls_ctx_set_protocol_range(cs_tls_ctx *ctx, int minimum, int maximum);

/// Sets OpenSSL's security level and cipher list; used only to build obsolete
/// servers in tests (a TLS 1.1 server needs level 0).
int cs_tls_ctx_set_legacy_security(cs_tls_ctx *ctx, int level, const char *ciphers);

// MARK: connections

/// A new connection over an already-connected socket (the caller keeps
/// ownership of `fd`). Returns NULL on failure.
cs_tls_conn *cs_tls_conn_new(cs_tls_ctx *ctx, int fd, cs_tls_io_result *result);

/// Frees a connection without sending anything.
void cs_tls_conn_free(cs_tls_conn *conn);

/// Client: the server name to verify and send as SNI (`is_ip` 0), or the IP
/// address to verify, without SNI (`is_ip` 1).
int cs_tls_conn_set_peer_name(cs_tls_conn *conn, const char *name, int is_ip);

/// Client: offers `session` for resumption.
int cs_tls_conn_set_session(cs_tls_conn *conn, cs_tls_session *session);

/// The connection's session with a new reference if it can be resumed, else NULL.
cs_tls_session *cs_tls_conn_copy_resumable_session(cs_tls_conn *conn);

/// Releases a reference from `cs_tls_conn_copy_resumable_session`.
void cs_tls_session_free(cs_tls_session *session);

// Every call below runs its OpenSSL function once. On a blocking socket it blocks (up to
// the socket's time-outs); on a non-blocking one it returns `CS_TLS_ERROR_WANT_READ` or
// `CS_TLS_ERROR_WANT_WRITE` with `EAGAIN` when the socket is not ready, and is then
// repeated, with the same arguments, once it is.

/// Runs `SSL_connect` (`server` 0) or `SSL_accept` (`server` 1) once.
void cs_tls_conn_handshake(cs_tls_conn *conn, int server, cs_tls_io_result *result);

/// `SSL_read_ex` once, then, without waiting, every further record OpenSSL
/// has already read ahead, as far as `capacity` allows.
void cs_tls_conn_read(cs_tls_conn *conn, void *buffer, size_t capacity, cs_tls_io_result *result);

/// Whether OpenSSL holds received bytes not yet returned by a read (it reads ahead).
int cs_tls_conn_has_buffered_input(cs_tls_conn *conn);

/// `SSL_write_ex` once: on success every byte is taken, encrypted into records that may
/// still wait in the connection's write buffer (gathered into larger writes) until
/// `cs_tls_conn_flush`.
void cs_tls_conn_write(cs_tls_conn *conn, const void *bytes, size_t length, cs_tls_io_result *result);

/// Writes the records still waiting in the write buffer (after a write or a shutdown).
void cs_tls_conn_flush(cs_tls_conn *conn, cs_tls_io_result *result);

/// `SSL_shutdown` once: puts close_notify into the write buffer (flush it after).
void cs_tls_conn_shutdown(cs_tls_conn *conn, cs_tls_io_result *result);

/// `SSL_get_verify_result` (0 is X509_V_OK).
long cs_tls_conn_verify_result(cs_tls_conn *conn);

/// Whether the first record header the peer sent began with `HTTP/` (a plain
/// HTTP server answered our ClientHello).
int cs_tls_conn_peer_spoke_plain_http(cs_tls_conn *conn);

/// Whether the handshake resumed an earlier session.
int cs_tls_conn_session_reused(cs_tls_conn *conn);

/// The ALPN protocol negotiated, written to `buffer` NUL-terminated ("" when none).
void cs_tls_conn_alpn(cs_tls_conn *conn, char *buffer, size_t capacity);

/// The negotiated protocol version (`CS_TLS_VERSION_*`).
int cs_tls_conn_version(cs_tls_conn *conn);

// MARK: RSA keys and SHA-256

/// An RSA key (an OpenSSL `EVP_PKEY`), private or public. Immutable once made, so
/// several threads may sign or verify with it at once.
typedef struct cs_crypto_key cs_crypto_key;

/// Values of `kind` for `cs_crypto_rsa_key_from_pem`.
#define CS_CRYPTO_PRIVATE_KEY 0
#define CS_CRYPTO_PUBLIC_KEY 1
#define CS_CRYPTO_CERTIFICATE 2

/// Reads the first RSA key of `kind` from a PEM buffer: a private key (PKCS #8
/// `PRIVATE KEY` or PKCS #1 `RSA PRIVATE KEY`, unencrypted: an encrypted key fails,
/// it never prompts), a `PUBLIC KEY`, or the key of a `CERTIFICATE`. Stores the
/// modulus size in `bits`. Returns NULL with `result` explaining when there is
/// none, it is malformed, or it is not RSA. Free with `cs_crypto_key_free`.
cs_crypto_key *cs_crypto_rsa_key_from_pem(const void *pem, size_t length, int kind, int *bits,
                                          cs_tls_io_result *result);

/// Frees a key (NULL is ignored).
void cs_crypto_key_free(cs_crypto_key *key);

/// RSASSA-PKCS1-v1_5 with SHA-256 (JWT `RS256`, `GOOG4-RSA-SHA256`) of `message`
/// with a private key. `capacity` must be at least the modulus size in bytes.
/// Returns 1 and the length in `signature_length`, or 0 with `result` explaining.
int cs_crypto_rsa_sha256_sign(cs_crypto_key *key, const void *message, size_t length, void *signature,
                              size_t capacity, size_t *signature_length, cs_tls_io_result *result);

/// 1 when `signature` is a valid RSASSA-PKCS1-v1_5 SHA-256 signature of
/// `message` under `key`, otherwise 0 (also when OpenSSL is unavailable).
int cs_crypto_rsa_sha256_verify(cs_crypto_key *key, const void *message, size_t length, const void *signature,
                                size_t signature_length);

/// SHA-256 of `message` into `digest`. Returns 1, or 0 when OpenSSL is unavailable.
int cs_crypto_sha256(const void *message, size_t length, unsigned char digest[32]);

#endif
