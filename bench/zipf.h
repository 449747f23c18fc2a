/*
 * zipf — the key sequences the benchmarks read: Zipf(alpha) over keys
 * 0..n-1 with the ranks scattered (popularity has nothing to do with key
 * order), from a caller's xorshift state. Header-only.
 */
#ifndef SHMKV_BENCH_ZIPF_H
#define SHMKV_BENCH_ZIPF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline uint64_t zipf_rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* len draws; the caller frees the array. Exits on out of memory. */
static inline uint32_t *zipf_sequence(uint32_t n, size_t len, double alpha, uint64_t *rng)
{
    double *cdf = malloc(n * sizeof *cdf), sum = 0;
    uint32_t *perm = malloc(n * sizeof *perm), *seq = malloc(len * sizeof *seq);
    if (!cdf || !perm || !seq) {
        fprintf(stderr, "zipf: out of memory\n");
        exit(1);
    }
    for (uint32_t i = 0; i < n; i++) {
        cdf[i] = (sum += 1.0 / pow((double)i + 1, alpha));
        perm[i] = i;
    }
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(zipf_rnd(rng) % (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t a = 0; a < len; a++) {
        double u = (double)(zipf_rnd(rng) >> 11) / (double)(1ull << 53) * sum;
        uint32_t lo = 0, hi = n - 1;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        seq[a] = perm[lo];
    }
    free(cdf);
    free(perm);
    return seq;
}

#endif
