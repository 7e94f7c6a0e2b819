#include "CCRC32C.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif
#if defined(__aarch64__)
#include <arm_acle.h>
#endif

/* Slice-by-8 tables for the reflected Castagnoli polynomial 0x82F63B78. */
static uint32_t table[8][256];
static int table_ready;

static void build_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        }
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int s = 1; s < 8; s++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[s][n] = c;
        }
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t cs_crc32c_update_portable(uint32_t crc, const void *bytes, size_t length) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) {
        build_table(); /* idempotent: racing builders write identical values */
    }
    const unsigned char *p = bytes;
    uint32_t c = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);
#endif
        uint32_t lo = (uint32_t)word ^ c;
        uint32_t hi = (uint32_t)(word >> 32);
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
            table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
            table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        length -= 8;
    }
    while (length--) {
        c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    }
    return ~c;
}

/* x^(2^k) modulo the polynomial, reflected (bit 31 stands for x^0), for k = 0 ... 30.
 * x^(2^31) is x^(2^0) again (the powers x^(2^k) repeat with period 31 for this polynomial),
 * so k is taken modulo 31 and no exponent is too large. */
static const uint32_t x2k_table[31] = {
    0x40000000, 0x20000000, 0x08000000, 0x00800000, 0x00008000, 0x82f63b78, 0x6ea2d55c, 0x18b8ea18,
    0x510ac59a, 0xb82be955, 0xb8fdb1e7, 0x88e56f72, 0x74c360a4, 0xe4172b16, 0x0d65762a, 0x35d73a62,
    0x28461564, 0xbf455269, 0xe2ea32dc, 0xfe7740e6, 0xf946610b, 0x3c204f8f, 0x538586e3, 0x59726915,
    0x734d5309, 0xbc1ac763, 0x7d0722cc, 0xd289cabe, 0xe94ca9bc, 0x05b74f3f, 0xa51e1f42,
};

/* a(x) * b(x) modulo the polynomial, both reflected. */
static uint32_t multiply_modulo(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (uint32_t bit = (uint32_t)1 << 31; bit != 0; bit >>= 1) {
        if (a & bit) {
            product ^= b;
            if ((a & (bit - 1)) == 0) break;
        }
        b = (b & 1) ? (b >> 1) ^ 0x82F63B78u : b >> 1;
    }
    return product;
}

/* x^(n * 2^k) modulo the polynomial, reflected: one table entry per set bit of n. */
static uint32_t x_power(uint64_t n, unsigned k) {
    uint32_t power = (uint32_t)1 << 31;
    for (; n != 0; n >>= 1, k++) {
        if (n & 1) power = multiply_modulo(x2k_table[k % 31], power);
    }
    return power;
}

#if defined(__x86_64__)
/*
 * Shift operators: the register after `n` zero bytes, as a function of the
 * register before. The update is linear over GF(2), so the image of each of
 * the 32 single-bit registers determines it; four 256-entry tables apply it a
 * byte of the register at a time. They let independent CRC streams over
 * consecutive regions be joined: crc(A || B) = shift_|B|(crc(A)) ^ crc0(B).
 */
#define CRC_LONG 8192
#define CRC_SHORT 256
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];
static int shifts_ready;

static void build_shift(uint32_t shift[4][256], size_t zeros) {
    uint32_t image[32];
    for (int bit = 0; bit < 32; bit++) {
        uint32_t c = 1u << bit;
        for (size_t n = 0; n < zeros; n++) {
            c = table[0][c & 0xff] ^ (c >> 8);
        }
        image[bit] = c;
    }
    for (int k = 0; k < 4; k++) {
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t r = 0;
            for (int b = 0; b < 8; b++) {
                if ((v >> b) & 1) r ^= image[8 * k + b];
            }
            shift[k][v] = r;
        }
    }
}

static void ensure_shifts(void) {
    if (__atomic_load_n(&shifts_ready, __ATOMIC_ACQUIRE)) return;
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) build_table();
    /* Idempotent: racing builders write identical values. */
    build_shift(shift_long, CRC_LONG);
    build_shift(shift_short, CRC_SHORT);
    __atomic_store_n(&shifts_ready, 1, __ATOMIC_RELEASE);
}

static inline uint32_t shifted(uint32_t shift[4][256], uint32_t c) {
    return shift[0][c & 0xff] ^ shift[1][(c >> 8) & 0xff] ^ shift[2][(c >> 16) & 0xff] ^ shift[3][c >> 24];
}

/*
 * The crc32 instruction has a latency of 3 cycles and a throughput of 1, so
 * one dependency chain runs at a third of the possible speed. Three streams
 * over three adjacent regions of `span` bytes run in parallel and are joined
 * with the shift operator for `span` zero bytes.
 */
__attribute__((target("sse4.2")))
static inline uint64_t crc32c_three_streams(uint64_t c, const unsigned char **pp, size_t *lengthp, size_t span,
                                            uint32_t shift[4][256]) {
    const unsigned char *p = *pp;
    size_t length = *lengthp;
    while (length >= 3 * span) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + span;
        do {
            uint64_t a, b, d;
            memcpy(&a, p, 8);
            memcpy(&b, p + span, 8);
            memcpy(&d, p + 2 * span, 8);
            c = _mm_crc32_u64(c, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, d);
            p += 8;
        } while (p < end);
        c = shifted(shift, (uint32_t)c) ^ (uint32_t)c1;
        c = shifted(shift, (uint32_t)c) ^ (uint32_t)c2;
        p += 2 * span;
        length -= 3 * span;
    }
    *pp = p;
    *lengthp = length;
    return c;
}

/*
 * Folding with carry-less multiplication (Gopal et al., "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction", Intel, 2009), two blocks per 256-bit register.
 * Sixteen message bytes loaded little-endian hold their coefficients reflected: bit j is
 * x^(127 - j). With L its low and H its high 64 bits (as reflected 64-bit values, the block is
 * L x^64 + H), the block moved D bits further along the message is L x^(D + 64) + H x^D, which
 * modulo the polynomial is L (x^(D + 63) mod P) x + H (x^(D - 1) mod P) x. A carry-less product
 * of two reflected values comes out one bit short (bit k is x^(126 - k)), which supplies the
 * factor x: two products with constants fold a block into a no wider one that leaves the CRC
 * unchanged D bits later. What is left is one block, whose CRC (crc32 instructions from 0)
 * is the message's so far; the register the CRC starts from goes into the first block's
 * first four bytes.
 */
#define CRC_FOLD_TARGET __attribute__((target("sse4.2,pclmul,avx,avx2,vpclmulqdq")))
#define CRC_FOLD_STRIDE 128 /* bytes: four registers of two blocks */

/* [x^(D + 63) mod P, x^(D - 1) mod P] as reflected 64-bit values, for D = one block (128 bits)
 * and one stride (1024 bits). */
static uint64_t fold_block[2], fold_stride[2];
static int folds_ready;

static void ensure_folds(void) {
    if (__atomic_load_n(&folds_ready, __ATOMIC_ACQUIRE)) return;
    /* Idempotent: racing builders write identical values. A 32-bit reflected value has x^0 in
     * bit 31, a 64-bit one in bit 63. */
    fold_block[0] = (uint64_t)x_power(128 + 63, 0) << 32;
    fold_block[1] = (uint64_t)x_power(128 - 1, 0) << 32;
    fold_stride[0] = (uint64_t)x_power(8 * CRC_FOLD_STRIDE + 63, 0) << 32;
    fold_stride[1] = (uint64_t)x_power(8 * CRC_FOLD_STRIDE - 1, 0) << 32;
    __atomic_store_n(&folds_ready, 1, __ATOMIC_RELEASE);
}

CRC_FOLD_TARGET static inline __m128i fold(__m128i block, __m128i constants) {
    return _mm_xor_si128(_mm_clmulepi64_si128(block, constants, 0x00), _mm_clmulepi64_si128(block, constants, 0x11));
}

CRC_FOLD_TARGET static inline __m256i fold256(__m256i blocks, __m256i constants) {
    return _mm256_xor_si256(_mm256_clmulepi64_epi128(blocks, constants, 0x00),
                            _mm256_clmulepi64_epi128(blocks, constants, 0x11));
}

/* The raw register `c` extended over the whole 16-byte blocks at `*pp` (at least one stride),
 * advancing `*pp` and `*lengthp` past them. */
CRC_FOLD_TARGET static uint64_t crc32c_fold(uint64_t c, const unsigned char **pp, size_t *lengthp) {
    ensure_folds();
    const unsigned char *p = *pp;
    size_t length = *lengthp;
    const __m256i stride = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)fold_stride));
    const __m128i block = _mm_loadu_si128((const __m128i *)fold_block);
    __m256i x[4];
    for (int i = 0; i < 4; i++) x[i] = _mm256_loadu_si256((const __m256i *)(p + 32 * i));
    x[0] = _mm256_xor_si256(x[0], _mm256_zextsi128_si256(_mm_cvtsi64_si128((long long)(uint32_t)c)));
    for (p += CRC_FOLD_STRIDE, length -= CRC_FOLD_STRIDE; length >= CRC_FOLD_STRIDE;
         p += CRC_FOLD_STRIDE, length -= CRC_FOLD_STRIDE) {
        for (int i = 0; i < 4; i++)
            x[i] = _mm256_xor_si256(fold256(x[i], stride), _mm256_loadu_si256((const __m256i *)(p + 32 * i)));
    }
    /* The eight blocks in message order, each folded onto the next. */
    __m128i t = _mm256_castsi256_si128(x[0]);
    t = _mm_xor_si128(fold(t, block), _mm256_extracti128_si256(x[0], 1));
    for (int i = 1; i < 4; i++) {
        t = _mm_xor_si128(fold(t, block), _mm256_castsi256_si128(x[i]));
        t = _mm_xor_si128(fold(t, block), _mm256_extracti128_si256(x[i], 1));
    }
    for (; length >= 16; p += 16, length -= 16) t = _mm_xor_si128(fold(t, block), _mm_loadu_si128((const __m128i *)p));
    *pp = p;
    *lengthp = length;
    return _mm_crc32_u64(_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(t)), (uint64_t)_mm_extract_epi64(t, 1));
}

/* Whether this CPU (and its OS) runs crc32c_fold: AVX2 and VPCLMULQDQ with the AVX state on. */
static int folds;

__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    const unsigned char *p = bytes;
    uint64_t c = ~crc;
    while (length && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        length--;
    }
    if (folds && length >= 2 * CRC_FOLD_STRIDE) {
        c = crc32c_fold(c, &p, &length);
    } else if (length >= 3 * CRC_SHORT) {
        ensure_shifts();
        c = crc32c_three_streams(c, &p, &length, CRC_LONG, shift_long);
        c = crc32c_three_streams(c, &p, &length, CRC_SHORT, shift_short);
    }
    while (length >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = _mm_crc32_u64(c, a);
        p += 8;
        length -= 8;
    }
    while (length--) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
    }
    return ~(uint32_t)c;
}

static int detect_hardware(void) {
    /* The compiler's CPU model reports AVX features only where the OS saves their registers. */
    folds = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
            __builtin_cpu_supports("vpclmulqdq");
    return __builtin_cpu_supports("sse4.2");
}
#elif defined(__aarch64__)
__attribute__((target("crc")))
static uint32_t crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    const unsigned char *p = bytes;
    uint32_t c = ~crc;
    while (length && ((uintptr_t)p & 7)) {
        c = __crc32cb(c, *p++);
        length--;
    }
    while (length >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = __crc32cd(c, a);
        p += 8;
        length -= 8;
    }
    while (length--) {
        c = __crc32cb(c, *p++);
    }
    return ~c;
}

static int detect_hardware(void) {
#if defined(__APPLE__)
    return 1; /* every arm64 Apple CPU has the CRC extension */
#elif defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#else
    return 0;
#endif
}
#endif

/* 0 = not yet detected, 1 = portable, 2 = hardware. */
static int implementation;

int cs_crc32c_is_hardware_accelerated(void) {
    int chosen = __atomic_load_n(&implementation, __ATOMIC_ACQUIRE);
    if (chosen == 0) {
#if defined(__x86_64__) || defined(__aarch64__)
        chosen = detect_hardware() ? 2 : 1;
#else
        chosen = 1;
#endif
        __atomic_store_n(&implementation, chosen, __ATOMIC_RELEASE);
    }
    return chosen == 2;
}

uint32_t cs_crc32c_update(uint32_t crc, const void *bytes, size_t length) {
#if defined(__x86_64__) || defined(__aarch64__)
    if (cs_crc32c_is_hardware_accelerated()) {
        return crc32c_hardware(crc, bytes, length);
    }
#endif
    return cs_crc32c_update_portable(crc, bytes, length);
}

uint32_t cs_crc32c_combine(uint32_t first, uint32_t second, uint64_t second_length) {
    if (second_length == 0) return first;
    /* Appending n bytes multiplies the first checksum by x^(8n) (the pre- and post-inversions
     * cancel out). */
    return multiply_modulo(x_power(second_length, 3), first) ^ second;
}
