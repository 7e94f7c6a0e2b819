#ifndef CCRC32C_H
#define CCRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Extends a CRC32C (Castagnoli) checksum over `length` bytes.
///
/// `crc` is the checksum of the bytes before these (0 to start). Uses SSE4.2
/// (x86_64) or ARMv8 CRC instructions when the CPU has them, detected once at
/// run time, and a table-driven implementation otherwise. On x86_64 CPUs with
/// AVX2 and VPCLMULQDQ, 256 bytes or more are folded with carry-less
/// multiplication: nearly twice the speed of the crc32 instruction on data that
/// is not yet in the cache (a file's pages read for the first time).
uint32_t cs_crc32c_update(uint32_t crc, const void *bytes, size_t length);

/// The same as `cs_crc32c_update`, always with the portable table-driven code.
/// Exposed so tests can check the hardware path against it.
uint32_t cs_crc32c_update_portable(uint32_t crc, const void *bytes, size_t length);

/// The CRC32C of two byte sequences one after the other, from the checksum of each and the
/// length of the second in bytes, without the bytes (zlib's `crc32_combine`, for CRC32C).
/// Costs at most 64 multiplications modulo the polynomial, whatever the length.
uint32_t cs_crc32c_combine(uint32_t first, uint32_t second, uint64_t second_length);

/// Whether `cs_crc32c_update` uses CPU instructions on this machine.
int cs_crc32c_is_hardware_accelerated(void);

#endif
