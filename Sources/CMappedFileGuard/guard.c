/*
 * The SIGBUS guard of mapped file regions (see CMappedFileGuard.h).
 *
 * The handler runs on the faulting thread, in the middle of whatever read the fault
 * interrupted (a CRC, OpenSSL's AES), so it only does async-signal-safe work: atomic loads of
 * a fixed table, one mmap(2) system call, an atomic store. It lives in C because Swift gives no
 * such guarantee.
 */

#if defined(__linux__)
#define _GNU_SOURCE
/* A 64-bit off_t for mmap on 32-bit systems too: regions lie anywhere in a large file. */
#define _FILE_OFFSET_BITS 64
#endif

#include "CMappedFileGuard.h"

#include <errno.h>
#include <string.h>

#if defined(__linux__)

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

/* Regions mapped at once, across the process: one per upload request in flight is plenty. */
#define CS_SLOTS 64

typedef struct {
    atomic_int taken;
    /* [start, end) of the mapping while registered; 0, 0 otherwise. */
    atomic_uintptr_t start;
    atomic_uintptr_t end;
    atomic_int faulted;
} cs_slot;

static cs_slot slots[CS_SLOTS];
static struct sigaction previous;
static uintptr_t page_size;
static int installed;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int number, siginfo_t *info, void *context) {
    uintptr_t address = (uintptr_t)info->si_addr;
    if (info->si_code > 0) { /* raised by the kernel for a fault, not sent by kill(2) */
        for (int i = 0; i < CS_SLOTS; i++) {
            uintptr_t start = atomic_load(&slots[i].start);
            if (start == 0 || address < start || address >= atomic_load(&slots[i].end)) {
                continue;
            }
            void *page = (void *)(address & ~(page_size - 1));
            if (mmap(page, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
                atomic_store(&slots[i].faulted, 1);
                return; /* the read resumes, on zeros */
            }
            break;
        }
    }
    /* Not ours: whoever handled SIGBUS before us does. */
    if (previous.sa_flags & SA_SIGINFO) {
        previous.sa_sigaction(number, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(number);
    } else {
        /* The default action: put it back; a fault recurs on return, a sent signal is raised again. */
        sigaction(number, &previous, NULL);
        if (info->si_code <= 0) {
            raise(number);
        }
    }
}

static void install(void) {
    page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&action.sa_mask);
    installed = sigaction(SIGBUS, &action, &previous) == 0;
}

/* Whether SIGBUS still reaches on_sigbus (a library installed later may have replaced it). */
static int guarding(void) {
    pthread_once(&install_once, install);
    struct sigaction current;
    return installed && sigaction(SIGBUS, NULL, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
           current.sa_sigaction == on_sigbus;
}

int cs_mapped_region_open(int fd, int64_t offset, size_t length, cs_mapped_region *region) {
    memset(region, 0, sizeof *region);
    region->slot = -1;
    if (length == 0 || offset < 0) {
        return EINVAL;
    }
    if (!guarding()) {
        return ENOTSUP;
    }
    int slot = -1;
    for (int i = 0; i < CS_SLOTS && slot < 0; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&slots[i].taken, &expected, 1)) {
            slot = i;
        }
    }
    if (slot < 0) {
        return EBUSY;
    }
    int64_t aligned = offset & ~(int64_t)(page_size - 1);
    size_t lead = (size_t)(offset - aligned);
    void *mapping = mmap(NULL, length + lead, PROT_READ, MAP_SHARED, fd, (off_t)aligned);
    if (mapping == MAP_FAILED) {
        int code = errno;
        atomic_store(&slots[slot].taken, 0);
        return code;
    }
    /* Advice only: a failure changes nothing but speed. Advice values are not flags: one call each. */
    (void)madvise(mapping, length + lead, MADV_SEQUENTIAL);
    (void)madvise(mapping, length + lead, MADV_WILLNEED);
    atomic_store(&slots[slot].faulted, 0);
    atomic_store(&slots[slot].end, (uintptr_t)mapping + length + lead);
    atomic_store(&slots[slot].start, (uintptr_t)mapping);
    region->bytes = (const char *)mapping + lead;
    region->length = length;
    region->mapping = mapping;
    region->mapping_length = length + lead;
    region->slot = slot;
    return 0;
}

int cs_mapped_region_faulted(const cs_mapped_region *region) {
    return region->slot >= 0 && atomic_load(&slots[region->slot].faulted) != 0;
}

void cs_mapped_region_close(cs_mapped_region *region) {
    if (region->slot < 0) {
        return;
    }
    cs_slot *slot = &slots[region->slot];
    /* Unregistered before unmapping: the address range may be reused by another map at once. */
    atomic_store(&slot->start, 0);
    atomic_store(&slot->end, 0);
    munmap(region->mapping, region->mapping_length);
    atomic_store(&slot->taken, 0);
    memset(region, 0, sizeof *region);
    region->slot = -1;
}

#else /* not Linux */

int cs_mapped_region_open(int fd, int64_t offset, size_t length, cs_mapped_region *region) {
    (void)fd;
    (void)offset;
    (void)length;
    memset(region, 0, sizeof *region);
    region->slot = -1;
    return ENOTSUP;
}

int cs_mapped_region_faulted(const cs_mapped_region *region) {
    (void)region;
    return 0;
}

void cs_mapped_region_close(cs_mapped_region *region) {
    memset(region, 0, sizeof *region);
    region->slot = -1;
}

#endif
