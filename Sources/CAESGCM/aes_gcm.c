/*
 * AES-GCM with VAES and VPCLMULQDQ on 256-bit registers (see CAESGCM.h).
 *
 * GHASH works on byte-reversed blocks: reversing a block's 16 bytes puts the coefficient of
 * x^0 in bit 127 and that of x^127 in bit 0. A carry-less product of two such values then has
 * the coefficient of x^(254 - k) in bit k. Keeping H shifted left by one bit (reduced modulo
 * the field polynomial) moves that to x^(255 - k), so each product is reduced by folding its
 * low 128 bits into its high 128 bits: bit k of the low half (x^(255 - k)) becomes bits k + 128,
 * k + 127, k + 126 and k + 121, since x^128 = x^7 + x^2 + x + 1. Two carry-less multiplications
 * by 0xC2 << 56 (bits 63, 62 and 57) do that 64 bits at a time. Powers of H kept in the same
 * form multiply to the next power in that form, so sixteen blocks are multiplied by H^16 ... H^1,
 * summed unreduced, and reduced once.
 */
#include "CAESGCM.h"

#include <string.h>

int cs_gcm_is_optimized(void) {
#if defined(__OPTIMIZE__)
    return 1;
#else
    return 0;
#endif
}

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>

#define CS_GCM_TARGET __attribute__((target("aes,pclmul,avx,avx2,vaes,vpclmulqdq,ssse3,sse4.1")))

static int detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const unsigned aes = 1u << 25, pclmul = 1u << 1, osxsave = 1u << 27, avx = 1u << 28;
    if ((c & (aes | pclmul | osxsave | avx)) != (aes | pclmul | osxsave | avx)) return 0;
    unsigned low, high;
    __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    if ((low & 6) != 6) return 0; /* XMM and YMM state enabled by the OS */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    const unsigned avx2 = 1u << 5, vaes = 1u << 9, vpclmulqdq = 1u << 10;
    return (b & avx2) && (c & vaes) && (c & vpclmulqdq);
}

int cs_gcm_is_accelerated(void) {
    static int state = -1; /* a race only computes the same answer twice */
    int known = __atomic_load_n(&state, __ATOMIC_RELAXED);
    if (known < 0) {
        known = detect();
        __atomic_store_n(&state, known, __ATOMIC_RELAXED);
    }
    return known;
}

/* ---- AES ---- */

CS_GCM_TARGET static inline __m128i spread(__m128i key) {
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    return _mm_xor_si128(key, _mm_slli_si128(key, 4));
}

#define CS_EXPAND128(i, rcon) \
    rk[i] = _mm_xor_si128(spread(rk[(i) - 1]), _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[(i) - 1], rcon), 0xff))
#define CS_EXPAND256_EVEN(i, rcon) \
    rk[i] = _mm_xor_si128(spread(rk[(i) - 2]), _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[(i) - 1], rcon), 0xff))
#define CS_EXPAND256_ODD(i) \
    rk[i] = _mm_xor_si128(spread(rk[(i) - 2]), _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[(i) - 1], 0), 0xaa))

CS_GCM_TARGET static void expand_key(__m128i rk[15], const uint8_t *bytes, int rounds) {
    rk[0] = _mm_loadu_si128((const __m128i *)bytes);
    if (rounds == 10) {
        CS_EXPAND128(1, 0x01);
        CS_EXPAND128(2, 0x02);
        CS_EXPAND128(3, 0x04);
        CS_EXPAND128(4, 0x08);
        CS_EXPAND128(5, 0x10);
        CS_EXPAND128(6, 0x20);
        CS_EXPAND128(7, 0x40);
        CS_EXPAND128(8, 0x80);
        CS_EXPAND128(9, 0x1b);
        CS_EXPAND128(10, 0x36);
    } else {
        rk[1] = _mm_loadu_si128((const __m128i *)(bytes + 16));
        CS_EXPAND256_EVEN(2, 0x01);
        CS_EXPAND256_ODD(3);
        CS_EXPAND256_EVEN(4, 0x02);
        CS_EXPAND256_ODD(5);
        CS_EXPAND256_EVEN(6, 0x04);
        CS_EXPAND256_ODD(7);
        CS_EXPAND256_EVEN(8, 0x08);
        CS_EXPAND256_ODD(9);
        CS_EXPAND256_EVEN(10, 0x10);
        CS_EXPAND256_ODD(11);
        CS_EXPAND256_EVEN(12, 0x20);
        CS_EXPAND256_ODD(13);
        CS_EXPAND256_EVEN(14, 0x40);
    }
}

/* Keys and states may lie anywhere (Swift does not keep C's alignment), so every load and store
   of them is unaligned: as fast as an aligned one when it does not cross a cache line. */
#define CS_LOAD(array, i) _mm_loadu_si128((const __m128i *)(array) + (i))
#define CS_STORE(array, i, value) _mm_storeu_si128((__m128i *)(array) + (i), value)
#define CS_LOAD256(array, i) _mm256_loadu_si256((const __m256i *)(array) + (i))

CS_GCM_TARGET static inline __m128i encrypt_block(const cs_gcm_key *key, __m128i block) {
    block = _mm_xor_si128(block, CS_LOAD(key->round_keys, 0));
    for (int round = 1; round < key->rounds; round++) block = _mm_aesenc_si128(block, CS_LOAD(key->round_keys, round));
    return _mm_aesenclast_si128(block, CS_LOAD(key->round_keys, key->rounds));
}

/* ---- GHASH ---- */

CS_GCM_TARGET static inline __m128i reverse_bytes(__m128i block) {
    return _mm_shuffle_epi8(block, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

CS_GCM_TARGET static inline __m256i reverse_bytes256(__m256i blocks) {
    const __m256i mask = _mm256_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6,
                                         7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm256_shuffle_epi8(blocks, mask);
}

/// Folds an unreduced product (low, middle, high: middle overlaps both by 64 bits) into 128 bits.
CS_GCM_TARGET static inline __m128i reduce(__m128i low, __m128i middle, __m128i high) {
    const __m128i polynomial = _mm_set_epi64x((long long)0xc200000000000000ull, 1);
    __m128i fold = _mm_clmulepi64_si128(low, polynomial, 0x10);
    middle = _mm_xor_si128(middle, _mm_shuffle_epi32(low, 0x4e));
    middle = _mm_xor_si128(middle, fold);
    fold = _mm_clmulepi64_si128(middle, polynomial, 0x10);
    high = _mm_xor_si128(high, _mm_shuffle_epi32(middle, 0x4e));
    return _mm_xor_si128(high, fold);
}

CS_GCM_TARGET static inline __m128i multiply(__m128i a, __m128i h) {
    __m128i low = _mm_clmulepi64_si128(a, h, 0x00);
    __m128i high = _mm_clmulepi64_si128(a, h, 0x11);
    __m128i middle = _mm_xor_si128(_mm_clmulepi64_si128(a, h, 0x01), _mm_clmulepi64_si128(a, h, 0x10));
    return reduce(low, middle, high);
}

/// Adds one block (as stored) to the GHASH value.
CS_GCM_TARGET static inline __m128i absorb(__m128i ghash, __m128i block, const cs_gcm_key *key) {
    return multiply(_mm_xor_si128(ghash, reverse_bytes(block)), CS_LOAD(key->powers, CS_GCM_POWERS - 1));
}

/// Absorbs `vectors` pairs of blocks (4 or 8: eight or sixteen blocks) with one reduction: the
/// unreduced products of the byte-reversed blocks with H^(2 vectors) ... H^1 summed.
CS_GCM_TARGET __attribute__((always_inline)) static inline __m128i absorb_vectors(__m128i ghash, const __m256i *blocks,
                                                                                int vectors, const cs_gcm_key *key) {
    __m256i low = _mm256_setzero_si256(), middle = low, high = low;
    const int first = CS_GCM_POWERS / 2 - vectors; /* the vector of powers that meets blocks[0] */
    /* Karatsuba: the middle term is (a_L + a_H)(h_L + h_H) - low - high, three products a block. */
    for (int i = 0; i < vectors; i++) {
        __m256i data = reverse_bytes256(blocks[i]);
        if (i == 0) data = _mm256_xor_si256(data, _mm256_zextsi128_si256(ghash));
        __m256i powers = CS_LOAD256(key->powers, first + i);
        low = _mm256_xor_si256(low, _mm256_clmulepi64_epi128(data, powers, 0x00));
        high = _mm256_xor_si256(high, _mm256_clmulepi64_epi128(data, powers, 0x11));
        __m256i halves = _mm256_xor_si256(data, _mm256_shuffle_epi32(data, 0x4e));
        middle = _mm256_xor_si256(middle, _mm256_clmulepi64_epi128(halves, CS_LOAD256(key->power_sums, first + i), 0x00));
    }
#define CS_FOLD_LANES(v) _mm_xor_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1))
    __m128i low128 = CS_FOLD_LANES(low), high128 = CS_FOLD_LANES(high);
    __m128i middle128 = _mm_xor_si128(CS_FOLD_LANES(middle), _mm_xor_si128(low128, high128));
    return reduce(low128, middle128, high128);
#undef CS_FOLD_LANES
}

CS_GCM_TARGET int cs_gcm_set_key(cs_gcm_key *key, const uint8_t *bytes, size_t length) {
    if (length != 16 && length != 32) return 0;
    key->rounds = length == 16 ? 10 : 14;
    __m128i rk[15];
    expand_key(rk, bytes, key->rounds);
    memcpy(key->round_keys, rk, sizeof(rk[0]) * (size_t)(key->rounds + 1));
    /* H, byte-reversed and shifted left by one bit, reduced: the form products need. */
    __m128i h = reverse_bytes(encrypt_block(key, _mm_setzero_si128()));
    uint64_t halves[2];
    _mm_storeu_si128((__m128i *)halves, h);
    uint64_t carry = halves[1] >> 63;
    halves[1] = (halves[1] << 1) | (halves[0] >> 63);
    halves[0] <<= 1;
    if (carry) {
        halves[1] ^= 0xc200000000000000ull;
        halves[0] ^= 1;
    }
    __m128i power = _mm_loadu_si128((const __m128i *)halves);
    /* powers[15] = H, powers[14] = H^2, ... powers[0] = H^16: sixteen blocks meet them in order,
       eight blocks the last eight. */
    const __m128i h1 = power;
    CS_STORE(key->powers, CS_GCM_POWERS - 1, power);
    for (int i = CS_GCM_POWERS - 2; i >= 0; i--) {
        power = multiply(power, h1);
        CS_STORE(key->powers, i, power);
    }
    for (int i = 0; i < CS_GCM_POWERS; i++) {
        __m128i each = CS_LOAD(key->powers, i);
        CS_STORE(key->power_sums, i, _mm_xor_si128(each, _mm_shuffle_epi32(each, 0x4e)));
    }
    memset(rk, 0, sizeof(rk));
    return 1;
}

/* ---- Counter mode ---- */

/// Swaps the last four bytes of each block: the big-endian counter becomes a little-endian lane.
CS_GCM_TARGET static inline __m256i swap_counter256(__m256i blocks) {
    const __m256i mask = _mm256_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 12, 13, 14, 15, 11,
                                         10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    return _mm256_shuffle_epi8(blocks, mask);
}

CS_GCM_TARGET static inline __m128i swap_counter(__m128i block) {
    return _mm_shuffle_epi8(block, _mm_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
}

CS_GCM_TARGET static inline __m128i next_counter(__m128i block) {
    return swap_counter(_mm_add_epi32(swap_counter(block), _mm_set_epi32(1, 0, 0, 0)));
}

CS_GCM_TARGET void cs_gcm_start(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t iv[12]) {
    memset(state, 0, sizeof(*state));
    memcpy(state->counter, iv, 12);
    state->counter[15] = 1;
    __m128i first = _mm_loadu_si128((const __m128i *)state->counter);
    _mm_storeu_si128((__m128i *)state->first_key_stream, encrypt_block(key, first));
    _mm_storeu_si128((__m128i *)state->counter, next_counter(first));
    state->key_stream_used = 16;
}

CS_GCM_TARGET static void absorb_pending(cs_gcm_state *state, const cs_gcm_key *key) {
    if (state->pending_length == 0) return;
    memset(state->pending + state->pending_length, 0, 16 - state->pending_length);
    __m128i ghash = _mm_loadu_si128((const __m128i *)state->ghash);
    ghash = absorb(ghash, _mm_loadu_si128((const __m128i *)state->pending), key);
    _mm_storeu_si128((__m128i *)state->ghash, ghash);
    state->pending_length = 0;
}

CS_GCM_TARGET int cs_gcm_add_aad(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t *bytes, size_t length) {
    if (state->text_started) return 0;
    state->aad_length += length;
    while (length > 0) {
        size_t count = 16 - state->pending_length;
        if (count > length) count = length;
        memcpy(state->pending + state->pending_length, bytes, count);
        state->pending_length += (unsigned)count;
        bytes += count;
        length -= count;
        if (state->pending_length == 16) absorb_pending(state, key);
    }
    return 1;
}

/// One turn of counter mode over `vectors` × 2 blocks (4 or 8 vectors) at `input`: the key
/// stream for the next counters, then the text into `output`, with GHASH of the `trailing`
/// vectors of the turn before absorbed while the AES rounds run; `text` then holds this turn's
/// ciphertext for the next. Eight vectors (sixteen blocks) keep enough independent AES
/// instructions in flight to hide their latency.
CS_GCM_TARGET __attribute__((always_inline)) static inline __m128i
crypt_turn(int vectors, __m256i text[8], int trailing, __m128i ghash, __m256i *counters, const __m256i round_keys[15],
           const cs_gcm_key *key, const uint8_t *input, uint8_t *output, int encrypt) {
    const __m256i two = _mm256_set_epi32(2, 0, 0, 0, 2, 0, 0, 0);
    __m256i stream[8];
    for (int i = 0; i < vectors; i++) {
        stream[i] = _mm256_xor_si256(swap_counter256(*counters), round_keys[0]);
        *counters = _mm256_add_epi32(*counters, two);
    }
    if (trailing) ghash = absorb_vectors(ghash, text, trailing, key);
    for (int round = 1; round < key->rounds; round++)
        for (int i = 0; i < vectors; i++) stream[i] = _mm256_aesenc_epi128(stream[i], round_keys[round]);
    for (int i = 0; i < vectors; i++) {
        __m256i in = _mm256_loadu_si256((const __m256i *)(input + 32 * i));
        stream[i] = _mm256_aesenclast_epi128(stream[i], round_keys[key->rounds]);
        __m256i out = _mm256_xor_si256(in, stream[i]);
        text[i] = encrypt ? out : in;
        _mm256_storeu_si256((__m256i *)(output + 32 * i), out);
    }
    return ghash;
}

/// Whole blocks: sixteen at a time, then eight, then one at a time.
CS_GCM_TARGET static void crypt_blocks(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t *input,
                                       uint8_t *output, size_t blocks, int encrypt) {
    __m128i ghash = _mm_loadu_si128((const __m128i *)state->ghash);
    __m128i counter = _mm_loadu_si128((const __m128i *)state->counter);
    if (blocks >= 8) {
        __m256i round_keys[15];
        for (int i = 0; i <= key->rounds; i++) round_keys[i] = _mm256_broadcastsi128_si256(CS_LOAD(key->round_keys, i));
        /* Counters as little-endian lanes: [c, c + 1], stepping by 2 a vector. */
        __m256i counters = _mm256_add_epi32(_mm256_broadcastsi128_si256(swap_counter(counter)),
                                            _mm256_set_epi32(1, 0, 0, 0, 0, 0, 0, 0));
        /* GHASH trails counter mode by a turn, so that the two run side by side. */
        __m256i text[8];
        int trailing = 0;
        for (; blocks >= 16; blocks -= 16, input += 256, output += 256) {
            ghash = crypt_turn(8, text, trailing, ghash, &counters, round_keys, key, input, output, encrypt);
            trailing = 8;
        }
        if (blocks >= 8) {
            ghash = crypt_turn(4, text, trailing, ghash, &counters, round_keys, key, input, output, encrypt);
            trailing = 4;
            blocks -= 8, input += 128, output += 128;
        }
        if (trailing) ghash = absorb_vectors(ghash, text, trailing, key);
        counter = swap_counter(_mm256_castsi256_si128(counters));
        memset(round_keys, 0, sizeof(round_keys));
    }
    for (; blocks > 0; blocks--, input += 16, output += 16) {
        __m128i in = _mm_loadu_si128((const __m128i *)input);
        __m128i out = _mm_xor_si128(in, encrypt_block(key, counter));
        counter = next_counter(counter);
        ghash = absorb(ghash, encrypt ? out : in, key);
        _mm_storeu_si128((__m128i *)output, out);
    }
    _mm_storeu_si128((__m128i *)state->ghash, ghash);
    _mm_storeu_si128((__m128i *)state->counter, counter);
}

/// Bytes against the rest of the current key-stream block; `pending` collects the ciphertext.
CS_GCM_TARGET static size_t crypt_partial(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t *input, uint8_t *output,
                            size_t length, int encrypt) {
    size_t done = 0;
    while (done < length && state->key_stream_used < 16) {
        uint8_t in = input[done];
        uint8_t out = in ^ state->key_stream[state->key_stream_used++];
        output[done++] = out;
        state->pending[state->pending_length++] = encrypt ? out : in;
    }
    if (state->pending_length == 16) absorb_pending(state, key);
    return done;
}

CS_GCM_TARGET int cs_gcm_crypt(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t *input, uint8_t *output,
                               size_t length, int encrypt) {
    const uint64_t limit = (1ull << 36) - 32;
    if (length > limit || state->text_length + length > limit) return 0;
    if (!state->text_started) {
        absorb_pending(state, key);
        state->text_started = 1;
    }
    state->text_length += length;
    size_t done = crypt_partial(state, key, input, output, length, encrypt);
    size_t blocks = (length - done) / 16;
    if (blocks > 0) {
        crypt_blocks(state, key, input + done, output + done, blocks, encrypt);
        done += blocks * 16;
    }
    if (done < length) {
        __m128i counter = _mm_loadu_si128((const __m128i *)state->counter);
        _mm_storeu_si128((__m128i *)state->key_stream, encrypt_block(key, counter));
        _mm_storeu_si128((__m128i *)state->counter, next_counter(counter));
        state->key_stream_used = 0;
        crypt_partial(state, key, input + done, output + done, length - done, encrypt);
    }
    return 1;
}

CS_GCM_TARGET void cs_gcm_finish(cs_gcm_state *state, const cs_gcm_key *key, uint8_t tag[16]) {
    absorb_pending(state, key);
    uint8_t lengths[16];
    for (int i = 0; i < 8; i++) {
        lengths[i] = (uint8_t)((state->aad_length * 8) >> (56 - 8 * i));
        lengths[8 + i] = (uint8_t)((state->text_length * 8) >> (56 - 8 * i));
    }
    __m128i ghash = _mm_loadu_si128((const __m128i *)state->ghash);
    ghash = absorb(ghash, _mm_loadu_si128((const __m128i *)lengths), key);
    __m128i result = _mm_xor_si128(reverse_bytes(ghash), _mm_loadu_si128((const __m128i *)state->first_key_stream));
    _mm_storeu_si128((__m128i *)tag, result);
    memset(state, 0, sizeof(*state));
}

#else

int cs_gcm_is_accelerated(void) { return 0; }
int cs_gcm_set_key(cs_gcm_key *key, const uint8_t *bytes, size_t length) {
    (void)key, (void)bytes, (void)length;
    return 0;
}
void cs_gcm_start(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t iv[12]) {
    (void)key, (void)iv;
    memset(state, 0, sizeof(*state));
}
int cs_gcm_add_aad(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t *bytes, size_t length) {
    (void)state, (void)key, (void)bytes, (void)length;
    return 0;
}
int cs_gcm_crypt(cs_gcm_state *state, const cs_gcm_key *key, const uint8_t *input, uint8_t *output, size_t length,
                 int encrypt) {
    (void)state, (void)key, (void)input, (void)output, (void)length, (void)encrypt;
    return 0;
}
void cs_gcm_finish(cs_gcm_state *state, const cs_gcm_key *key, uint8_t tag[16]) {
    (void)key;
    memset(tag, 0, 16);
    memset(state, 0, sizeof(*state));
}

#endif
