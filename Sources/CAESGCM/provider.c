/*
 * The OpenSSL provider that offers aes_gcm.c to OpenSSL's TLS record layer (see CAESGCM.h).
 *
 * It follows what OpenSSL's own GCM provider does for the calls libssl makes:
 * - TLS 1.3: a 12-byte IV per record, the record header as AAD (update with no output), the
 *   text, final, then the tag read (encrypting) or set before (decrypting);
 * - TLS 1.2: a fixed 4-byte IV part ("tlsivfixed"; encrypting, the 8-byte explicit part starts
 *   random and counts up), then per record the 13-byte AAD ("tlsaad") and one in-place update
 *   over explicit IV, text and tag.
 * No OpenSSL header is used: the dispatch numbers, parameter names and structures below are
 * OpenSSL 3's stable provider ABI (core.h, core_dispatch.h, core_names.h).
 */
#include "CAESGCM.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

typedef void (*cs_function)(void);
typedef struct {
    int id;
    cs_function function;
} cs_dispatch;
typedef struct {
    const char *key;
    unsigned int type;
    void *data;
    size_t size;
    size_t returned;
} cs_param;
typedef struct {
    const char *names;
    const char *properties;
    const cs_dispatch *implementation;
    const char *description;
} cs_algorithm;

enum { parameter_integer = 1, parameter_unsigned = 2, parameter_utf8 = 4, parameter_octets = 5 };
enum { operation_cipher = 2, mode_gcm = 6 };
enum { explicit_iv_length = 8, fixed_iv_length = 4, tag_length = 16, tls12_aad_length = 13 };

const char *const cs_gcm_provider_name = "cloudstorage-gcm";

typedef struct {
    cs_gcm_key key;
    cs_gcm_state state;
    size_t key_length;
    uint8_t iv[12];
    uint8_t tag[16];
    /// The TLS 1.2 record's AAD, when one is set (`tls_aad_set`).
    uint8_t tls_aad[tls12_aad_length];
    int encrypting, key_set, iv_set, started, tag_set, tag_ready, tls_aad_set, tls_iv_fixed;
    size_t expected_tag_length;
} cs_gcm_context;

/* ---- Parameters ---- */

static cs_param *find(cs_param *params, const char *key) {
    for (; params != NULL && params->key != NULL; params++)
        if (strcmp(params->key, key) == 0) return params;
    return NULL;
}

static int set_number(cs_param *param, uint64_t value) {
    if (param->type != parameter_integer && param->type != parameter_unsigned) return 0;
    if (param->size == sizeof(uint32_t)) {
        uint32_t narrow = (uint32_t)value;
        memcpy(param->data, &narrow, sizeof(narrow));
    } else if (param->size == sizeof(uint64_t)) {
        memcpy(param->data, &value, sizeof(value));
    } else {
        return 0;
    }
    param->returned = param->size;
    return 1;
}

static int get_number(const cs_param *param, uint64_t *value) {
    if (param->type != parameter_integer && param->type != parameter_unsigned) return 0;
    if (param->size == sizeof(uint32_t)) {
        uint32_t narrow;
        memcpy(&narrow, param->data, sizeof(narrow));
        *value = narrow;
    } else if (param->size == sizeof(uint64_t)) {
        memcpy(value, param->data, sizeof(*value));
    } else {
        return 0;
    }
    return 1;
}

static int set_octets(cs_param *param, const void *bytes, size_t length) {
    if (param->type != parameter_octets) return 0;
    param->returned = length;
    if (param->data == NULL) return 1;
    if (param->size < length) return 0;
    memcpy(param->data, bytes, length);
    return 1;
}

#define CS_PARAM(key, type) {key, type, NULL, 0, 0}
#define CS_PARAM_END {NULL, 0, NULL, 0, 0}

/* ---- The cipher ---- */

static unsigned long contexts_made;

unsigned long cs_gcm_provider_contexts(void) { return __atomic_load_n(&contexts_made, __ATOMIC_RELAXED); }

static void *new_context(void *provider, size_t key_length) {
    (void)provider;
    if (!cs_gcm_is_accelerated()) return NULL;
    cs_gcm_context *context = malloc(sizeof(cs_gcm_context));
    if (context == NULL) return NULL;
    memset(context, 0, sizeof(*context));
    context->key_length = key_length;
    __atomic_fetch_add(&contexts_made, 1, __ATOMIC_RELAXED);
    return context;
}
static void *new_context_128(void *provider) { return new_context(provider, 16); }
static void *new_context_256(void *provider) { return new_context(provider, 32); }

static void free_context(void *context) {
    if (context == NULL) return;
    memset(context, 0, sizeof(cs_gcm_context)); /* keys and key stream */
    __asm__ __volatile__("" : : "r"(context) : "memory");
    free(context);
}

static void *duplicate_context(void *context) {
    cs_gcm_context *copy = malloc(sizeof(cs_gcm_context));
    if (copy == NULL) return NULL;
    memcpy(copy, context, sizeof(cs_gcm_context));
    __atomic_fetch_add(&contexts_made, 1, __ATOMIC_RELAXED);
    return copy;
}

static int set_context_parameters(void *opaque, const cs_param params[]);

static int initialize(cs_gcm_context *context, const uint8_t *key, size_t key_length, const uint8_t *iv,
                      size_t iv_length, const cs_param params[], int encrypting) {
    context->encrypting = encrypting;
    context->started = 0;
    context->tag_ready = 0;
    context->tls_aad_set = 0;
    if (iv != NULL) {
        if (iv_length != sizeof(context->iv)) return 0;
        memcpy(context->iv, iv, sizeof(context->iv));
        context->iv_set = 1;
    }
    if (key != NULL) {
        if (key_length != context->key_length || !cs_gcm_set_key(&context->key, key, key_length)) return 0;
        context->key_set = 1;
    }
    return set_context_parameters(context, params);
}

static int encrypt_init(void *context, const uint8_t *key, size_t key_length, const uint8_t *iv, size_t iv_length,
                        const cs_param params[]) {
    return initialize(context, key, key_length, iv, iv_length, params, 1);
}

static int decrypt_init(void *context, const uint8_t *key, size_t key_length, const uint8_t *iv, size_t iv_length,
                        const cs_param params[]) {
    return initialize(context, key, key_length, iv, iv_length, params, 0);
}

static int start(cs_gcm_context *context) {
    if (context->started) return 1;
    if (!context->key_set || !context->iv_set) return 0;
    cs_gcm_start(&context->state, &context->key, context->iv);
    context->started = 1;
    context->tag_ready = 0;
    return 1;
}

/// Constant-time comparison of `length` bytes.
static int same(const uint8_t *a, const uint8_t *b, size_t length) {
    uint8_t difference = 0;
    for (size_t i = 0; i < length; i++) difference |= a[i] ^ b[i];
    return difference == 0;
}

/// Ends the message: encrypting, keeps the tag to be read; decrypting, checks it. An encrypting
/// context needs a new IV before its next message, so that no IV is used twice.
static int finish(cs_gcm_context *context) {
    if (!context->started) return 0;
    uint8_t tag[16];
    cs_gcm_finish(&context->state, &context->key, tag);
    context->started = 0;
    if (context->encrypting) {
        memcpy(context->tag, tag, sizeof(tag));
        context->tag_ready = 1;
        context->iv_set = 0;
        return 1;
    }
    int valid = context->tag_set && same(tag, context->tag, context->expected_tag_length);
    context->tag_set = 0;
    return valid;
}

/// Adds one to the 8-byte explicit part of a TLS 1.2 IV (big-endian).
static void count_up(uint8_t iv[12]) {
    for (int i = 11; i >= fixed_iv_length; i--)
        if (++iv[i] != 0) break;
}

/// A whole TLS 1.2 record, in place: explicit IV, text, tag.
static int tls12_record(cs_gcm_context *context, uint8_t *output, size_t *output_length, const uint8_t *input,
                        size_t length) {
    context->tls_aad_set = 0;
    if (output != input || length < explicit_iv_length + tag_length || !context->key_set || !context->tls_iv_fixed)
        return 0;
    /* Encrypting, the explicit IV part goes out and counts up; decrypting, it comes in. */
    if (context->encrypting)
        memcpy(output, context->iv + fixed_iv_length, explicit_iv_length);
    else
        memcpy(context->iv + fixed_iv_length, input, explicit_iv_length);
    context->iv_set = 1;
    context->started = 0;
    if (!start(context)) return 0;
    if (context->encrypting) count_up(context->iv);
    size_t text = length - explicit_iv_length - tag_length;
    cs_gcm_add_aad(&context->state, &context->key, context->tls_aad, sizeof(context->tls_aad));
    if (!cs_gcm_crypt(&context->state, &context->key, input + explicit_iv_length, output + explicit_iv_length, text,
                      context->encrypting))
        return 0;
    uint8_t *tag = output + explicit_iv_length + text;
    if (context->encrypting) {
        finish(context);
        memcpy(tag, context->tag, tag_length);
        *output_length = length;
        return 1;
    }
    memcpy(context->tag, tag, tag_length);
    context->tag_set = 1;
    context->expected_tag_length = tag_length;
    if (!finish(context)) {
        memset(output + explicit_iv_length, 0, text);
        return 0;
    }
    *output_length = text;
    return 1;
}

static int update(void *opaque, uint8_t *output, size_t *output_length, size_t output_size, const uint8_t *input,
                  size_t length) {
    cs_gcm_context *context = opaque;
    if (context->tls_aad_set) return tls12_record(context, output, output_length, input, length);
    *output_length = 0;
    if (length == 0) return 1;
    if (!start(context)) return 0;
    if (output == NULL) {
        if (!cs_gcm_add_aad(&context->state, &context->key, input, length)) return 0;
    } else {
        if (output_size < length) return 0;
        if (!cs_gcm_crypt(&context->state, &context->key, input, output, length, context->encrypting)) return 0;
    }
    *output_length = length;
    return 1;
}

static int final(void *opaque, uint8_t *output, size_t *output_length, size_t output_size) {
    (void)output, (void)output_size;
    cs_gcm_context *context = opaque;
    *output_length = 0;
    if (!start(context)) return 0;
    return finish(context);
}

static int one_shot(void *opaque, uint8_t *output, size_t *output_length, size_t output_size, const uint8_t *input,
                    size_t length) {
    const cs_gcm_context *context = opaque;
    /* update() takes a TLS 1.2 record whole, and text; no input ends the message. */
    if (context->tls_aad_set || input != NULL) return update(opaque, output, output_length, output_size, input, length);
    return final(opaque, output, output_length, output_size);
}

static int get_algorithm_parameters(cs_param params[], size_t key_length) {
    cs_param *param;
    if ((param = find(params, "mode")) && !set_number(param, mode_gcm)) return 0;
    if ((param = find(params, "keylen")) && !set_number(param, key_length)) return 0;
    if ((param = find(params, "ivlen")) && !set_number(param, 12)) return 0;
    if ((param = find(params, "blocksize")) && !set_number(param, 1)) return 0;
    if ((param = find(params, "aead")) && !set_number(param, 1)) return 0;
    if ((param = find(params, "custom-iv")) && !set_number(param, 1)) return 0;
    if ((param = find(params, "cts")) && !set_number(param, 0)) return 0;
    if ((param = find(params, "tls-multi")) && !set_number(param, 0)) return 0;
    if ((param = find(params, "has-randkey")) && !set_number(param, 0)) return 0;
    return 1;
}
static int get_parameters_128(cs_param params[]) { return get_algorithm_parameters(params, 16); }
static int get_parameters_256(cs_param params[]) { return get_algorithm_parameters(params, 32); }

static int get_context_parameters(void *opaque, cs_param params[]) {
    cs_gcm_context *context = opaque;
    cs_param *param;
    if ((param = find(params, "keylen")) && !set_number(param, context->key_length)) return 0;
    if ((param = find(params, "ivlen")) && !set_number(param, sizeof(context->iv))) return 0;
    if ((param = find(params, "taglen")) && !set_number(param, tag_length)) return 0;
    if ((param = find(params, "tlsaadpad")) && !set_number(param, tag_length)) return 0;
    if ((param = find(params, "iv")) && !set_octets(param, context->iv, sizeof(context->iv))) return 0;
    if ((param = find(params, "updated-iv")) && !set_octets(param, context->iv, sizeof(context->iv))) return 0;
    if ((param = find(params, "tag"))) {
        if (!context->encrypting || !context->tag_ready || param->size == 0 || param->size > tag_length) return 0;
        if (!set_octets(param, context->tag, param->size)) return 0;
    }
    return 1;
}

/// The TLS 1.2 AAD: its length field loses the explicit IV and, decrypting, the tag.
static int set_tls12_aad(cs_gcm_context *context, const cs_param *param) {
    if (param->type != parameter_octets || param->size != tls12_aad_length) return 0;
    memcpy(context->tls_aad, param->data, tls12_aad_length);
    size_t length = ((size_t)context->tls_aad[11] << 8) | context->tls_aad[12];
    size_t overhead = explicit_iv_length + (context->encrypting ? 0 : tag_length);
    if (length < overhead) return 0;
    length -= overhead;
    context->tls_aad[11] = (uint8_t)(length >> 8);
    context->tls_aad[12] = (uint8_t)length;
    context->tls_aad_set = 1;
    return 1;
}

/// The TLS 1.2 fixed IV part; encrypting, the explicit part starts at a random value.
static int set_tls12_fixed_iv(cs_gcm_context *context, const cs_param *param) {
    if (param->type != parameter_octets) return 0;
    if (param->size == sizeof(context->iv)) {
        memcpy(context->iv, param->data, sizeof(context->iv));
    } else if (param->size == fixed_iv_length) {
        memcpy(context->iv, param->data, fixed_iv_length);
        if (context->encrypting) {
#if defined(__linux__)
            if (getrandom(context->iv + fixed_iv_length, explicit_iv_length, 0) != explicit_iv_length) return 0;
#else
            return 0;
#endif
        }
    } else {
        return 0;
    }
    context->tls_iv_fixed = 1;
    return 1;
}

static int set_context_parameters(void *opaque, const cs_param params[]) {
    cs_gcm_context *context = opaque;
    cs_param *list = (cs_param *)params, *param;
    uint64_t number;
    if ((param = find(list, "ivlen")) && (!get_number(param, &number) || number != sizeof(context->iv))) return 0;
    if ((param = find(list, "keylen")) && (!get_number(param, &number) || number != context->key_length)) return 0;
    if ((param = find(list, "tag"))) {
        if (param->type != parameter_octets || param->size == 0 || param->size > tag_length) return 0;
        if (param->data != NULL) {
            if (context->encrypting) return 0;
            memcpy(context->tag, param->data, param->size);
            context->tag_set = 1;
        }
        context->expected_tag_length = param->size;
    }
    if ((param = find(list, "tlsaad")) && !set_tls12_aad(context, param)) return 0;
    if ((param = find(list, "tlsivfixed")) && !set_tls12_fixed_iv(context, param)) return 0;
    return 1;
}

static const cs_param algorithm_parameters[] = {
    CS_PARAM("mode", parameter_unsigned), CS_PARAM("keylen", parameter_unsigned),
    CS_PARAM("ivlen", parameter_unsigned), CS_PARAM("blocksize", parameter_unsigned),
    CS_PARAM("aead", parameter_integer),  CS_PARAM("custom-iv", parameter_integer),
    CS_PARAM("cts", parameter_integer),   CS_PARAM("tls-multi", parameter_integer),
    CS_PARAM("has-randkey", parameter_integer), CS_PARAM_END,
};
static const cs_param context_gettable[] = {
    CS_PARAM("keylen", parameter_unsigned), CS_PARAM("ivlen", parameter_unsigned),
    CS_PARAM("taglen", parameter_unsigned), CS_PARAM("tlsaadpad", parameter_unsigned),
    CS_PARAM("iv", parameter_octets),       CS_PARAM("updated-iv", parameter_octets),
    CS_PARAM("tag", parameter_octets),      CS_PARAM_END,
};
static const cs_param context_settable[] = {
    CS_PARAM("ivlen", parameter_unsigned), CS_PARAM("keylen", parameter_unsigned),
    CS_PARAM("tag", parameter_octets),     CS_PARAM("tlsaad", parameter_octets),
    CS_PARAM("tlsivfixed", parameter_octets), CS_PARAM_END,
};
static const cs_param *gettable_algorithm(void *provider) {
    (void)provider;
    return algorithm_parameters;
}
static const cs_param *gettable_context(void *context, void *provider) {
    (void)context, (void)provider;
    return context_gettable;
}
static const cs_param *settable_context(void *context, void *provider) {
    (void)context, (void)provider;
    return context_settable;
}

#define CS_CIPHER_DISPATCH(bits)                                        \
    static const cs_dispatch cipher_##bits[] = {                        \
        {1, (cs_function)new_context_##bits},                           \
        {2, (cs_function)encrypt_init},                                 \
        {3, (cs_function)decrypt_init},                                 \
        {4, (cs_function)update},                                       \
        {5, (cs_function)final},                                        \
        {6, (cs_function)one_shot},                                     \
        {7, (cs_function)free_context},                                 \
        {8, (cs_function)duplicate_context},                            \
        {9, (cs_function)get_parameters_##bits},                        \
        {10, (cs_function)get_context_parameters},                      \
        {11, (cs_function)set_context_parameters},                      \
        {12, (cs_function)gettable_algorithm},                          \
        {13, (cs_function)gettable_context},                            \
        {14, (cs_function)settable_context},                            \
        {0, NULL},                                                      \
    };
CS_CIPHER_DISPATCH(128)
CS_CIPHER_DISPATCH(256)

static const cs_algorithm ciphers[] = {
    {"AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6", "provider=cloudstorage-gcm", cipher_128,
     "AES-128-GCM with VAES and VPCLMULQDQ"},
    {"AES-256-GCM:id-aes256-GCM:2.16.840.1.101.3.4.1.46", "provider=cloudstorage-gcm", cipher_256,
     "AES-256-GCM with VAES and VPCLMULQDQ"},
    {NULL, NULL, NULL, NULL},
};

/* ---- The provider ---- */

static const cs_algorithm *query_operation(void *provider, int operation, int *no_cache) {
    (void)provider;
    *no_cache = 0;
    return operation == operation_cipher ? ciphers : NULL;
}

static void teardown(void *provider) { (void)provider; }

static const cs_param provider_parameters[] = {
    CS_PARAM("name", parameter_utf8), CS_PARAM("status", parameter_integer), CS_PARAM_END,
};
static const cs_param *gettable_provider(void *provider) {
    (void)provider;
    return provider_parameters;
}
static int get_provider_parameters(void *provider, cs_param params[]) {
    (void)provider;
    cs_param *param;
    if ((param = find(params, "status")) && !set_number(param, 1)) return 0;
    if ((param = find(params, "name"))) {
        if (param->type != parameter_utf8 || param->size < strlen(cs_gcm_provider_name) + 1) return 0;
        memcpy(param->data, cs_gcm_provider_name, strlen(cs_gcm_provider_name) + 1);
        param->returned = strlen(cs_gcm_provider_name);
    }
    return 1;
}

static const cs_dispatch provider_functions[] = {
    {1024, (cs_function)teardown},
    {1025, (cs_function)gettable_provider},
    {1026, (cs_function)get_provider_parameters},
    {1027, (cs_function)query_operation},
    {0, NULL},
};

int cs_gcm_provider_init(const void *handle, const void *in, const void **out, void **provider_context) {
    (void)in;
    if (!cs_gcm_is_accelerated()) return 0;
    *out = provider_functions;
    *provider_context = (void *)handle;
    return 1;
}
