#ifndef COPENSSL_LOADER_H
#define COPENSSL_LOADER_H

/*
 * The run-time OpenSSL 3 loader: `libssl.so.3` and `libcrypto.so.3` are opened with dlopen on
 * first use, their version is checked, and the functions below are resolved into one table.
 * No OpenSSL header is needed: types are incomplete structs (opaque pointers in Swift), and
 * the C API's macros are spelled out by the caller as the control calls they expand to.
 * Everything else (contexts, the TLS engine, keys, errors) is Swift, in NativeTLS.
 *
 * Off Linux the loader always reports OpenSSL unavailable.
 */

#include <stddef.h>
#include <stdint.h>

typedef struct ssl_st cs_ssl;
typedef struct ssl_ctx_st cs_ssl_ctx;
typedef struct ssl_method_st cs_ssl_method;
typedef struct ssl_session_st cs_ssl_session;
typedef struct ssl_cipher_st cs_ssl_cipher;
typedef struct ossl_init_settings_st cs_ossl_init_settings;
typedef struct x509_st cs_x509;
typedef struct x509_store_st cs_x509_store;
typedef struct x509_verify_param_st cs_x509_verify_param;
typedef struct evp_pkey_st cs_evp_pkey;
typedef struct bio_st cs_bio;
typedef struct bio_method_st cs_bio_method;
typedef struct evp_md_st cs_evp_md;
typedef struct evp_md_ctx_st cs_evp_md_ctx;
typedef struct evp_pkey_ctx_st cs_evp_pkey_ctx;
typedef struct x509_lookup_st cs_x509_lookup;
typedef struct x509_lookup_method_st cs_x509_lookup_method;
typedef struct x509_object_st cs_x509_object;
typedef struct x509_name_st cs_x509_name;
typedef struct stack_st cs_stack;

/// The server's ALPN choice (`SSL_CTX_set_alpn_select_cb`).
typedef int (*cs_alpn_select_cb)(cs_ssl *, const unsigned char **, unsigned char *, const unsigned char *,
                                 unsigned int, void *);
/// A certificate lookup's search by subject (`X509_LOOKUP_get_by_subject_fn`; the type is
/// `X509_LOOKUP_TYPE`).
typedef int (*cs_lookup_by_subject)(cs_x509_lookup *, int, const cs_x509_name *, cs_x509_object *);
/// A PEM passphrase callback.
typedef int (*cs_pem_password_cb)(char *, int, int, void *);

/* The functions used, resolved by name. X-macro: (library, return type, name, parameters). */
#define CS_OPENSSL_SYMBOLS(X) \
    X(crypto, unsigned long, OpenSSL_version_num, (void)) \
    X(crypto, const char *, OPENSSL_info, (int)) \
    X(ssl, int, OPENSSL_init_ssl, (uint64_t, const cs_ossl_init_settings *)) \
    X(ssl, const cs_ssl_method *, TLS_client_method, (void)) \
    X(ssl, const cs_ssl_method *, TLS_server_method, (void)) \
    X(ssl, cs_ssl_ctx *, SSL_CTX_new, (const cs_ssl_method *)) \
    X(ssl, void, SSL_CTX_free, (cs_ssl_ctx *)) \
    X(ssl, long, SSL_CTX_ctrl, (cs_ssl_ctx *, int, long, void *)) \
    X(ssl, uint64_t, SSL_CTX_set_options, (cs_ssl_ctx *, uint64_t)) \
    X(ssl, void, SSL_CTX_set_verify, (cs_ssl_ctx *, int, void *)) \
    X(ssl, cs_x509_store *, SSL_CTX_get_cert_store, (const cs_ssl_ctx *)) \
    X(ssl, int, SSL_CTX_use_certificate, (cs_ssl_ctx *, cs_x509 *)) \
    X(ssl, int, SSL_CTX_use_PrivateKey, (cs_ssl_ctx *, cs_evp_pkey *)) \
    X(ssl, int, SSL_CTX_check_private_key, (const cs_ssl_ctx *)) \
    X(ssl, int, SSL_CTX_set_alpn_protos, (cs_ssl_ctx *, const unsigned char *, unsigned int)) \
    X(ssl, void, SSL_CTX_set_alpn_select_cb, (cs_ssl_ctx *, cs_alpn_select_cb, void *)) \
    X(ssl, void, SSL_CTX_set_security_level, (cs_ssl_ctx *, int)) \
    X(ssl, int, SSL_CTX_set_cipher_list, (cs_ssl_ctx *, const char *)) \
    X(ssl, void, SSL_CTX_set_default_read_buffer_len, (cs_ssl_ctx *, size_t)) \
    X(ssl, cs_ssl *, SSL_new, (cs_ssl_ctx *)) \
    X(ssl, void, SSL_free, (cs_ssl *)) \
    X(ssl, void, SSL_set_bio, (cs_ssl *, cs_bio *, cs_bio *)) \
    X(ssl, long, SSL_ctrl, (cs_ssl *, int, long, void *)) \
    X(ssl, int, SSL_set1_host, (cs_ssl *, const char *)) \
    X(ssl, void, SSL_set_hostflags, (cs_ssl *, unsigned int)) \
    X(ssl, cs_x509_verify_param *, SSL_get0_param, (cs_ssl *)) \
    X(ssl, int, SSL_set_session, (cs_ssl *, cs_ssl_session *)) \
    X(ssl, cs_ssl_session *, SSL_get1_session, (cs_ssl *)) \
    X(ssl, int, SSL_SESSION_is_resumable, (const cs_ssl_session *)) \
    X(ssl, void, SSL_SESSION_free, (cs_ssl_session *)) \
    X(ssl, void, SSL_set_connect_state, (cs_ssl *)) \
    X(ssl, void, SSL_set_accept_state, (cs_ssl *)) \
    X(ssl, int, SSL_do_handshake, (cs_ssl *)) \
    X(ssl, int, SSL_read_ex, (cs_ssl *, void *, size_t, size_t *)) \
    X(ssl, int, SSL_has_pending, (const cs_ssl *)) \
    X(ssl, int, SSL_write_ex, (cs_ssl *, const void *, size_t, size_t *)) \
    X(ssl, int, SSL_shutdown, (cs_ssl *)) \
    X(ssl, int, SSL_get_error, (const cs_ssl *, int)) \
    X(ssl, long, SSL_get_verify_result, (const cs_ssl *)) \
    X(ssl, int, SSL_session_reused, (const cs_ssl *)) \
    X(ssl, void, SSL_get0_alpn_selected, (const cs_ssl *, const unsigned char **, unsigned int *)) \
    X(ssl, int, SSL_version, (const cs_ssl *)) \
    X(ssl, const cs_ssl_cipher *, SSL_get_current_cipher, (const cs_ssl *)) \
    X(ssl, const char *, SSL_CIPHER_get_name, (const cs_ssl_cipher *)) \
    X(ssl, cs_stack *, SSL_get1_supported_ciphers, (cs_ssl *)) \
    X(crypto, int, X509_VERIFY_PARAM_set1_ip_asc, (cs_x509_verify_param *, const char *)) \
    X(crypto, const char *, X509_verify_cert_error_string, (long)) \
    X(crypto, int, X509_STORE_add_cert, (cs_x509_store *, cs_x509 *)) \
    X(crypto, int, X509_STORE_lock, (cs_x509_store *)) \
    X(crypto, int, X509_STORE_unlock, (cs_x509_store *)) \
    X(crypto, cs_stack *, X509_STORE_get0_objects, (const cs_x509_store *)) \
    X(crypto, cs_x509_lookup *, X509_STORE_add_lookup, (cs_x509_store *, cs_x509_lookup_method *)) \
    X(crypto, cs_x509_lookup_method *, X509_LOOKUP_meth_new, (const char *)) \
    X(crypto, int, X509_LOOKUP_meth_set_get_by_subject, (cs_x509_lookup_method *, cs_lookup_by_subject)) \
    X(crypto, cs_x509_lookup_method *, X509_LOOKUP_hash_dir, (void)) \
    X(crypto, cs_x509_lookup_method *, X509_LOOKUP_store, (void)) \
    X(crypto, int, X509_LOOKUP_ctrl, (cs_x509_lookup *, int, const char *, long, char **)) \
    X(crypto, int, X509_LOOKUP_set_method_data, (cs_x509_lookup *, void *)) \
    X(crypto, void *, X509_LOOKUP_get_method_data, (const cs_x509_lookup *)) \
    X(crypto, cs_x509_store *, X509_LOOKUP_get_store, (const cs_x509_lookup *)) \
    X(crypto, int, X509_load_cert_crl_file, (cs_x509_lookup *, const char *, int)) \
    X(crypto, cs_x509_object *, X509_OBJECT_retrieve_by_subject, (cs_stack *, int, const cs_x509_name *)) \
    X(crypto, cs_x509 *, X509_OBJECT_get0_X509, (const cs_x509_object *)) \
    X(crypto, int, X509_OBJECT_set1_X509, (cs_x509_object *, cs_x509 *)) \
    X(crypto, const char *, X509_get_default_cert_file, (void)) \
    X(crypto, const char *, X509_get_default_cert_file_env, (void)) \
    X(crypto, int, OPENSSL_sk_num, (const cs_stack *)) \
    X(crypto, void, OPENSSL_sk_free, (cs_stack *)) \
    X(crypto, void, X509_free, (cs_x509 *)) \
    X(crypto, void, EVP_PKEY_free, (cs_evp_pkey *)) \
    X(crypto, cs_bio *, BIO_new_mem_buf, (const void *, int)) \
    X(crypto, int, BIO_free, (cs_bio *)) \
    X(crypto, long, BIO_ctrl, (cs_bio *, int, long, void *)) \
    X(crypto, int, BIO_new_bio_pair, (cs_bio **, size_t, cs_bio **, size_t)) \
    X(crypto, int, BIO_nread0, (cs_bio *, char **)) \
    X(crypto, int, BIO_nread, (cs_bio *, char **, int)) \
    X(crypto, int, BIO_nwrite0, (cs_bio *, char **)) \
    X(crypto, int, BIO_nwrite, (cs_bio *, char **, int)) \
    X(crypto, size_t, BIO_ctrl_pending, (cs_bio *)) \
    X(crypto, cs_x509 *, PEM_read_bio_X509, (cs_bio *, cs_x509 **, void *, void *)) \
    X(crypto, cs_evp_pkey *, PEM_read_bio_PrivateKey, (cs_bio *, cs_evp_pkey **, cs_pem_password_cb, void *)) \
    X(crypto, cs_evp_pkey *, PEM_read_bio_PUBKEY, (cs_bio *, cs_evp_pkey **, cs_pem_password_cb, void *)) \
    X(crypto, cs_evp_pkey *, X509_get_pubkey, (cs_x509 *)) \
    X(crypto, int, EVP_PKEY_get_base_id, (const cs_evp_pkey *)) \
    X(crypto, int, EVP_PKEY_get_bits, (const cs_evp_pkey *)) \
    X(crypto, const cs_evp_md *, EVP_sha256, (void)) \
    X(crypto, int, EVP_Digest, (const void *, size_t, unsigned char *, unsigned int *, const cs_evp_md *, void *)) \
    X(crypto, cs_evp_md_ctx *, EVP_MD_CTX_new, (void)) \
    X(crypto, void, EVP_MD_CTX_free, (cs_evp_md_ctx *)) \
    X(crypto, const cs_evp_md *, EVP_md5, (void)) \
    X(crypto, int, EVP_DigestInit_ex, (cs_evp_md_ctx *, const cs_evp_md *, void *)) \
    X(crypto, int, EVP_DigestUpdate, (cs_evp_md_ctx *, const void *, size_t)) \
    X(crypto, int, EVP_DigestFinal_ex, (cs_evp_md_ctx *, unsigned char *, unsigned int *)) \
    X(crypto, int, EVP_MD_CTX_copy_ex, (cs_evp_md_ctx *, const cs_evp_md_ctx *)) \
    X(crypto, int, EVP_DigestSignInit, \
      (cs_evp_md_ctx *, cs_evp_pkey_ctx **, const cs_evp_md *, void *, cs_evp_pkey *)) \
    X(crypto, int, EVP_DigestSign, (cs_evp_md_ctx *, unsigned char *, size_t *, const unsigned char *, size_t)) \
    X(crypto, int, EVP_DigestVerifyInit, \
      (cs_evp_md_ctx *, cs_evp_pkey_ctx **, const cs_evp_md *, void *, cs_evp_pkey *)) \
    X(crypto, int, EVP_DigestVerify, (cs_evp_md_ctx *, const unsigned char *, size_t, const unsigned char *, size_t)) \
    X(crypto, unsigned long, ERR_get_error, (void)) \
    X(crypto, unsigned long, ERR_peek_error, (void)) \
    X(crypto, void, ERR_clear_error, (void)) \
    X(crypto, void, ERR_error_string_n, (unsigned long, char *, size_t))

/// Every OpenSSL function NativeTLS calls, resolved from the libraries loaded at run time.
typedef struct cs_openssl {
#define CS_OPENSSL_FIELD(lib, ret, name, params) ret(*name) params;
    CS_OPENSSL_SYMBOLS(CS_OPENSSL_FIELD)
#undef CS_OPENSSL_FIELD
} cs_openssl;

/// Loads `libssl.so.3` and `libcrypto.so.3` once per process (thread-safe) and returns the
/// table, read-only from then on; NULL when a library or function is missing or the
/// library is older than OpenSSL 3.0, and then `cs_openssl_unavailable_reason()` says why.
const cs_openssl *cs_openssl_load(void);

/// Why `cs_openssl_load()` failed, or NULL when it succeeded (it loads first).
const char *cs_openssl_unavailable_reason(void);

/// Tries to load the given libraries into a scratch table, then unloads them, leaving the
/// process-wide table alone (for tests and diagnostics). Returns 1 on success; otherwise 0
/// with a NUL-terminated explanation in `message` (at most `capacity` bytes).
int cs_openssl_probe(const char *libssl_path, const char *libcrypto_path, char *message, size_t capacity);

/// Checks a run-time `OpenSSL_version_num()`: 1 for 3.0 or newer; otherwise 0 with the
/// reason in `message`.
int cs_openssl_check_version(unsigned long version, char *message, size_t capacity);

#endif
