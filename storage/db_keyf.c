/*
 * db_keyf — a Bloom filter over every meta key that may exist, so that a
 * commit can tell a blind write of a new key (a plain SET, MSET) from a
 * replacement without a storage read (docs/storage.md, "Key counts").
 *
 * Blocked: each key sets DB_KEYF_K bits in one 64-byte block, so a look-up
 * costs one cache line per filter. 12 bits per key of capacity: under
 * 1% false positives with three filters asked (test_db_keyf), each then
 * answered by storage. Keys are never removed: a deleted key stays a
 * "maybe". When the newest filter reaches its capacity, a filter of twice
 * the size is added; a look-up asks each.
 */
#include "db.h"
#include "stor_mem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { KEYF_BITS_PER_KEY = 12, KEYF_MIN_CAP = 1u << 16, KEYF_HUGE = 2u << 20 };

void db_keyf_init(struct db_keyf *kf, uint64_t cap)
{
    db_keyf_destroy(kf);
    kf->first_cap = cap < KEYF_MIN_CAP ? KEYF_MIN_CAP : cap;
}

void db_keyf_destroy(struct db_keyf *kf)
{
    for (unsigned i = 0; i < kf->n; i++)
        free(kf->f[i].bits);
    memset(kf, 0, sizeof *kf);
}

/* A zeroed filter for twice the last one's keys (or first_cap), appended.
 * From 1 MiB on, a whole number of 2 MiB pages, which the kernel may back
 * with huge pages: each probe reads a random line, which should not cost
 * a TLB miss as well. */
static void keyf_grow(struct db_keyf *kf)
{
    uint64_t cap = kf->n ? kf->f[kf->n - 1].cap * 2 : kf->first_cap;
    size_t bytes = (cap * KEYF_BITS_PER_KEY + 511) / 512 * 64, align = 64;
    if (bytes >= KEYF_HUGE / 2) {
        bytes = (bytes + KEYF_HUGE - 1) / KEYF_HUGE * KEYF_HUGE;
        align = KEYF_HUGE;
    }
    struct db_keyf_one *f = &kf->f[kf->n++];
    f->bits = aligned_alloc(align, bytes);
    if (!f->bits)
        stor_oom(bytes);
    if (align == KEYF_HUGE)
        (void)madvise(f->bits, bytes, MADV_HUGEPAGE); /* a hint: fine if refused */
    memset(f->bits, 0, bytes);
    f->blocks = bytes / 64;
    f->cap = f->blocks * 512 / KEYF_BITS_PER_KEY;
    f->keys = 0;
}

static inline const uint64_t *keyf_block(const struct db_keyf_one *f, uint64_t h)
{
    return f->bits + 8 * (((h >> 32) * f->blocks) >> 32);
}

/* The bit positions within a block, from bits of h the block choice did
 * not use (remixed, so that every position depends on the whole hash). */
static inline uint64_t keyf_pos(uint64_t h)
{
    return (h ^ (h >> 31)) * 0x9e3779b97f4a7c15ull;
}

void db_keyf_add(struct db_keyf *kf, uint64_t h)
{
    if (!kf->n || (kf->f[kf->n - 1].keys >= kf->f[kf->n - 1].cap && kf->n < DB_KEYF_MAX))
        keyf_grow(kf);
    struct db_keyf_one *f = &kf->f[kf->n - 1];
    uint64_t *b = (uint64_t *)keyf_block(f, h), p = keyf_pos(h);
    for (int j = 0; j < DB_KEYF_K; j++, p >>= 9)
        b[(p >> 6) & 7] |= 1ull << (p & 63);
    f->keys++;
}

void db_keyf_usage(const struct db_keyf *kf, uint64_t *bytes, uint64_t *keys)
{
    *bytes = *keys = 0;
    for (unsigned i = 0; i < kf->n; i++) {
        *bytes += kf->f[i].blocks * 64;
        *keys += kf->f[i].keys;
    }
}

void db_keyf_prefetch(const struct db_keyf *kf, uint64_t h)
{
    for (unsigned i = 0; i < kf->n; i++)
        __builtin_prefetch(keyf_block(&kf->f[i], h));
}

bool db_keyf_may(const struct db_keyf *kf, uint64_t h)
{
    uint64_t p0 = keyf_pos(h);
    for (unsigned i = 0; i < kf->n; i++) {
        const uint64_t *b = keyf_block(&kf->f[i], h);
        uint64_t p = p0;
        int j = 0;
        for (; j < DB_KEYF_K; j++, p >>= 9)
            if (!(b[(p >> 6) & 7] & (1ull << (p & 63))))
                break;
        if (j == DB_KEYF_K)
            return true;
    }
    return false;
}
