/*
 * The run-time zlib loader (see CZlibLoader.h).
 *
 * Why dlopen: the package depends on no Swift package and builds without zlib headers or a
 * -dev package, yet libz.so.1 is on every Linux that runs Foundation (libcurl and libxml2
 * link it) and libz.1.dylib ships with every Apple OS. The z_stream layout and the
 * prototypes below are zlib's public ABI, unchanged since 1.0; inflateInit2_ checks the
 * struct size we pass, so a mismatch fails loudly instead of corrupting memory.
 */

#include "CZlibLoader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* zlib's z_stream, field for field (zconf.h: uInt is unsigned int, uLong unsigned long). */
typedef struct {
    const uint8_t *next_in;
    unsigned int avail_in;
    unsigned long total_in;
    uint8_t *next_out;
    unsigned int avail_out;
    unsigned long total_out;
    const char *msg;
    void *state;
    void *zalloc;
    void *zfree;
    void *opaque;
    int data_type;
    unsigned long adler;
    unsigned long reserved;
} cs_z_stream;

#define Z_OK 0
#define Z_STREAM_END 1
#define Z_NEED_DICT 2
#define Z_BUF_ERROR (-5)
#define Z_DATA_ERROR (-3)
#define Z_NO_FLUSH 0
#define Z_FINISH 4
#define Z_DEFLATED 8
/* 15-bit window, +16: the gzip wrapper (header and CRC-32/length trailer). */
#define GZIP_WINDOW_BITS (15 + 16)

typedef const char *(*zlibVersion_f)(void);
typedef int (*inflateInit2__f)(cs_z_stream *, int, const char *, int);
typedef int (*inflate_f)(cs_z_stream *, int);
typedef int (*inflateReset_f)(cs_z_stream *);
typedef int (*inflateEnd_f)(cs_z_stream *);
typedef int (*deflateInit2__f)(cs_z_stream *, int, int, int, int, int, const char *, int);
typedef int (*deflate_f)(cs_z_stream *, int);
typedef int (*deflateEnd_f)(cs_z_stream *);

static struct {
    zlibVersion_f zlibVersion;
    inflateInit2__f inflateInit2_;
    inflate_f inflate;
    inflateReset_f inflateReset;
    inflateEnd_f inflateEnd;
    deflateInit2__f deflateInit2_;
    deflate_f deflate;
    deflateEnd_f deflateEnd;
} z;

static int loaded;
static char unavailable_reason[256];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

struct cs_gzip {
    cs_z_stream stream;
    int inflating;
};

static void *resolve(void *handle, const char *name) {
    void *symbol = dlsym(handle, name);
    if (symbol == NULL && unavailable_reason[0] == 0) {
        snprintf(unavailable_reason, sizeof unavailable_reason, "libz has no %s", name);
    }
    return symbol;
}

static void load(void) {
#if defined(__APPLE__)
    const char *paths[] = {"/usr/lib/libz.1.dylib", "libz.1.dylib", "libz.dylib"};
#else
    const char *paths[] = {"libz.so.1", "libz.so"};
#endif
    void *handle = NULL;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0] && handle == NULL; i++) {
        /* RTLD_LOCAL keeps zlib's symbols out of the global namespace. */
        handle = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(unavailable_reason, sizeof unavailable_reason, "cannot load libz: %s", why ? why : "not found");
        return;
    }
    z.zlibVersion = (zlibVersion_f)resolve(handle, "zlibVersion");
    z.inflateInit2_ = (inflateInit2__f)resolve(handle, "inflateInit2_");
    z.inflate = (inflate_f)resolve(handle, "inflate");
    z.inflateReset = (inflateReset_f)resolve(handle, "inflateReset");
    z.inflateEnd = (inflateEnd_f)resolve(handle, "inflateEnd");
    z.deflateInit2_ = (deflateInit2__f)resolve(handle, "deflateInit2_");
    z.deflate = (deflate_f)resolve(handle, "deflate");
    z.deflateEnd = (deflateEnd_f)resolve(handle, "deflateEnd");
    if (unavailable_reason[0] != 0) {
        dlclose(handle);
        memset(&z, 0, sizeof z);
        return;
    }
    /* zlib's ABI is the same across 1.x; 2.x does not exist. */
    const char *version = z.zlibVersion();
    if (version == NULL || version[0] != '1') {
        snprintf(unavailable_reason, sizeof unavailable_reason, "libz %s is not zlib 1.x", version ? version : "?");
        dlclose(handle);
        memset(&z, 0, sizeof z);
        return;
    }
    loaded = 1;
}

int cs_gzip_load(char *message, size_t capacity) {
    pthread_once(&load_once, load);
    if (!loaded && message != NULL && capacity > 0) {
        snprintf(message, capacity, "%s", unavailable_reason);
    }
    return loaded;
}

cs_gzip *cs_gzip_inflater(void) {
    if (!cs_gzip_load(NULL, 0)) return NULL;
    cs_gzip *gzip = calloc(1, sizeof *gzip);
    if (gzip == NULL) return NULL;
    gzip->inflating = 1;
    if (z.inflateInit2_(&gzip->stream, GZIP_WINDOW_BITS, z.zlibVersion(), (int)sizeof(cs_z_stream)) != Z_OK) {
        free(gzip);
        return NULL;
    }
    return gzip;
}

cs_gzip *cs_gzip_deflater(int level) {
    if (!cs_gzip_load(NULL, 0)) return NULL;
    cs_gzip *gzip = calloc(1, sizeof *gzip);
    if (gzip == NULL) return NULL;
    /* memLevel 8 and the default strategy, as gzip(1) uses; no header fields are set, so
       the header is the fixed 10 bytes with mtime 0. */
    if (z.deflateInit2_(&gzip->stream, level, Z_DEFLATED, GZIP_WINDOW_BITS, 8, 0, z.zlibVersion(),
                        (int)sizeof(cs_z_stream)) != Z_OK) {
        free(gzip);
        return NULL;
    }
    return gzip;
}

void cs_gzip_free(cs_gzip *gzip) {
    if (gzip == NULL) return;
    if (gzip->inflating) {
        z.inflateEnd(&gzip->stream);
    } else {
        z.deflateEnd(&gzip->stream);
    }
    free(gzip);
}

/* zlib counts in unsigned int: larger buffers are used in parts. */
static unsigned int clamp(size_t count) { return count > 0x40000000u ? 0x40000000u : (unsigned int)count; }

int cs_gzip_inflate(cs_gzip *gzip, const uint8_t *input, size_t input_count, size_t *consumed, uint8_t *output,
                    size_t output_capacity, size_t *produced, char *message, size_t capacity) {
    cs_z_stream *s = &gzip->stream;
    s->next_in = input;
    s->avail_in = clamp(input_count);
    s->next_out = output;
    s->avail_out = clamp(output_capacity);
    int result = z.inflate(s, Z_NO_FLUSH);
    *consumed = (size_t)(s->next_in - input);
    *produced = (size_t)(s->next_out - output);
    switch (result) {
    case Z_OK:
        return CS_GZIP_OK;
    case Z_BUF_ERROR:
        /* No progress possible with what was given: more input or room is needed. */
        return CS_GZIP_OK;
    case Z_STREAM_END:
        return CS_GZIP_MEMBER_END;
    case Z_DATA_ERROR:
    case Z_NEED_DICT:
        snprintf(message, capacity, "%s", s->msg ? s->msg : "invalid gzip data");
        return CS_GZIP_BAD_DATA;
    default:
        snprintf(message, capacity, "zlib inflate failed (%d)", result);
        return CS_GZIP_FAILED;
    }
}

int cs_gzip_restart(cs_gzip *gzip) {
    return z.inflateReset(&gzip->stream) == Z_OK ? CS_GZIP_OK : CS_GZIP_FAILED;
}

int cs_gzip_deflate(cs_gzip *gzip, const uint8_t *input, size_t input_count, size_t *consumed, uint8_t *output,
                    size_t output_capacity, size_t *produced, int finish) {
    cs_z_stream *s = &gzip->stream;
    unsigned int offered = clamp(input_count);
    s->next_in = input;
    s->avail_in = offered;
    s->next_out = output;
    s->avail_out = clamp(output_capacity);
    /* Finish only once every input byte is offered in this call. */
    int result = z.deflate(s, finish && offered == input_count ? Z_FINISH : Z_NO_FLUSH);
    *consumed = (size_t)(s->next_in - input);
    *produced = (size_t)(s->next_out - output);
    switch (result) {
    case Z_OK:
    case Z_BUF_ERROR:
        return CS_GZIP_OK;
    case Z_STREAM_END:
        return CS_GZIP_DONE;
    default:
        return CS_GZIP_FAILED;
    }
}
