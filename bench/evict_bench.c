/*
 * evict_bench — which eviction policy for the shm cache: miss ratios on
 * Zipfian traces, the real cache (shm/shmc_w.c: S3-FIFO over two logs,
 * driven as the daemon drives it: look up, fill on a miss) beside exact
 * LRU, CLOCK and SIEVE simulated with the same number of records.
 *
 *   evict_bench [--quick] [--keys N] [--accesses N] [--runs N]
 *
 * Every key's record has the same size (16-byte key, 100-byte value), so
 * "the cache holds 10% of the keys" means the same for every policy: the
 * simulations get exactly that many slots, and the real cache gets a
 * segment whose logs hold that many records (fewer in practice: padding,
 * a lossy index and the small/main split all cost it room, so the
 * comparison is, if anything, unfair to it). Prints a Markdown table.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmc_w.h"
#include "zipf.h"

static uint64_t rng_state = 88172645463325252ull;

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (!p) {
        fprintf(stderr, "evict_bench: out of memory\n");
        exit(1);
    }
    return p;
}

/* ---- exact LRU: a doubly linked list over key ids ---- */

/* Puts k at the head of the list whose sentinel is H. */
static void push_head(uint32_t *prev, uint32_t *next, uint32_t H, uint32_t k)
{
    next[k] = next[H];
    prev[k] = H;
    prev[next[H]] = k;
    next[H] = k;
}

static double run_lru(const uint32_t *tr, size_t len, size_t warm, uint32_t n, uint32_t cap)
{
    uint32_t *prev = xcalloc(n + 1, 4), *next = xcalloc(n + 1, 4);
    bool *in = xcalloc(n, 1);
    const uint32_t H = n; /* sentinel */
    prev[H] = next[H] = H;
    uint32_t size = 0;
    size_t miss = 0;
    for (size_t a = 0; a < len; a++) {
        uint32_t k = tr[a];
        if (in[k]) {
            next[prev[k]] = next[k];
            prev[next[k]] = prev[k];
        } else {
            miss += a >= warm;
            if (size == cap) {
                uint32_t v = prev[H];
                next[prev[v]] = H;
                prev[H] = prev[v];
                in[v] = false;
                size--;
            }
            in[k] = true;
            size++;
        }
        push_head(prev, next, H, k);
    }
    free(prev);
    free(next);
    free(in);
    return (double)miss / (double)(len - warm);
}

/* ---- CLOCK: slots in a ring, one reference bit each ---- */

static double run_clock(const uint32_t *tr, size_t len, size_t warm, uint32_t n, uint32_t cap)
{
    int64_t *where = xcalloc(n, sizeof *where);
    uint32_t *slot = xcalloc(cap, 4);
    bool *ref = xcalloc(cap, 1);
    for (uint32_t i = 0; i < n; i++)
        where[i] = -1;
    uint32_t used = 0, hand = 0;
    size_t miss = 0;
    for (size_t a = 0; a < len; a++) {
        uint32_t k = tr[a];
        if (where[k] >= 0) {
            ref[where[k]] = true;
            continue;
        }
        miss += a >= warm;
        uint32_t s;
        if (used < cap) {
            s = used++;
        } else {
            while (ref[hand]) {
                ref[hand] = false;
                hand = (hand + 1) % cap;
            }
            s = hand;
            where[slot[s]] = -1;
            hand = (hand + 1) % cap;
        }
        slot[s] = k;
        ref[s] = false;
        where[k] = s;
    }
    free(where);
    free(slot);
    free(ref);
    return (double)miss / (double)(len - warm);
}

/* ---- SIEVE: a FIFO queue with a hand that moves from tail to head ---- */

static double run_sieve(const uint32_t *tr, size_t len, size_t warm, uint32_t n, uint32_t cap)
{
    /* List from head (newest) to tail (oldest): next points towards the
     * tail, prev towards the head. */
    uint32_t *prev = xcalloc(n + 1, 4), *next = xcalloc(n + 1, 4);
    bool *in = xcalloc(n, 1), *vis = xcalloc(n, 1);
    const uint32_t H = n;
    prev[H] = next[H] = H;
    uint32_t size = 0, hand = H;
    size_t miss = 0;
    for (size_t a = 0; a < len; a++) {
        uint32_t k = tr[a];
        if (in[k]) {
            vis[k] = true;
            continue;
        }
        miss += a >= warm;
        if (size == cap) {
            uint32_t o = hand == H ? prev[H] : hand; /* start at the tail */
            while (vis[o]) {
                vis[o] = false;
                o = prev[o] == H ? prev[H] : prev[o];
            }
            hand = prev[o] == H ? H : prev[o];
            next[prev[o]] = next[o];
            prev[next[o]] = prev[o];
            in[o] = false;
            size--;
        }
        in[k] = true;
        vis[k] = false;
        size++;
        push_head(prev, next, H, k);
    }
    free(prev);
    free(next);
    free(in);
    free(vis);
    return (double)miss / (double)(len - warm);
}

/* ---- the real cache ---- */

static double run_shmc(const uint32_t *tr, size_t len, size_t warm, uint32_t cap, uint64_t *held)
{
    /* A segment whose logs hold at most cap records: shrink until they do. */
    uint64_t target = (uint64_t)cap * shmc_rec_size(16, 100);
    size_t size = target / 7 * 8 + (64u << 10);
    struct shmc_w *w = NULL;
    for (int tries = 0; tries < 20; tries++) {
        struct shmc_w_opts o = {.size = size};
        char err[160];
        if (shmc_w_create(&w, &o, err, sizeof err)) {
            fprintf(stderr, "evict_bench: %s\n", err);
            exit(1);
        }
        uint64_t log = shmc_w_hdr(w)->log_size;
        if (log <= target)
            break;
        shmc_w_destroy(w);
        w = NULL;
        size -= (size_t)((log - target + 4095) & ~4095ull);
    }
    if (!w) {
        *held = 0;
        return NAN;
    }
    char key[17], val[100];
    memset(val, 'v', sizeof val);
    size_t miss = 0;
    for (size_t a = 0; a < len; a++) {
        snprintf(key, sizeof key, "key:%012u", tr[a]);
        const char *v;
        size_t vn;
        if (shmc_w_get(w, 0, key, 16, &v, &vn) == SHMC_W_HIT)
            continue;
        miss += a >= warm;
        shmc_w_put(w, 0, key, 16, val, sizeof val, 0);
    }
    struct shmc_w_stats st;
    shmc_w_stats(w, &st);
    *held = st.records;
    shmc_w_destroy(w);
    return (double)miss / (double)(len - warm);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    uint32_t keys = 1000000;
    size_t accesses = 10000000;
    int runs = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            keys = 100000;
            accesses = 1000000;
            runs = 1;
        } else if (!strcmp(argv[i], "--keys") && i + 1 < argc) {
            keys = (uint32_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--accesses") && i + 1 < argc) {
            accesses = (size_t)atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: evict_bench [--quick] [--keys N] [--accesses N] [--runs N]\n");
            return 2;
        }
    }
    static const double alphas[] = {0.99, 0.8};
    static const double fracs[] = {0.10, 0.01};
    printf("Miss ratio, median of %d traces (min-max); %u keys, %zu accesses each, the first "
           "10%% not counted.\n\n",
           runs, keys, accesses);
    printf("| Zipf | cache | exact LRU | CLOCK | SIEVE | shmc (S3-FIFO) | shmc / LRU | shmc "
           "records held |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t ai = 0; ai < 2; ai++) {
        for (size_t fi = 0; fi < 2; fi++) {
            double m[4][16];
            uint64_t held = 0;
            uint32_t cap = (uint32_t)(keys * fracs[fi]);
            if ((uint64_t)cap * shmc_rec_size(16, 100) < (1u << 20)) {
                printf("| %.2f | %.0f%% (%u) | below the cache's 1 MiB minimum: not run |||||"
                       "|\n",
                       alphas[ai], fracs[fi] * 100, cap);
                continue;
            }
            for (int r = 0; r < runs && r < 16; r++) {
                uint32_t *tr = zipf_sequence(keys, accesses, alphas[ai], &rng_state);
                size_t warm = accesses / 10;
                m[0][r] = run_lru(tr, accesses, warm, keys, cap);
                m[1][r] = run_clock(tr, accesses, warm, keys, cap);
                m[2][r] = run_sieve(tr, accesses, warm, keys, cap);
                m[3][r] = run_shmc(tr, accesses, warm, cap, &held);
                free(tr);
            }
            char cell[4][64];
            double med[4];
            for (int p = 0; p < 4; p++) {
                qsort(m[p], (size_t)runs, sizeof(double), cmp_d);
                med[p] = m[p][runs / 2];
                snprintf(cell[p], sizeof cell[p], "%.4f (%.4f-%.4f)", med[p], m[p][0],
                         m[p][runs - 1]);
            }
            printf("| %.2f | %.0f%% (%u) | %s | %s | %s | %s | %.3f | %llu |\n", alphas[ai],
                   fracs[fi] * 100, cap, cell[0], cell[1], cell[2], cell[3], med[3] / med[0],
                   (unsigned long long)held);
        }
    }
    return 0;
}
