#ifndef CMAPPED_FILE_GUARD_H
#define CMAPPED_FILE_GUARD_H

/*
 * Read-only maps of file regions that a file shrinking underneath cannot crash.
 *
 * Touching a page of a shared file mapping that lies wholly past the file's end raises SIGBUS,
 * whose default action kills the process. A region mapped here is registered with a SIGBUS
 * handler (installed once per process, chaining to the handler it replaced for every other
 * fault): a fault inside a registered region puts a page of zeros where the file's page was and
 * marks the region, so the faulting read goes on and the owner learns from
 * `cs_mapped_region_faulted` that the bytes it read are not the file's. Only the owner of a
 * region reads it; the handler only swaps pages and sets the mark.
 *
 * Linux only: elsewhere `cs_mapped_region_open` always fails with ENOTSUP.
 */

#include <stddef.h>
#include <stdint.h>

/// A mapped region: `bytes` points at the file's byte `offset` and holds `length` bytes.
typedef struct cs_mapped_region {
    const void *bytes;
    size_t length;
    /* Private: the page-aligned mapping and the registration slot. */
    void *mapping;
    size_t mapping_length;
    int slot;
} cs_mapped_region;

/// Maps `length` (> 0) bytes of `fd` from `offset` read-only, with sequential read-ahead
/// advised, and registers the mapping with the SIGBUS guard.
///
/// Returns 0, or an errno: ENOTSUP when the guard cannot protect the map (another SIGBUS
/// handler replaced it, or not Linux), EBUSY when every registration slot is taken, or what
/// mmap reported. On failure nothing is mapped, and the caller reads the file instead.
int cs_mapped_region_open(int fd, int64_t offset, size_t length, cs_mapped_region *region);

/// Whether a read of the region touched a page past the file's end (or one the kernel could
/// not read) and got zeros instead: 1 if so, else 0. Sticky until the region is closed.
int cs_mapped_region_faulted(const cs_mapped_region *region);

/// Unregisters and unmaps the region. Idempotent for a zeroed region.
void cs_mapped_region_close(cs_mapped_region *region);

#endif
