#include "CCloudStorage.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
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

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    const unsigned char *p = bytes;
    uint64_t c = ~crc;
    while (length && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        length--;
    }
    /* Three independent streams hide the instruction's 3-cycle latency. */
    while (length >= 24) {
        uint64_t a, b, d;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        memcpy(&d, p + 16, 8);
        c = _mm_crc32_u64(c, a);
        c = _mm_crc32_u64(c, b);
        c = _mm_crc32_u64(c, d);
        p += 24;
        length -= 24;
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

static int detect_hardware(void) { return __builtin_cpu_supports("sse4.2"); }
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
