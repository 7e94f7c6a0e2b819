/*
 * The run-time OpenSSL 3 loader (see COpenSSLLoader.h).
 *
 * Why dlopen: the SDK must build without OpenSSL headers or a -dev package and depend on
 * no Swift package, yet on Linux every machine that runs Foundation already has
 * libssl.so.3 (FoundationNetworking links libcurl, which links it). OpenSSL 3 keeps its
 * ABI stable across 3.x, so the prototypes in the header, declared by hand with opaque
 * types, stay valid; the version is checked before anything else is resolved.
 */

#include "COpenSSLLoader.h"

#include <stdio.h>
#include <string.h>

/* OpenSSL 3.0.0 as OpenSSL_version_num() spells it (0xMNN00PP0). */
#define CS_OPENSSL_MINIMUM_VERSION 0x30000000UL

int cs_openssl_check_version(unsigned long version, char *message, size_t capacity) {
    if (version >= CS_OPENSSL_MINIMUM_VERSION) {
        return 1;
    }
    snprintf(message, capacity, "OpenSSL %lu.%lu.%lu is too old: 3.0 or newer is required", (version >> 28) & 0xF,
             (version >> 20) & 0xFF, (version >> 12) & 0xFF);
    return 0;
}

#if defined(__linux__)

#include <dlfcn.h>
#include <pthread.h>

/* Filled once by cs_openssl_load(); read-only afterwards, so any thread may use it. */
static cs_openssl table;
static int loaded;
static char unavailable_reason[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void *open_library(const char *path, char *message, size_t capacity) {
    /* RTLD_LOCAL keeps OpenSSL's symbols out of the global namespace. */
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(message, capacity, "cannot load %s: %s", path, why ? why : "unknown error");
    }
    return handle;
}

/*
 * Opens both libraries, checks the version and resolves every symbol into `into`. On
 * success the handles are returned; on failure they are closed, `into` is zeroed and
 * `message` says which library, version or symbol was wrong.
 */
static int load_into(cs_openssl *into, const char *ssl_path, const char *crypto_path, void **ssl_handle,
                     void **crypto_handle, char *message, size_t capacity) {
    /* libcrypto first: libssl depends on it. */
    void *crypto = open_library(crypto_path, message, capacity);
    if (crypto == NULL) {
        return 0;
    }
    void *ssl = open_library(ssl_path, message, capacity);
    if (ssl == NULL) {
        dlclose(crypto);
        return 0;
    }
    unsigned long (*version)(void) = NULL;
    *(void **)(&version) = dlsym(crypto, "OpenSSL_version_num");
    int ok = version != NULL;
    if (!ok) {
        snprintf(message, capacity, "%s lacks OpenSSL_version_num (OpenSSL 3 is required)", crypto_path);
    } else {
        ok = cs_openssl_check_version(version(), message, capacity);
    }
#define CS_OPENSSL_RESOLVE(lib, ret, name, params) \
    if (ok) { \
        *(void **)(&into->name) = dlsym(lib, #name); \
        if (into->name == NULL) { \
            snprintf(message, capacity, "%s lacks the function %s (OpenSSL 3 is required)", \
                     (lib) == ssl ? ssl_path : crypto_path, #name); \
            ok = 0; \
        } \
    }
    CS_OPENSSL_SYMBOLS(CS_OPENSSL_RESOLVE)
#undef CS_OPENSSL_RESOLVE
    if (!ok) {
        dlclose(ssl);
        dlclose(crypto);
        memset(into, 0, sizeof *into);
        return 0;
    }
    *ssl_handle = ssl;
    *crypto_handle = crypto;
    return 1;
}

static void load_default(void) {
    void *ssl = NULL, *crypto = NULL;
    /* The handles stay open for the life of the process: the table points into them. */
    loaded = load_into(&table, "libssl.so.3", "libcrypto.so.3", &ssl, &crypto, unavailable_reason,
                       sizeof unavailable_reason);
}

const cs_openssl *cs_openssl_load(void) {
    pthread_once(&load_once, load_default);
    return loaded ? &table : NULL;
}

int cs_openssl_probe(const char *libssl_path, const char *libcrypto_path, char *message, size_t capacity) {
    cs_openssl scratch;
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

#else /* not Linux: Apple platforms use their own TLS frameworks. */

static const char unavailable_reason[] = "the OpenSSL loader runs only on Linux";

const cs_openssl *cs_openssl_load(void) { return NULL; }

int cs_openssl_probe(const char *libssl_path, const char *libcrypto_path, char *message, size_t capacity) {
    (void)libssl_path;
    (void)libcrypto_path;
    snprintf(message, capacity, "%s", unavailable_reason);
    return 0;
}

#endif

const char *cs_openssl_unavailable_reason(void) {
    return cs_openssl_load() != NULL ? NULL : unavailable_reason;
}
