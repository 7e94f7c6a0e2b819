/*
 * The run-time OpenSSL 3 loader (see CloudStorageTLS.h).
 *
 * Why dlopen: the SDK must build without OpenSSL headers or a -dev package and
 * depend on no Swift package, yet on Linux every machine that runs Foundation
 * already has libssl.so.3 (FoundationNetworking links libcurl, which links it).
 * OpenSSL 3 keeps its ABI stable across 3.x, so the few prototypes below,
 * declared by hand with opaque types, stay valid. Macros of the C API
 * (SSL_CTX_set_min_proto_version, SSL_set_tlsext_host_name, ...) are spelled
 * out as the control calls they expand to.
 */

#include "CloudStorageTLS.h"

#include <stdio.h>
#include <string.h>

#if defined(__linux__)

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

/* Opaque OpenSSL types; only pointers to them cross this file. */
typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_method_st SSL_METHOD;
typedef struct ssl_session_st SSL_SESSION;
typedef struct x509_st X509;
typedef struct x509_store_st X509_STORE;
typedef struct x509_verify_param_st X509_VERIFY_PARAM;
typedef struct evp_pkey_st EVP_PKEY;
typedef struct bio_st BIO;
typedef struct evp_md_st EVP_MD;
typedef struct evp_md_ctx_st EVP_MD_CTX;
typedef struct evp_pkey_ctx_st EVP_PKEY_CTX;

/* Constants of the OpenSSL 3 ABI (ssl.h, tls1.h, ssl3.h, err.h). */
#define CTRL_SET_MSG_CALLBACK_ARG 16
#define CTRL_SET_TLSEXT_HOSTNAME 55
#define CTRL_CHAIN_CERT 89
#define CTRL_SET_MIN_PROTO_VERSION 123
#define CTRL_SET_MAX_PROTO_VERSION 124
#define CTRL_SET_READ_AHEAD 41
#define BIO_CTRL_FLUSH_CMD 11
#define BIO_C_SET_BUFF_SIZE_CMD 117
#define BIO_NOCLOSE_FLAG 0x00
#define TLSEXT_NAMETYPE_HOST_NAME 0
#define CHECK_FLAG_NO_PARTIAL_WILDCARDS 0x4
#define VERIFY_PEER 0x01
#define OP_NO_RENEGOTIATION ((uint64_t)1 << 30)
#define RT_HEADER 0x100
#define TLSEXT_ERR_OK 0
#define TLSEXT_ERR_NOACK 3
#define ERR_SYSTEM_FLAG_BIT ((unsigned long)0x80000000u)
#define ERR_REASON_BITS 0x7FFFFFul
#define NID_RSA_ENCRYPTION 6

typedef int (*alpn_select_cb)(SSL *, const unsigned char **, unsigned char *, const unsigned char *, unsigned int, void *);
typedef void (*msg_cb)(int, int, int, const void *, size_t, SSL *, void *);
typedef int (*pem_password_cb)(char *, int, int, void *);

/* The functions used, resolved by name. X-macro: (library, return type, name, parameters). */
#define CS_TLS_SYMBOLS(X) \
    X(ssl, const SSL_METHOD *, TLS_client_method, (void)) \
    X(ssl, const SSL_METHOD *, TLS_server_method, (void)) \
    X(ssl, SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *)) \
    X(ssl, void, SSL_CTX_free, (SSL_CTX *)) \
    X(ssl, long, SSL_CTX_ctrl, (SSL_CTX *, int, long, void *)) \
    X(ssl, uint64_t, SSL_CTX_set_options, (SSL_CTX *, uint64_t)) \
    X(ssl, void, SSL_CTX_set_verify, (SSL_CTX *, int, void *)) \
    X(ssl, int, SSL_CTX_set_default_verify_paths, (SSL_CTX *)) \
    X(ssl, X509_STORE *, SSL_CTX_get_cert_store, (const SSL_CTX *)) \
    X(ssl, int, SSL_CTX_use_certificate, (SSL_CTX *, X509 *)) \
    X(ssl, int, SSL_CTX_use_PrivateKey, (SSL_CTX *, EVP_PKEY *)) \
    X(ssl, int, SSL_CTX_check_private_key, (const SSL_CTX *)) \
    X(ssl, int, SSL_CTX_set_alpn_protos, (SSL_CTX *, const unsigned char *, unsigned int)) \
    X(ssl, void, SSL_CTX_set_alpn_select_cb, (SSL_CTX *, alpn_select_cb, void *)) \
    X(ssl, void, SSL_CTX_set_security_level, (SSL_CTX *, int)) \
    X(ssl, int, SSL_CTX_set_cipher_list, (SSL_CTX *, const char *)) \
    X(ssl, SSL *, SSL_new, (SSL_CTX *)) \
    X(ssl, void, SSL_free, (SSL *)) \
    X(ssl, int, SSL_set_fd, (SSL *, int)) \
    X(ssl, void, SSL_set_bio, (SSL *, BIO *, BIO *)) \
    X(ssl, void, SSL_CTX_set_default_read_buffer_len, (SSL_CTX *, size_t)) \
    X(ssl, long, SSL_ctrl, (SSL *, int, long, void *)) \
    X(ssl, void, SSL_set_msg_callback, (SSL *, msg_cb)) \
    X(ssl, int, SSL_set1_host, (SSL *, const char *)) \
    X(ssl, void, SSL_set_hostflags, (SSL *, unsigned int)) \
    X(ssl, X509_VERIFY_PARAM *, SSL_get0_param, (SSL *)) \
    X(ssl, int, SSL_set_session, (SSL *, SSL_SESSION *)) \
    X(ssl, SSL_SESSION *, SSL_get1_session, (SSL *)) \
    X(ssl, int, SSL_SESSION_is_resumable, (const SSL_SESSION *)) \
    X(ssl, void, SSL_SESSION_free, (SSL_SESSION *)) \
    X(ssl, int, SSL_connect, (SSL *)) \
    X(ssl, int, SSL_accept, (SSL *)) \
    X(ssl, int, SSL_read_ex, (SSL *, void *, size_t, size_t *)) \
    X(ssl, int, SSL_has_pending, (const SSL *)) \
    X(ssl, int, SSL_write_ex, (SSL *, const void *, size_t, size_t *)) \
    X(ssl, int, SSL_shutdown, (SSL *)) \
    X(ssl, int, SSL_get_error, (const SSL *, int)) \
    X(ssl, long, SSL_get_verify_result, (const SSL *)) \
    X(ssl, int, SSL_session_reused, (const SSL *)) \
    X(ssl, void, SSL_get0_alpn_selected, (const SSL *, const unsigned char **, unsigned int *)) \
    X(ssl, int, SSL_version, (const SSL *)) \
    X(crypto, int, X509_VERIFY_PARAM_set1_ip_asc, (X509_VERIFY_PARAM *, const char *)) \
    X(crypto, const char *, X509_verify_cert_error_string, (long)) \
    X(crypto, int, X509_STORE_add_cert, (X509_STORE *, X509 *)) \
    X(crypto, void, X509_free, (X509 *)) \
    X(crypto, void, EVP_PKEY_free, (EVP_PKEY *)) \
    X(crypto, BIO *, BIO_new_mem_buf, (const void *, int)) \
    X(crypto, int, BIO_free, (BIO *)) \
    X(crypto, const void *, BIO_f_buffer, (void)) \
    X(crypto, BIO *, BIO_new, (const void *)) \
    X(crypto, BIO *, BIO_new_socket, (int, int)) \
    X(crypto, BIO *, BIO_push, (BIO *, BIO *)) \
    X(crypto, long, BIO_ctrl, (BIO *, int, long, void *)) \
    X(crypto, X509 *, PEM_read_bio_X509, (BIO *, X509 **, void *, void *)) \
    X(crypto, EVP_PKEY *, PEM_read_bio_PrivateKey, (BIO *, EVP_PKEY **, pem_password_cb, void *)) \
    X(crypto, EVP_PKEY *, PEM_read_bio_PUBKEY, (BIO *, EVP_PKEY **, pem_password_cb, void *)) \
    X(crypto, EVP_PKEY *, X509_get_pubkey, (X509 *)) \
    X(crypto, int, EVP_PKEY_get_base_id, (const EVP_PKEY *)) \
    X(crypto, int, EVP_PKEY_get_bits, (const EVP_PKEY *)) \
    X(crypto, const EVP_MD *, EVP_sha256, (void)) \
    X(crypto, int, EVP_Digest, (const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *, void *)) \
    X(crypto, EVP_MD_CTX *, EVP_MD_CTX_new, (void)) \
    X(crypto, void, EVP_MD_CTX_free, (EVP_MD_CTX *)) \
    X(crypto, int, EVP_DigestSignInit, (EVP_MD_CTX *, EVP_PKEY_CTX **, const EVP_MD *, void *, EVP_PKEY *)) \
    X(crypto, int, EVP_DigestSign, (EVP_MD_CTX *, unsigned char *, size_t *, const unsigned char *, size_t)) \
    X(crypto, int, EVP_DigestVerifyInit, (EVP_MD_CTX *, EVP_PKEY_CTX **, const EVP_MD *, void *, EVP_PKEY *)) \
    X(crypto, int, EVP_DigestVerify, (EVP_MD_CTX *, const unsigned char *, size_t, const unsigned char *, size_t)) \
    X(crypto, unsigned long, ERR_get_error, (void)) \
    X(crypto, unsigned long, ERR_peek_error, (void)) \
    X(crypto, void, ERR_clear_error, (void)) \
    X(crypto, void, ERR_error_string_n, (unsigned long, char *, size_t))

typedef struct symbol_table {
#define CS_TLS_FIELD(lib, ret, name, params) ret(*name) params;
    CS_TLS_SYMBOLS(CS_TLS_FIELD)
#undef CS_TLS_FIELD
} symbol_table;

/* Filled once by cs_tls_load(); read-only afterwards, so any thread may use it. */
static symbol_table F;
static int loaded;
static char unavailable_reason[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/*
 * Opens both libraries and resolves every symbol into `table`. On success the
 * handles are returned through `ssl_handle`/`crypto_handle`; on failure they
 * are closed and `message` says which library or symbol was missing.
 */
static int load_into(symbol_table *table, const char *ssl_path, const char *crypto_path, void **ssl_handle,
                     void **crypto_handle, char *message, size_t capacity) {
    /* libcrypto first: libssl depends on it, and RTLD_LOCAL keeps both out of the global namespace. */
    void *crypto = dlopen(crypto_path, RTLD_NOW | RTLD_LOCAL);
    if (crypto == NULL) {
        const char *why = dlerror();
        snprintf(message, capacity, "cannot load %s: %s", crypto_path, why ? why : "unknown error");
        return 0;
    }
    void *ssl = dlopen(ssl_path, RTLD_NOW | RTLD_LOCAL);
    if (ssl == NULL) {
        const char *why = dlerror();
        snprintf(message, capacity, "cannot load %s: %s", ssl_path, why ? why : "unknown error");
        dlclose(crypto);
        return 0;
    }
#define CS_TLS_RESOLVE(lib, ret, name, params) \
    *(void **)(&table->name) = dlsym(lib, #name); \
    if (table->name == NULL) { \
        snprintf(message, capacity, "%s lacks the function %s (OpenSSL 3 is required)", \
                 (lib) == ssl ? ssl_path : crypto_path, #name); \
        dlclose(ssl); \
        dlclose(crypto); \
        memset(table, 0, sizeof *table); \
        return 0; \
    }
    CS_TLS_SYMBOLS(CS_TLS_RESOLVE)
#undef CS_TLS_RESOLVE
    *ssl_handle = ssl;
    *crypto_handle = crypto;
    return 1;
}

static void load_default(void) {
    void *ssl = NULL, *crypto = NULL;
    /* The handles stay open for the life of the process: the table points into them. */
    loaded = load_into(&F, "libssl.so.3", "libcrypto.so.3", &ssl, &crypto, unavailable_reason,
                       sizeof unavailable_reason);
}

int cs_tls_load(void) {
    pthread_once(&load_once, load_default);
    return loaded;
}

const char *cs_tls_unavailable_reason(void) {
    return cs_tls_load() ? NULL : unavailable_reason;
}

int cs_tls_load_from(const char *libssl_path, const char *libcrypto_path, char *message, size_t capacity) {
    symbol_table scratch;
    void *ssl = NULL, *crypto = NULL;
    if (capacity > 0) {
        message[0] = '\0';
    }
    if (!load_into(&scratch, libssl_path, libcrypto_path, &ssl, &crypto, message, capacity)) {
        return 0;
    }
    dlclose(ssl);
    dlclose(crypto);
    return 1;
}

int cs_tls_error_has_reason(unsigned long code, int reason) {
    /* ERR_GET_REASON is an inline function in the headers; this is its body. */
    if (code == 0 || (code & ERR_SYSTEM_FLAG_BIT) != 0) {
        return 0;
    }
    return (int)(code & ERR_REASON_BITS) == reason;
}

const char *cs_tls_verify_error_string(long result) {
    if (!cs_tls_load()) {
        return "OpenSSL is not loaded";
    }
    return F.X509_verify_cert_error_string(result);
}

/* Records the thread's errno and first queued OpenSSL error, then empties the queue. */
static void capture(cs_tls_io_result *result, int ok, int ssl_error, int sys_errno, size_t count) {
    result->ok = ok;
    result->ssl_error = ssl_error;
    result->sys_errno = sys_errno;
    result->count = count;
    result->error_code = F.ERR_get_error();
    result->error_message[0] = '\0';
    if (result->error_code != 0) {
        F.ERR_error_string_n(result->error_code, result->error_message, sizeof result->error_message);
    }
    F.ERR_clear_error();
}

/* Rejects use before a successful load, so callers get an error instead of a NULL call. */
static int require_loaded(cs_tls_io_result *result) {
    if (cs_tls_load()) {
        F.ERR_clear_error();
        return 1;
    }
    if (result != NULL) {
        memset(result, 0, sizeof *result);
        snprintf(result->error_message, sizeof result->error_message, "%s", unavailable_reason);
    }
    return 0;
}

/* ---- contexts ---- */

/* Bytes OpenSSL may read from the socket at once (see read-ahead in cs_tls_ctx_new). */
#define CS_TLS_READ_BUFFER (256 * 1024)
/* Bytes of encrypted records gathered before one write(2) (see cs_tls_conn_new). */
#define CS_TLS_WRITE_BUFFER (128 * 1024)

/* Chooses http/1.1 when the client offers it; otherwise no ALPN (HTTP/1.1 is the default anyway). */
static int select_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                         unsigned int inlen, void *arg) {
    (void)ssl;
    (void)arg;
    unsigned int i = 0;
    while (i < inlen) {
        unsigned int n = in[i];
        if (n == 0 || n > inlen - i - 1) {
            break;
        }
        if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = (unsigned char)n;
            return TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return TLSEXT_ERR_NOACK;
}

cs_tls_ctx *cs_tls_ctx_new(int server, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return NULL;
    }
    SSL_CTX *ctx = F.SSL_CTX_new(server ? F.TLS_server_method() : F.TLS_client_method());
    if (ctx == NULL) {
        capture(result, 0, CS_TLS_ERROR_SSL, 0, 0);
        return NULL;
    }
    F.SSL_CTX_ctrl(ctx, CTRL_SET_MIN_PROTO_VERSION, CS_TLS_VERSION_1_2, NULL);
    F.SSL_CTX_set_options(ctx, OP_NO_RENEGOTIATION);
    /*
     * Without read-ahead OpenSSL reads each record with two read(2) calls (the 5-byte
     * header, then the body): a 1 GiB body costs 131,072 system calls on the receiving
     * side. With it, one read fills a CS_TLS_READ_BUFFER buffer with several records.
     * Nobody waits for a TLS socket to become readable (the transports block in SSL_read,
     * bounded by SO_RCVTIMEO), so bytes held in OpenSSL's buffer are never missed; where a
     * poll checks an idle connection for stray bytes, cs_tls_conn_has_buffered_input
     * covers the ones already read ahead.
     */
    F.SSL_CTX_ctrl(ctx, CTRL_SET_READ_AHEAD, 1, NULL);
    F.SSL_CTX_set_default_read_buffer_len(ctx, CS_TLS_READ_BUFFER);
    if (!server) {
        F.SSL_CTX_set_verify(ctx, VERIFY_PEER, NULL);
    }
    capture(result, 1, CS_TLS_ERROR_NONE, 0, 0);
    return (cs_tls_ctx *)ctx;
}

void cs_tls_ctx_free(cs_tls_ctx *ctx) {
    if (ctx != NULL && cs_tls_load()) {
        F.SSL_CTX_free((SSL_CTX *)ctx);
    }
}

int cs_tls_ctx_use_default_trust(cs_tls_ctx *ctx, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return 0;
    }
    int ok = F.SSL_CTX_set_default_verify_paths((SSL_CTX *)ctx) == 1;
    capture(result, ok, ok ? CS_TLS_ERROR_NONE : CS_TLS_ERROR_SSL, 0, 0);
    return ok;
}

/* A read-only memory BIO over caller bytes, or NULL when too large for OpenSSL's int length. */
/* A read-only BIO over PEM bytes, once the library is loaded; NULL with `result` filled in otherwise. */
/*
 * The passphrase callback for every PEM private key: none. Without it, OpenSSL's
 * default callback would prompt on the terminal for an encrypted key and block
 * the process; with it, an encrypted key is an error like any other bad key.
 */
static int no_passphrase(char *buffer, int size, int rwflag, void *userdata) {
    (void)buffer;
    (void)size;
    (void)rwflag;
    (void)userdata;
    return -1;
}

static BIO *open_pem(const void *bytes, size_t length, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return NULL;
    }
    BIO *bio = length > (size_t)0x7FFFFFFF ? NULL : F.BIO_new_mem_buf(bytes, (int)length);
    if (bio == NULL) {
        capture(result, 0, CS_TLS_ERROR_SSL, 0, 0);
    }
    return bio;
}

int cs_tls_ctx_add_trust_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result) {
    BIO *bio = open_pem(pem, length, result);
    if (bio == NULL) {
        return -1;
    }
    X509_STORE *store = F.SSL_CTX_get_cert_store((SSL_CTX *)ctx);
    int added = 0;
    for (;;) {
        X509 *cert = F.PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (cert == NULL) {
            break;
        }
        int ok = F.X509_STORE_add_cert(store, cert);
        F.X509_free(cert);
        if (!ok) {
            F.BIO_free(bio);
            capture(result, 0, CS_TLS_ERROR_SSL, 0, 0);
            return -1;
        }
        added += 1;
    }
    F.BIO_free(bio);
    /* The loop ends on "no start line" at the end of the buffer; anything else is a malformed certificate. */
    unsigned long last = F.ERR_peek_error();
    if (last != 0 && !cs_tls_error_has_reason(last, 108 /* PEM_R_NO_START_LINE */)) {
        capture(result, 0, CS_TLS_ERROR_SSL, 0, 0);
        return -1;
    }
    F.ERR_clear_error();
    capture(result, 1, CS_TLS_ERROR_NONE, 0, 0);
    return added;
}

int cs_tls_ctx_use_certificate_chain_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result) {
    BIO *bio = open_pem(pem, length, result);
    if (bio == NULL) {
        return 0;
    }
    X509 *leaf = F.PEM_read_bio_X509(bio, NULL, NULL, NULL);
    int ok = leaf != NULL && F.SSL_CTX_use_certificate((SSL_CTX *)ctx, leaf) == 1;
    if (leaf != NULL) {
        F.X509_free(leaf);
    }
    while (ok) {
        X509 *extra = F.PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (extra == NULL) {
            F.ERR_clear_error(); /* end of buffer */
            break;
        }
        /* SSL_CTX_add0_chain_cert: the context takes ownership on success. */
        if (F.SSL_CTX_ctrl((SSL_CTX *)ctx, CTRL_CHAIN_CERT, 0, extra) != 1) {
            F.X509_free(extra);
            ok = 0;
        }
    }
    F.BIO_free(bio);
    capture(result, ok, ok ? CS_TLS_ERROR_NONE : CS_TLS_ERROR_SSL, 0, 0);
    return ok;
}

int cs_tls_ctx_use_private_key_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result) {
    BIO *bio = open_pem(pem, length, result);
    if (bio == NULL) {
        return 0;
    }
    EVP_PKEY *key = F.PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    F.BIO_free(bio);
    int ok = key != NULL && F.SSL_CTX_use_PrivateKey((SSL_CTX *)ctx, key) == 1
             && F.SSL_CTX_check_private_key((SSL_CTX *)ctx) == 1;
    if (key != NULL) {
        F.EVP_PKEY_free(key);
    }
    capture(result, ok, ok ? CS_TLS_ERROR_NONE : CS_TLS_ERROR_SSL, 0, 0);
    return ok;
}

int cs_tls_ctx_use_alpn_http11(cs_tls_ctx *ctx, int server) {
    if (!cs_tls_load()) {
        return 0;
    }
    if (server) {
        F.SSL_CTX_set_alpn_select_cb((SSL_CTX *)ctx, select_http11, NULL);
        return 1;
    }
    static const unsigned char protos[] = "\x08http/1.1";
    /* Unlike most of OpenSSL, this returns 0 on success. */
    return F.SSL_CTX_set_alpn_protos((SSL_CTX *)ctx, protos, sizeof protos - 1) == 0;
}

int cs_tls_ctx_set_protocol_range(cs_tls_ctx *ctx, int minimum, int maximum) {
    if (!cs_tls_load()) {
        return 0;
    }
    return F.SSL_CTX_ctrl((SSL_CTX *)ctx, CTRL_SET_MIN_PROTO_VERSION, minimum, NULL) == 1
           && F.SSL_CTX_ctrl((SSL_CTX *)ctx, CTRL_SET_MAX_PROTO_VERSION, maximum, NULL) == 1;
}

int cs_tls_ctx_set_legacy_security(cs_tls_ctx *ctx, int level, const char *ciphers) {
    if (!cs_tls_load()) {
        return 0;
    }
    F.SSL_CTX_set_security_level((SSL_CTX *)ctx, level);
    int ok = F.SSL_CTX_set_cipher_list((SSL_CTX *)ctx, ciphers) == 1;
    F.ERR_clear_error();
    return ok;
}

/* ---- connections ---- */

/*
 * OpenSSL's socket BIO writes with write(2), which raises SIGPIPE when the peer has
 * gone; its default action kills the process. Each call that may write therefore runs
 * with SIGPIPE blocked on this thread, and a SIGPIPE it caused is consumed before the
 * mask is restored (the error itself comes back as EPIPE). A thread that already
 * blocks SIGPIPE, as the transports' I/O threads do, pays one pthread_sigmask.
 */
typedef struct sigpipe_guard {
    sigset_t old_mask;
    int was_blocked;
    int was_pending;
} sigpipe_guard;

static void sigpipe_guard_begin(sigpipe_guard *guard) {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &guard->old_mask);
    guard->was_blocked = sigismember(&guard->old_mask, SIGPIPE) == 1;
    guard->was_pending = 0;
    if (!guard->was_blocked) {
        sigset_t pending;
        sigemptyset(&pending);
        /* A SIGPIPE already pending is someone else's; leave it for them. */
        guard->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    }
}

static void sigpipe_guard_end(sigpipe_guard *guard, int sys_errno) {
    if (guard->was_blocked) {
        return;
    }
    if (sys_errno == EPIPE && !guard->was_pending) {
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) == -1 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &guard->old_mask, NULL);
}

struct cs_tls_conn {
    SSL *ssl;
    /* The buffering BIO on top of the write chain (owned by `ssl`). */
    BIO *write_bio;
    /* The socket (owned by the caller). */
    int fd;
    /* The first record header received from the peer, to recognise a plain HTTP answer. */
    unsigned char first_header[5];
    int first_header_seen;
};

/* OpenSSL reports each received record header here before checking it, even one that is not TLS at all. */
static void on_message(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl, void *arg) {
    (void)version;
    (void)ssl;
    cs_tls_conn *conn = arg;
    if (write_p == 0 && content_type == RT_HEADER && conn != NULL && !conn->first_header_seen && len >= 5) {
        memcpy(conn->first_header, buf, 5);
        conn->first_header_seen = 1;
    }
}

/*
 * Gives `ssl` the socket: reads straight from it; writes through a buffering BIO.
 * OpenSSL hands its write BIO one record (at most 16 KiB) at a time, so a plain socket
 * BIO makes one write(2) per record; the buffer gathers CS_TLS_WRITE_BUFFER bytes of
 * records per write(2) instead, which the receiver also reads in fewer, larger pieces.
 * OpenSSL flushes the BIO after each handshake flight and alert (an alert's flush only
 * as far as a non-blocking socket takes it); callers flush with cs_tls_conn_flush after
 * each write and shutdown, so nothing stays buffered between calls. Each BIO has
 * its own socket BIO (BIO_NOCLOSE: the caller owns the descriptor), as SSL_free frees
 * the read and write chains separately.
 */
static int attach_socket(cs_tls_conn *conn, int fd) {
    BIO *reader = F.BIO_new_socket(fd, BIO_NOCLOSE_FLAG);
    BIO *writer = F.BIO_new_socket(fd, BIO_NOCLOSE_FLAG);
    BIO *buffer = F.BIO_new(F.BIO_f_buffer());
    int size = 1; /* BIO_set_write_buffer_size: a non-zero int selects the output buffer */
    if (reader == NULL || writer == NULL || buffer == NULL
        || F.BIO_ctrl(buffer, BIO_C_SET_BUFF_SIZE_CMD, CS_TLS_WRITE_BUFFER, &size) != 1) {
        if (reader != NULL) {
            F.BIO_free(reader);
        }
        if (writer != NULL) {
            F.BIO_free(writer);
        }
        if (buffer != NULL) {
            F.BIO_free(buffer);
        }
        return 0;
    }
    F.SSL_set_bio(conn->ssl, reader, F.BIO_push(buffer, writer));
    conn->write_bio = buffer;
    return 1;
}

cs_tls_conn *cs_tls_conn_new(cs_tls_ctx *ctx, int fd, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return NULL;
    }
    cs_tls_conn *conn = calloc(1, sizeof *conn);
    if (conn == NULL) {
        capture(result, 0, CS_TLS_ERROR_SYSCALL, ENOMEM, 0);
        return NULL;
    }
    conn->fd = fd;
    conn->ssl = F.SSL_new((SSL_CTX *)ctx);
    if (conn->ssl == NULL || !attach_socket(conn, fd)) {
        capture(result, 0, CS_TLS_ERROR_SSL, 0, 0);
        if (conn->ssl != NULL) {
            F.SSL_free(conn->ssl);
        }
        free(conn);
        return NULL;
    }
    F.SSL_set_msg_callback(conn->ssl, on_message);
    F.SSL_ctrl(conn->ssl, CTRL_SET_MSG_CALLBACK_ARG, 0, conn);
    capture(result, 1, CS_TLS_ERROR_NONE, 0, 0);
    return conn;
}

void cs_tls_conn_free(cs_tls_conn *conn) {
    if (conn == NULL) {
        return;
    }
    if (cs_tls_load()) {
        F.SSL_free(conn->ssl);
    }
    free(conn);
}

int cs_tls_conn_set_peer_name(cs_tls_conn *conn, const char *name, int is_ip) {
    if (!cs_tls_load()) {
        return 0;
    }
    int ok;
    if (is_ip) {
        /* RFC 6066 forbids IP literals in SNI; the check is against the certificate's IP SANs. */
        ok = F.X509_VERIFY_PARAM_set1_ip_asc(F.SSL_get0_param(conn->ssl), name) == 1;
    } else {
        /* "*.example.com" is fine; "w*.example.com" is not (RFC 6125 discourages it). */
        F.SSL_set_hostflags(conn->ssl, CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = F.SSL_set1_host(conn->ssl, name) == 1
             && F.SSL_ctrl(conn->ssl, CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_HOST_NAME, (void *)name) == 1;
    }
    F.ERR_clear_error();
    return ok;
}

int cs_tls_conn_set_session(cs_tls_conn *conn, cs_tls_session *session) {
    if (!cs_tls_load()) {
        return 0;
    }
    return F.SSL_set_session(conn->ssl, (SSL_SESSION *)session) == 1;
}

cs_tls_session *cs_tls_conn_copy_resumable_session(cs_tls_conn *conn) {
    if (!cs_tls_load()) {
        return NULL;
    }
    SSL_SESSION *session = F.SSL_get1_session(conn->ssl);
    if (session != NULL && !F.SSL_SESSION_is_resumable(session)) {
        F.SSL_SESSION_free(session);
        return NULL;
    }
    return (cs_tls_session *)session;
}

void cs_tls_session_free(cs_tls_session *session) {
    if (session != NULL && cs_tls_load()) {
        F.SSL_SESSION_free((SSL_SESSION *)session);
    }
}

void cs_tls_conn_handshake(cs_tls_conn *conn, int server, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return;
    }
    sigpipe_guard guard;
    sigpipe_guard_begin(&guard);
    errno = 0;
    int ret = server ? F.SSL_accept(conn->ssl) : F.SSL_connect(conn->ssl);
    int saved = errno;
    sigpipe_guard_end(&guard, saved);
    int ok = ret == 1;
    capture(result, ok, ok ? CS_TLS_ERROR_NONE : F.SSL_get_error(conn->ssl, ret), saved, 0);
}

/*
 * SSL_read returns at most one record (16 KiB), so after read-ahead one call would leave
 * several records in OpenSSL's buffer and every caller layer would run once per record.
 * This drains what is already there into the rest of the caller's buffer, with the socket
 * made non-blocking meanwhile so that a partial record never makes the call wait for the
 * peer while it already holds bytes to return (the partial record stays buffered for the
 * next call). A failure here is left for the next call to report (OpenSSL keeps the
 * connection's error and close_notify state), as these bytes are already the caller's.
 * Returns the bytes added.
 */
static size_t read_buffered(cs_tls_conn *conn, unsigned char *buffer, size_t capacity) {
    int flags = fcntl(conn->fd, F_GETFL);
    if (flags < 0) {
        return 0;
    }
    /* A non-blocking socket (the native client's) needs no switching back and forth. */
    int switched = (flags & O_NONBLOCK) == 0;
    if (switched && fcntl(conn->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        return 0;
    }
    size_t total = 0;
    while (total < capacity && F.SSL_has_pending(conn->ssl)) {
        size_t count = 0;
        if (F.SSL_read_ex(conn->ssl, buffer + total, capacity - total, &count) != 1) {
            break;
        }
        total += count;
    }
    F.ERR_clear_error();
    if (switched) {
        fcntl(conn->fd, F_SETFL, flags);
    }
    return total;
}

void cs_tls_conn_read(cs_tls_conn *conn, void *buffer, size_t capacity, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return;
    }
    size_t count = 0;
    sigpipe_guard guard;
    sigpipe_guard_begin(&guard);
    errno = 0;
    int ret = F.SSL_read_ex(conn->ssl, buffer, capacity, &count);
    int saved = errno;
    if (ret == 1 && count < capacity && F.SSL_has_pending(conn->ssl)) {
        count += read_buffered(conn, (unsigned char *)buffer + count, capacity - count);
    }
    sigpipe_guard_end(&guard, saved);
    capture(result, ret == 1, ret == 1 ? CS_TLS_ERROR_NONE : F.SSL_get_error(conn->ssl, ret), saved, count);
}

void cs_tls_conn_write(cs_tls_conn *conn, const void *bytes, size_t length, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return;
    }
    size_t count = 0;
    sigpipe_guard guard;
    sigpipe_guard_begin(&guard);
    errno = 0;
    int ret = F.SSL_write_ex(conn->ssl, bytes, length, &count);
    int saved = errno;
    sigpipe_guard_end(&guard, saved);
    capture(result, ret == 1, ret == 1 ? CS_TLS_ERROR_NONE : F.SSL_get_error(conn->ssl, ret), saved, count);
}

void cs_tls_conn_flush(cs_tls_conn *conn, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return;
    }
    sigpipe_guard guard;
    sigpipe_guard_begin(&guard);
    long flushed;
    int saved;
    /* The buffer keeps its place across an interrupted or partial write, so a flush can simply go on. */
    do {
        errno = 0;
        flushed = F.BIO_ctrl(conn->write_bio, BIO_CTRL_FLUSH_CMD, 0, NULL);
        saved = errno;
    } while (flushed <= 0 && saved == EINTR);
    sigpipe_guard_end(&guard, saved);
    if (flushed > 0) {
        capture(result, 1, CS_TLS_ERROR_NONE, 0, 0);
    } else if (saved == EAGAIN || saved == EWOULDBLOCK) {
        capture(result, 0, CS_TLS_ERROR_WANT_WRITE, saved, 0);
    } else {
        capture(result, 0, CS_TLS_ERROR_SYSCALL, saved, 0);
    }
}

void cs_tls_conn_shutdown(cs_tls_conn *conn, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return;
    }
    sigpipe_guard guard;
    sigpipe_guard_begin(&guard);
    errno = 0;
    int ret = F.SSL_shutdown(conn->ssl);
    int saved = errno;
    sigpipe_guard_end(&guard, saved);
    /* 0 means close_notify was sent and the peer's is still to come: done, for a one-way close. */
    int ok = ret >= 0;
    capture(result, ok, ok ? CS_TLS_ERROR_NONE : F.SSL_get_error(conn->ssl, ret), saved, 0);
}

long cs_tls_conn_verify_result(cs_tls_conn *conn) {
    return cs_tls_load() ? F.SSL_get_verify_result(conn->ssl) : -1;
}

int cs_tls_conn_peer_spoke_plain_http(cs_tls_conn *conn) {
    return conn->first_header_seen && memcmp(conn->first_header, "HTTP/", 5) == 0;
}

int cs_tls_conn_has_buffered_input(cs_tls_conn *conn) {
    return cs_tls_load() && F.SSL_has_pending(conn->ssl) == 1;
}

int cs_tls_conn_session_reused(cs_tls_conn *conn) {
    return cs_tls_load() && F.SSL_session_reused(conn->ssl) == 1;
}

void cs_tls_conn_alpn(cs_tls_conn *conn, char *buffer, size_t capacity) {
    if (capacity == 0) {
        return;
    }
    buffer[0] = '\0';
    if (!cs_tls_load()) {
        return;
    }
    const unsigned char *data = NULL;
    unsigned int length = 0;
    F.SSL_get0_alpn_selected(conn->ssl, &data, &length);
    if (data != NULL && length < capacity) {
        memcpy(buffer, data, length);
        buffer[length] = '\0';
    }
}

int cs_tls_conn_version(cs_tls_conn *conn) {
    return cs_tls_load() ? F.SSL_version(conn->ssl) : 0;
}

/* ---- RSA keys and SHA-256 (for OAuth 2 JWTs and V4 signatures) ---- */

/* Sets an error of our own (not from OpenSSL's queue) on `result`. */
static void fail_with(cs_tls_io_result *result, const char *message) {
    F.ERR_clear_error();
    memset(result, 0, sizeof *result);
    result->ssl_error = CS_TLS_ERROR_SSL;
    snprintf(result->error_message, sizeof result->error_message, "%s", message);
}

cs_crypto_key *cs_crypto_rsa_key_from_pem(const void *pem, size_t length, int kind, int *bits,
                                          cs_tls_io_result *result) {
    BIO *bio = open_pem(pem, length, result);
    if (bio == NULL) {
        return NULL;
    }
    EVP_PKEY *key = NULL;
    if (kind == CS_CRYPTO_PRIVATE_KEY) {
        key = F.PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    } else if (kind == CS_CRYPTO_PUBLIC_KEY) {
        key = F.PEM_read_bio_PUBKEY(bio, NULL, no_passphrase, NULL);
    } else {
        X509 *cert = F.PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (cert != NULL) {
            key = F.X509_get_pubkey(cert);
            F.X509_free(cert);
        }
    }
    F.BIO_free(bio);
    if (key == NULL) {
        capture(result, 0, CS_TLS_ERROR_SSL, 0, 0);
        if (result->error_message[0] == '\0') {
            snprintf(result->error_message, sizeof result->error_message, "no PEM block of the expected type");
        }
        return NULL;
    }
    if (F.EVP_PKEY_get_base_id(key) != NID_RSA_ENCRYPTION) {
        F.EVP_PKEY_free(key);
        fail_with(result, "the key is not an RSA key");
        return NULL;
    }
    *bits = F.EVP_PKEY_get_bits(key);
    capture(result, 1, CS_TLS_ERROR_NONE, 0, 0);
    return (cs_crypto_key *)key;
}

void cs_crypto_key_free(cs_crypto_key *key) {
    if (key != NULL) {
        F.EVP_PKEY_free((EVP_PKEY *)key);
    }
}

int cs_crypto_rsa_sha256_sign(cs_crypto_key *key, const void *message, size_t length, void *signature,
                              size_t capacity, size_t *signature_length, cs_tls_io_result *result) {
    if (!require_loaded(result)) {
        return 0;
    }
    EVP_MD_CTX *md = F.EVP_MD_CTX_new();
    size_t written = capacity;
    /* EVP_DigestSignInit defaults to PKCS #1 v1.5 padding for an RSA key: RS256 and GOOG4-RSA-SHA256. */
    int ok = md != NULL && F.EVP_DigestSignInit(md, NULL, F.EVP_sha256(), NULL, (EVP_PKEY *)key) == 1
             && F.EVP_DigestSign(md, signature, &written, message, length) == 1;
    if (md != NULL) {
        F.EVP_MD_CTX_free(md);
    }
    *signature_length = ok ? written : 0;
    capture(result, ok, ok ? CS_TLS_ERROR_NONE : CS_TLS_ERROR_SSL, 0, 0);
    return ok;
}

int cs_crypto_rsa_sha256_verify(cs_crypto_key *key, const void *message, size_t length, const void *signature,
                                size_t signature_length) {
    if (!cs_tls_load()) {
        return 0;
    }
    EVP_MD_CTX *md = F.EVP_MD_CTX_new();
    int ok = md != NULL && F.EVP_DigestVerifyInit(md, NULL, F.EVP_sha256(), NULL, (EVP_PKEY *)key) == 1
             && F.EVP_DigestVerify(md, signature, signature_length, message, length) == 1;
    if (md != NULL) {
        F.EVP_MD_CTX_free(md);
    }
    /* A bad signature leaves an entry in this thread's queue; it must not leak into a later call. */
    F.ERR_clear_error();
    return ok;
}

int cs_crypto_sha256(const void *message, size_t length, unsigned char digest[32]) {
    if (!cs_tls_load()) {
        return 0;
    }
    unsigned int size = 0;
    int ok = F.EVP_Digest(message, length, digest, &size, F.EVP_sha256(), NULL) == 1 && size == 32;
    F.ERR_clear_error();
    return ok;
}

#else /* not Linux: Apple platforms use their own TLS frameworks. */

static const char *const stub_reason = "the OpenSSL loader runs only on Linux";

static void stub_result(cs_tls_io_result *result) {
    if (result != NULL) {
        memset(result, 0, sizeof *result);
        snprintf(result->error_message, sizeof result->error_message, "%s", stub_reason);
    }
}

int cs_tls_load(void) { return 0; }
const char *cs_tls_unavailable_reason(void) { return stub_reason; }
int cs_tls_load_from(const char *libssl_path, const char *libcrypto_path, char *message, size_t capacity) {
    (void)libssl_path;
    (void)libcrypto_path;
    if (capacity > 0) {
        snprintf(message, capacity, "%s", stub_reason);
    }
    return 0;
}
int cs_tls_error_has_reason(unsigned long code, int reason) {
    (void)code;
    (void)reason;
    return 0;
}
const char *cs_tls_verify_error_string(long result) {
    (void)result;
    return stub_reason;
}
cs_tls_ctx *cs_tls_ctx_new(int server, cs_tls_io_result *result) {
    (void)server;
    stub_result(result);
    return NULL;
}
void cs_tls_ctx_free(cs_tls_ctx *ctx) { (void)ctx; }
int cs_tls_ctx_use_default_trust(cs_tls_ctx *ctx, cs_tls_io_result *result) {
    (void)ctx;
    stub_result(result);
    return 0;
}
int cs_tls_ctx_add_trust_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result) {
    (void)ctx;
    (void)pem;
    (void)length;
    stub_result(result);
    return -1;
}
int cs_tls_ctx_use_certificate_chain_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result) {
    (void)ctx;
    (void)pem;
    (void)length;
    stub_result(result);
    return 0;
}
int cs_tls_ctx_use_private_key_pem(cs_tls_ctx *ctx, const void *pem, size_t length, cs_tls_io_result *result) {
    (void)ctx;
    (void)pem;
    (void)length;
    stub_result(result);
    return 0;
}
int cs_tls_ctx_use_alpn_http11(cs_tls_ctx *ctx, int server) {
    (void)ctx;
    (void)server;
    return 0;
}
int cs_tls_ctx_set_protocol_range(cs_tls_ctx *ctx, int minimum, int maximum) {
    (void)ctx;
    (void)minimum;
    (void)maximum;
    return 0;
}
int cs_tls_ctx_set_legacy_security(cs_tls_ctx *ctx, int level, const char *ciphers) {
    (void)ctx;
    (void)level;
    (void)ciphers;
    return 0;
}
cs_tls_conn *cs_tls_conn_new(cs_tls_ctx *ctx, int fd, cs_tls_io_result *result) {
    (void)ctx;
    (void)fd;
    stub_result(result);
    return NULL;
}
void cs_tls_conn_free(cs_tls_conn *conn) { (void)conn; }
int cs_tls_conn_set_peer_name(cs_tls_conn *conn, const char *name, int is_ip) {
    (void)conn;
    (void)name;
    (void)is_ip;
    return 0;
}
int cs_tls_conn_set_session(cs_tls_conn *conn, cs_tls_session *session) {
    (void)conn;
    (void)session;
    return 0;
}
cs_tls_session *cs_tls_conn_copy_resumable_session(cs_tls_conn *conn) {
    (void)conn;
    return NULL;
}
void cs_tls_session_free(cs_tls_session *session) { (void)session; }
void cs_tls_conn_handshake(cs_tls_conn *conn, int server, cs_tls_io_result *result) {
    (void)conn;
    (void)server;
    stub_result(result);
}
void cs_tls_conn_read(cs_tls_conn *conn, void *buffer, size_t capacity, cs_tls_io_result *result) {
    (void)conn;
    (void)buffer;
    (void)capacity;
    stub_result(result);
}
void cs_tls_conn_write(cs_tls_conn *conn, const void *bytes, size_t length, cs_tls_io_result *result) {
    (void)conn;
    (void)bytes;
    (void)length;
    stub_result(result);
}
void cs_tls_conn_flush(cs_tls_conn *conn, cs_tls_io_result *result) {
    (void)conn;
    stub_result(result);
}
void cs_tls_conn_shutdown(cs_tls_conn *conn, cs_tls_io_result *result) {
    (void)conn;
    stub_result(result);
}
long cs_tls_conn_verify_result(cs_tls_conn *conn) {
    (void)conn;
    return -1;
}
int cs_tls_conn_peer_spoke_plain_http(cs_tls_conn *conn) {
    (void)conn;
    return 0;
}
int cs_tls_conn_session_reused(cs_tls_conn *conn) {
    (void)conn;
    return 0;
}
int cs_tls_conn_has_buffered_input(cs_tls_conn *conn) {
    (void)conn;
    return 0;
}
void cs_tls_conn_alpn(cs_tls_conn *conn, char *buffer, size_t capacity) {
    (void)conn;
    if (capacity > 0) {
        buffer[0] = '\0';
    }
}
int cs_tls_conn_version(cs_tls_conn *conn) {
    (void)conn;
    return 0;
}

cs_crypto_key *cs_crypto_rsa_key_from_pem(const void *pem, size_t length, int kind, int *bits,
                                          cs_tls_io_result *result) {
    (void)pem;
    (void)length;
    (void)kind;
    (void)bits;
    stub_result(result);
    return NULL;
}
void cs_crypto_key_free(cs_crypto_key *key) { (void)key; }
int cs_crypto_rsa_sha256_sign(cs_crypto_key *key, const void *message, size_t length, void *signature,
                              size_t capacity, size_t *signature_length, cs_tls_io_result *result) {
    (void)key;
    (void)message;
    (void)length;
    (void)signature;
    (void)capacity;
    *signature_length = 0;
    stub_result(result);
    return 0;
}
int cs_crypto_rsa_sha256_verify(cs_crypto_key *key, const void *message, size_t length, const void *signature,
                                size_t signature_length) {
    (void)key;
    (void)message;
    (void)length;
    (void)signature;
    (void)signature_length;
    return 0;
}
int cs_crypto_sha256(const void *message, size_t length, unsigned char digest[32]) {
    (void)message;
    (void)length;
    (void)digest;
    return 0;
}

#endif
