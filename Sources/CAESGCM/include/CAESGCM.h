#ifndef CAESGCM_H
#define CAESGCM_H

/*
 * AES-GCM (128- and 256-bit keys, 96-bit IVs) with VAES and VPCLMULQDQ on 256-bit registers:
 * two blocks per instruction, sixteen blocks per loop turn (enough independent AES rounds in
 * flight to hide their latency), their GHASH folded with one reduction. OpenSSL 3.0 has no such path for CPUs without AVX-512 (AMD Zen 3/4, Intel Alder
 * Lake and later): there it runs AES-NI on 128-bit registers at about half this speed.
 *
 * `cs_gcm_provider_init` offers it to OpenSSL as a provider ("cloudstorage-gcm"), so that TLS
 * contexts that prefer it (property query "?provider=cloudstorage-gcm") keep OpenSSL's whole
 * record layer and swap only the AEAD. Off x86_64, or on a CPU without the instructions,
 * `cs_gcm_is_accelerated` is 0 and nothing should use it.
 */

#include <stddef.h>
#include <stdint.h>

/// Whether this CPU (and its OS) can run the code below: AES, PCLMULQDQ, AVX2, VAES and
/// VPCLMULQDQ, with the AVX state enabled. Checked once.
int cs_gcm_is_accelerated(void);

/// Whether this file was compiled with optimization. Unoptimized (a debug build), the code
/// runs about 40 times slower than OpenSSL's, so only tests should use it then.
int cs_gcm_is_optimized(void);

/// How many cipher contexts the provider has made in this process (a diagnostic for tests).
unsigned long cs_gcm_provider_contexts(void);

/// How many powers of GHASH's H an expanded key keeps: the blocks of one loop turn.
#define CS_GCM_POWERS 16

/// An expanded key: the AES round keys and the first sixteen powers of GHASH's H.
typedef struct cs_gcm_key {
    uint8_t round_keys[15][16];
    uint8_t powers[CS_GCM_POWERS][16];
    /// Each power's two 64-bit halves added (in both halves), for Karatsuba multiplication.
    uint8_t power_sums[CS_GCM_POWERS][16];
    int rounds;
} cs_gcm_key;

/// One message's progress: GHASH so far, the next counter, unused key stream and lengths.
typedef struct cs_gcm_state {
    uint8_t ghash[16];
    uint8_t counter[16];
    uint8_t first_key_stream[16];
    uint8_t key_stream[16];
    uint8_t pending[16];
    uint64_t aad_length;
    uint64_t text_length;
    /// Bytes of `key_stream` used (16: none left). Also how many bytes `pending` holds while
    /// the text is under way.
    unsigned key_stream_used;
    unsigned pending_length;
    int text_started;
} cs_gcm_state;

/// Expands a 16- or 32-byte key. Returns 0 for another length.
int cs_gcm_set_key(cs_gcm_key *key, const uint8_t *bytes, size_t length);

/// Starts a message with a 12-byte IV.
void cs_gcm_start(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t iv[12]);

/// Adds authenticated data. All of it comes before the first `cs_gcm_crypt`; returns 0 after.
int cs_gcm_add_aad(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t *bytes, size_t length);

/// Encrypts (`encrypt` 1) or decrypts `length` bytes from `input` to `output`, which may be the
/// same buffer (not otherwise overlapping). Any split of a message into calls gives the same
/// result. Returns 0 when the message would exceed GCM's limit (2^36 - 32 bytes).
int cs_gcm_crypt(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t *input, uint8_t *output,
                 size_t length, int encrypt);

/// Ends the message and writes its 16-byte tag.
void cs_gcm_finish(cs_gcm_state *state, const cs_gcm_key *key, uint8_t tag[16]);

/// The OpenSSL provider entry point (`OSSL_provider_init_fn`), for `OSSL_PROVIDER_add_builtin`.
/// Its one operation is ciphers: AES-128-GCM and AES-256-GCM, for TLS 1.3 and 1.2 records.
int cs_gcm_provider_init(const void *handle, const void *in, const void **out, void **provider_context);

/// The provider's name.
extern const char *const cs_gcm_provider_name;

#endif
