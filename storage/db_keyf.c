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
#include "db_int.h"

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

/* Zeroed bits of bytes (a multiple of 64) for f. From 1 MiB on, a whole
 * number of 2 MiB pages, which the kernel may back with huge pages: each
 * probe reads a random line, which should not cost a TLB miss as well. */
static void keyf_alloc(struct db_keyf_one *f, size_t bytes)
{
    size_t align = 64;
    if (bytes >= KEYF_HUGE / 2) {
        bytes = (bytes + KEYF_HUGE - 1) / KEYF_HUGE * KEYF_HUGE;
        align = KEYF_HUGE;
    }
    f->bits = aligned_alloc(align, bytes);
    if (!f->bits)
        kv_oom(bytes);
    if (align == KEYF_HUGE)
        (void)madvise(f->bits, bytes, MADV_HUGEPAGE); /* a hint: fine if refused */
    memset(f->bits, 0, bytes);
    f->blocks = bytes / 64;
    f->cap = f->blocks * 512 / KEYF_BITS_PER_KEY;
    f->keys = 0;
}

/* A zeroed filter for twice the last one's keys (or first_cap), appended. */
static void keyf_grow(struct db_keyf *kf)
{
    uint64_t cap = kf->n ? kf->f[kf->n - 1].cap * 2 : kf->first_cap;
    keyf_alloc(&kf->f[kf->n++], (cap * KEYF_BITS_PER_KEY + 511) / 512 * 64);
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

/* ---- saved with the key counts (db.c) ---- */

/* The shape of a saved filter set: what must match for its bits to mean
 * the same to this build. */
struct keyf_head {
    uint32_t n, k, bits_per_key, pad;
    uint64_t first_cap;
    uint64_t blocks[DB_KEYF_MAX], keys[DB_KEYF_MAX];
};

int db_keyf_save(const struct db_keyf *kf, int fd, uint32_t *crc)
{
    struct keyf_head h;
    memset(&h, 0, sizeof h);
    h.n = kf->n;
    h.k = DB_KEYF_K;
    h.bits_per_key = KEYF_BITS_PER_KEY;
    h.first_cap = kf->first_cap;
    for (unsigned i = 0; i < kf->n; i++) {
        h.blocks[i] = kf->f[i].blocks;
        h.keys[i] = kf->f[i].keys;
    }
    int rc = db_write_all(fd, &h, sizeof h, crc);
    for (unsigned i = 0; i < kf->n && !rc; i++)
        rc = db_write_all(fd, kf->f[i].bits, kf->f[i].blocks * 64, crc);
    return rc;
}

int db_keyf_load(struct db_keyf *kf, int fd, uint32_t *crc)
{
    struct keyf_head h;
    db_keyf_destroy(kf);
    if (db_read_all(fd, &h, sizeof h, crc) != 0 || h.n > DB_KEYF_MAX || h.k != DB_KEYF_K ||
        h.bits_per_key != KEYF_BITS_PER_KEY || h.first_cap < KEYF_MIN_CAP)
        return -1;
    kf->first_cap = h.first_cap;
    for (unsigned i = 0; i < h.n; i++) {
        /* A filter's size is a whole number of lines, and of 2 MiB pages
         * from 1 MiB on: keyf_alloc gives back what it was given. */
        if (h.blocks[i] == 0 || h.blocks[i] > ((uint64_t)1 << 40) / 64)
            goto bad;
        struct db_keyf_one *f = &kf->f[kf->n++];
        keyf_alloc(f, h.blocks[i] * 64);
        if (f->blocks != h.blocks[i] || db_read_all(fd, f->bits, f->blocks * 64, crc) != 0)
            goto bad;
        f->keys = h.keys[i];
    }
    return 0;
bad:
    db_keyf_destroy(kf);
    return -1;
}
