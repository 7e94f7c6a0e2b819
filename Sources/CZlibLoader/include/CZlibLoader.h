/*
 * The run-time zlib loader: gzip inflate and deflate over the system's libz, loaded with
 * dlopen on first use. Nothing here needs zlib.h at build time: the few functions used are
 * declared by hand, and the z_stream layout, stable since zlib 1.0, lives only in loader.c.
 *
 * Every function is safe to call from any thread; one cs_gzip stream is used by one thread
 * at a time.
 */
#ifndef CZLIB_LOADER_H
#define CZLIB_LOADER_H

#include <stddef.h>
#include <stdint.h>

/* What a step of a stream came to. */
#define CS_GZIP_OK 0          /* progress; call again with more input or output room */
#define CS_GZIP_MEMBER_END 1  /* inflate: one gzip member ended (its CRC-32 and length checked) */
#define CS_GZIP_DONE 1        /* deflate: the stream is finished, trailer written */
#define CS_GZIP_BAD_DATA -1   /* inflate: not gzip, or corrupt (a message says why) */
#define CS_GZIP_FAILED -2     /* zlib refused (out of memory, misuse) */

/* An inflate or deflate stream. */
typedef struct cs_gzip cs_gzip;

/*
 * Loads libz once (later calls return the first answer). Returns 1 when it is usable; 0 with
 * `message` (NUL-terminated, at most `capacity` bytes) saying why not.
 */
int cs_gzip_load(char *message, size_t capacity);

/* A stream that decodes gzip members (RFC 1952); NULL if libz is not loaded or memory ran out. */
cs_gzip *cs_gzip_inflater(void);
/* A stream that encodes one gzip member at `level` (0-9) with a fixed header (mtime 0), so the
 * same input always gives the same bytes; NULL if libz is not loaded or memory ran out. */
cs_gzip *cs_gzip_deflater(int level);
void cs_gzip_free(cs_gzip *stream);

/*
 * Decodes from `input` into `output`. `consumed` and `produced` receive the byte counts used.
 * Returns CS_GZIP_MEMBER_END when a member's trailer was checked (input may remain: the next
 * member, after cs_gzip_restart), CS_GZIP_OK otherwise, or an error with `message` set.
 */
int cs_gzip_inflate(cs_gzip *stream, const uint8_t *input, size_t input_count, size_t *consumed, uint8_t *output,
                    size_t output_capacity, size_t *produced, char *message, size_t capacity);
/* Makes an inflater ready for the next member (or a new stream). Returns 0 or an error. */
int cs_gzip_restart(cs_gzip *stream);

/*
 * Encodes `input` into `output`; with `finish` set, flushes and writes the trailer once every
 * input byte was taken (returns CS_GZIP_DONE then).
 */
int cs_gzip_deflate(cs_gzip *stream, const uint8_t *input, size_t input_count, size_t *consumed, uint8_t *output,
                    size_t output_capacity, size_t *produced, int finish);

#endif
