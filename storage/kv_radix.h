/*
 * kv_radix — the one radix sort (header-only, part of the common base, so
 * that each caller's item size is a constant the compiler folds into the
 * moves): the flusher's batch sort and the overlay's ordering of its
 * waiting nodes both sort items by a 64-bit word of key bytes.
 */
#ifndef SHMKV_KV_RADIX_H
#define SHMKV_KV_RADIX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Sorts the n items of sz bytes at a by the uint64_t at byte koff of each:
 * least significant byte first, stable, skipping the bytes every item
 * shares (a pass that would move nothing). b is scratch of n items; the
 * result is in a. */
static inline void kv_radix64(void *a, void *b, size_t n, size_t sz, size_t koff)
{
    size_t cnt[8][256] = {{0}};
    unsigned char *src = a, *dst = b;
    for (size_t i = 0; i < n; i++) {
        uint64_t k;
        memcpy(&k, src + i * sz + koff, 8);
        for (int j = 0; j < 8; j++)
            cnt[j][(k >> (8 * j)) & 0xff]++;
    }
    uint64_t k0;
    memcpy(&k0, src + koff, 8);
    for (int j = 0; j < 8; j++) {
        if (cnt[j][(k0 >> (8 * j)) & 0xff] == n)
            continue;
        size_t sum = 0;
        for (int v = 0; v < 256; v++) {
            size_t c = cnt[j][v];
            cnt[j][v] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t k;
            memcpy(&k, src + i * sz + koff, 8);
            memcpy(dst + cnt[j][(k >> (8 * j)) & 0xff]++ * sz, src + i * sz, sz);
        }
        unsigned char *t = src;
        src = dst;
        dst = t;
    }
    if (src != (unsigned char *)a)
        memcpy(a, src, n * sz);
}

#endif
