/*
 * test_shmc — the shared-memory cache: both halves in one process (and, for
 * torn reads, a forked reader), against a model. Adversarial layouts: keys
 * that all fall in one bucket, logs wrapping many times, the largest record
 * that fits and the smallest that does not, corrupt and foreign headers,
 * and the seals that keep a client from writing or resizing the segment.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kv_crc.h"
#include "shmc_r.h"
#include "shmc_w.h"

struct pair {
    struct shmc_w *w;
    struct shmc_r r;
    struct shmc_buf buf;
};

static void pair_open_huge(struct pair *p, size_t size, size_t max_record, bool huge)
{
    memset(p, 0, sizeof *p);
    struct shmc_w_opts o = {
        .size = size, .max_record = max_record, .socket_path = "/x.sock", .huge_pages = huge};
    char err[128];
    int rc = shmc_w_create(&p->w, &o, err, sizeof err);
    if (rc)
        fail_msg("create: %s", err);
    rc = shmc_r_attach(&p->r, shmc_w_fd(p->w), shmc_w_hint_fd(p->w), err, sizeof err);
    if (rc)
        fail_msg("attach: %s", err);
    shmc_w_beat(p->w, 0);
}

static void pair_open(struct pair *p, size_t size, size_t max_record)
{
    pair_open_huge(p, size, max_record, false);
}

static void pair_close(struct pair *p)
{
    shmc_r_detach(&p->r);
    shmc_w_destroy(p->w);
    free(p->buf.p);
}

static void check(struct pair *p)
{
    const char *why = shmc_w_check(p->w);
    if (why)
        fail_msg("invariant: %s", why);
}

/* One look-up in its own read transaction. */
static int rget(struct pair *p, unsigned g, const char *k, size_t kn)
{
    struct shmc_rtx t;
    shmc_rtx_begin(&t, &p->r, g);
    t.now_ms = 1000;
    int rc = shmc_rtx_get(&t, k, kn, &p->buf);
    int v = shmc_rtx_end(&t);
    return v ? SHMC_RETRY : rc;
}

static void test_basic(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 4u << 20, 0);
    assert_int_equal(rget(&p, 0, "k", 1), SHMC_MISS);
    shmc_w_put(p.w, 0, "k", 1, "hello", 5, 0);
    assert_int_equal(rget(&p, 0, "k", 1), SHMC_HIT);
    assert_int_equal(p.buf.len, 5);
    assert_memory_equal(p.buf.p, "hello", 5);
    /* Other group, other key: misses. */
    assert_int_equal(rget(&p, 1, "k", 1), SHMC_MISS);
    assert_int_equal(rget(&p, 0, "kk", 2), SHMC_MISS);
    /* Refresh. */
    shmc_w_put(p.w, 0, "k", 1, "", 0, 0);
    assert_int_equal(rget(&p, 0, "k", 1), SHMC_HIT);
    assert_int_equal(p.buf.len, 0);
    /* Deleted: a cached key turns negative, an uncached one stays uncached. */
    shmc_w_deleted(p.w, 0, "k", 1);
    assert_int_equal(rget(&p, 0, "k", 1), SHMC_NEG);
    shmc_w_deleted(p.w, 0, "u", 1);
    assert_int_equal(rget(&p, 0, "u", 1), SHMC_MISS);
    shmc_w_put_neg(p.w, 0, "u", 1);
    assert_int_equal(rget(&p, 0, "u", 1), SHMC_NEG);
    shmc_w_remove(p.w, 0, "u", 1);
    assert_int_equal(rget(&p, 0, "u", 1), SHMC_MISS);
    /* Expiry: at or before the reader's now, a miss. */
    shmc_w_put(p.w, 0, "e", 1, "v", 1, 1000);
    assert_int_equal(rget(&p, 0, "e", 1), SHMC_MISS);
    shmc_w_put(p.w, 0, "e", 1, "v", 1, 1001);
    assert_int_equal(rget(&p, 0, "e", 1), SHMC_HIT);
    /* Dropping a group. */
    shmc_w_put(p.w, 0, "k", 1, "x", 1, 0);
    shmc_w_put(p.w, 1, "k", 1, "y", 1, 0);
    shmc_w_drop_group(p.w, 0);
    assert_int_equal(rget(&p, 0, "k", 1), SHMC_MISS);
    assert_int_equal(rget(&p, 1, "k", 1), SHMC_HIT);
    const char *v;
    size_t vn;
    assert_int_equal(shmc_w_get(p.w, 0, "k", 1, &v, &vn), SHMC_W_MISS);
    assert_int_equal(shmc_w_get(p.w, 1, "k", 1, &v, &vn), SHMC_W_HIT);
    shmc_w_put(p.w, 0, "k", 1, "z", 1, 0);
    assert_int_equal(rget(&p, 0, "k", 1), SHMC_HIT);
    assert_memory_equal(p.buf.p, "z", 1);
    /* A record of the same size is rewritten in place: no log space. */
    struct shmc_w_stats a, b;
    shmc_w_put(p.w, 0, "same", 4, "12345678", 8, 0);
    shmc_w_stats(p.w, &a);
    shmc_w_put(p.w, 0, "same", 4, "abcdefgh", 8, 2000);
    shmc_w_stats(p.w, &b);
    assert_int_equal(b.used, a.used);
    assert_int_equal(b.updates, a.updates + 1);
    assert_int_equal(rget(&p, 0, "same", 4), SHMC_HIT);
    assert_memory_equal(p.buf.p, "abcdefgh", 8);
    shmc_w_put(p.w, 0, "same", 4, "abcdefg", 7, 1000); /* same size, now expired */
    assert_int_equal(rget(&p, 0, "same", 4), SHMC_MISS);
    shmc_w_put(p.w, 0, "same", 4, "abcdefghijklmnopqrst", 20, 0); /* larger: appended */
    shmc_w_stats(p.w, &a);
    assert_true(a.used > b.used);
    assert_int_equal(rget(&p, 0, "same", 4), SHMC_HIT);
    assert_int_equal(p.buf.len, 20);
    check(&p);
    pair_close(&p);
}

static void test_transaction_all_or_nothing(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 4u << 20, 0);
    shmc_w_put(p.w, 0, "a", 1, "1", 1, 0);
    shmc_w_put(p.w, 0, "b", 1, "1", 1, 0);
    /* A reader that read a before the transaction and b after it must not
     * accept the pair. */
    struct shmc_rtx t;
    shmc_rtx_begin(&t, &p.r, 0);
    assert_int_equal(shmc_rtx_get(&t, "a", 1, &p.buf), SHMC_HIT);
    shmc_w_begin(p.w);
    shmc_w_put(p.w, 0, "a", 1, "2", 1, 0);
    shmc_w_put(p.w, 0, "b", 1, "2", 1, 0);
    /* Inside the transaction both keys are being written. */
    assert_int_equal(rget(&p, 0, "a", 1), SHMC_RETRY);
    assert_int_equal(rget(&p, 0, "b", 1), SHMC_RETRY);
    shmc_w_end(p.w);
    assert_int_equal(shmc_rtx_get(&t, "b", 1, &p.buf), SHMC_HIT);
    assert_int_equal(shmc_rtx_end(&t), SHMC_RETRY);
    /* Nested transactions publish at the outermost end. */
    shmc_w_begin(p.w);
    shmc_w_begin(p.w);
    shmc_w_put(p.w, 0, "a", 1, "3", 1, 0);
    shmc_w_end(p.w);
    assert_int_equal(rget(&p, 0, "a", 1), SHMC_RETRY);
    shmc_w_end(p.w);
    assert_int_equal(rget(&p, 0, "a", 1), SHMC_HIT);
    assert_memory_equal(p.buf.p, "3", 1);
    /* A group dropped under a reader invalidates what it read. */
    shmc_rtx_begin(&t, &p.r, 0);
    assert_int_equal(shmc_rtx_get(&t, "a", 1, &p.buf), SHMC_HIT);
    shmc_w_drop_group(p.w, 0);
    assert_int_equal(shmc_rtx_end(&t), SHMC_RETRY);
    check(&p);
    pair_close(&p);
}

/* Keys whose hashes share one bucket: the index must evict, never lose
 * track of a record it still points to. */
static void test_full_bucket(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 4u << 20, 0);
    uint32_t nb = p.r.nb;
    char keys[40][16];
    int n = 0;
    uint32_t want = shmc_bucket_of(shmc_hash("seed", 4), nb);
    for (unsigned i = 0; n < 40; i++) {
        char k[16];
        snprintf(k, sizeof k, "b%u", i);
        if (shmc_bucket_of(shmc_hash(k, strlen(k)), nb) == want)
            strcpy(keys[n++], k);
    }
    for (int i = 0; i < n; i++) {
        shmc_w_put(p.w, 0, keys[i], strlen(keys[i]), keys[i], strlen(keys[i]), 0);
        check(&p);
    }
    struct shmc_w_stats st;
    shmc_w_stats(p.w, &st);
    assert_true(st.index_evictions >= (uint64_t)n - SHMC_SLOTS);
    int hits = 0;
    for (int i = 0; i < n; i++) {
        int rc = rget(&p, 0, keys[i], strlen(keys[i]));
        assert_true(rc == SHMC_HIT || rc == SHMC_MISS);
        if (rc == SHMC_HIT) {
            assert_int_equal(p.buf.len, strlen(keys[i]));
            assert_memory_equal(p.buf.p, keys[i], p.buf.len);
            hits++;
        }
    }
    assert_int_equal(hits, SHMC_SLOTS);
    pair_close(&p);
}

static void test_record_limits(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 4u << 20, 0);
    size_t maxrec = p.r.max_record;
    assert_true(maxrec >= 1024);
    size_t vlen = maxrec - sizeof(struct shmc_rec) - 3;
    char *big = malloc(vlen + 8);
    memset(big, 'v', vlen + 8);
    shmc_w_put(p.w, 0, "big", 3, big, vlen, 0);
    assert_int_equal(rget(&p, 0, "big", 3), SHMC_HIT);
    assert_int_equal(p.buf.len, vlen);
    /* One byte more no longer fits: refused, and the old value is gone
     * (never left behind, stale). */
    shmc_w_put(p.w, 0, "big", 3, big, vlen + 1, 0);
    assert_int_equal(rget(&p, 0, "big", 3), SHMC_MISS);
    struct shmc_w_stats st;
    shmc_w_stats(p.w, &st);
    assert_int_equal(st.refused, 1);
    /* Maximal records, over and over: every log wraps many times. */
    for (int i = 0; i < 200; i++) {
        char k[16];
        snprintf(k, sizeof k, "m%d", i % 17);
        big[0] = (char)i;
        shmc_w_put(p.w, 0, k, strlen(k), big, vlen - (size_t)(i % 5) * 8, 0);
        check(&p);
        assert_int_equal(rget(&p, 0, k, strlen(k)), SHMC_HIT);
        assert_int_equal(p.buf.p[0], (char)i);
    }
    free(big);
    pair_close(&p);
}

/* A rewrite is a use, as a write is for Redis's LRU: a record rewritten
 * after it came in (in place, or appended at another size) moves to the
 * main log at the small log's head, where one written once leaves. */
static void test_rewrite_is_access(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 4u << 20, 0);
    /* Keys written once fill the main log first (one not used moves there
     * while it has room), so that from here on only a use gets there. */
    char k[16], v[100];
    memset(v, 'v', sizeof v);
    for (int i = 0; i < 60000; i++) {
        snprintf(k, sizeof k, "a%d", i);
        shmc_w_put(p.w, 0, k, strlen(k), v, sizeof v, 0);
    }
    shmc_w_put(p.w, 0, "once", 4, "12345678", 8, 0);
    shmc_w_put(p.w, 0, "same", 4, "12345678", 8, 0);
    shmc_w_put(p.w, 0, "same", 4, "abcdefgh", 8, 0); /* in place */
    shmc_w_put(p.w, 0, "grow", 4, "12345678", 8, 0);
    shmc_w_put(p.w, 0, "grow", 4, "abcdefghijklmnopqrst", 20, 0); /* appended */
    /* Enough keys written once to pass the small log's head many times. */
    struct shmc_w_stats a, b;
    shmc_w_stats(p.w, &a);
    for (int i = 0; i < 60000; i++) {
        snprintf(k, sizeof k, "c%d", i);
        shmc_w_put(p.w, 0, k, strlen(k), v, sizeof v, 0);
    }
    check(&p);
    shmc_w_stats(p.w, &b);
    assert_true(b.evictions - a.evictions > 10000);
    assert_int_equal(b.promotions - a.promotions, 2);
    assert_int_equal(rget(&p, 0, "once", 4), SHMC_MISS);
    assert_int_equal(rget(&p, 0, "same", 4), SHMC_HIT);
    assert_memory_equal(p.buf.p, "abcdefgh", 8);
    assert_int_equal(rget(&p, 0, "grow", 4), SHMC_HIT);
    assert_int_equal(p.buf.len, 20);
    pair_close(&p);
}

/* A cache with room for every key evicts none of them: keys written once
 * pass the small log's head into the main log while it has room. */
static void test_room_keeps_all(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 4u << 20, 0);
    char k[16];
    enum { N = 20000 }; /* about 1 MiB of records: 3 small logs' worth */
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof k, "r%d", i);
        shmc_w_put(p.w, 0, k, strlen(k), "12345678", 8, 0);
    }
    check(&p);
    struct shmc_w_stats st;
    shmc_w_stats(p.w, &st);
    assert_int_equal(st.evictions, 0);
    assert_int_equal(st.promotions, 0);
    /* Only a full index bucket (7 slots) may have dropped a key. */
    uint64_t misses = 0;
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof k, "r%d", i);
        misses += rget(&p, 0, k, strlen(k)) != SHMC_HIT;
    }
    assert_true(misses <= st.index_evictions);
    assert_true(misses < N / 100);
    pair_close(&p);
}

/* The reader finds (g, k) holding the string v. */
static void want(struct pair *p, unsigned g, const char *k, const char *v)
{
    assert_int_equal(rget(p, g, k, strlen(k)), SHMC_HIT);
    assert_int_equal(p->buf.len, strlen(v));
    assert_memory_equal(p->buf.p, v, strlen(v));
}

/* A put right after a look-up starts from the slot the look-up found
 * (w->last): only for the same key and group, and only while no slot has
 * changed since. */
static void test_put_after_lookup(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 4u << 20, 0);
    const char *v;
    size_t vn;
    shmc_w_put(p.w, 0, "a", 1, "1", 1, 0);
    shmc_w_put(p.w, 0, "b", 1, "2", 1, 0);
    /* Same key, same size: rewritten in place from the noted slot. */
    assert_int_equal(shmc_w_peek(p.w, 0, "a", 1, &v, &vn), SHMC_W_HIT);
    shmc_w_put(p.w, 0, "a", 1, "3", 1, 0);
    want(&p, 0, "a", "3");
    /* Same key, new size: a new record, the noted slot pointed at it. */
    assert_int_equal(shmc_w_get(p.w, 0, "a", 1, &v, &vn), SHMC_W_HIT);
    shmc_w_put(p.w, 0, "a", 1, "longer", 6, 0);
    want(&p, 0, "a", "longer");
    /* Another key after the look-up: its own slot, a is untouched. */
    assert_int_equal(shmc_w_peek(p.w, 0, "a", 1, &v, &vn), SHMC_W_HIT);
    shmc_w_put(p.w, 0, "b", 1, "4", 1, 0);
    shmc_w_put(p.w, 0, "c", 1, "5", 1, 0);
    want(&p, 0, "a", "longer");
    want(&p, 0, "b", "4");
    want(&p, 0, "c", "5");
    /* The same key in another group is another record. */
    assert_int_equal(shmc_w_peek(p.w, 0, "a", 1, &v, &vn), SHMC_W_HIT);
    shmc_w_put(p.w, 1, "a", 1, "g", 1, 0);
    want(&p, 0, "a", "longer");
    want(&p, 1, "a", "g");
    /* A slot changed since the look-up (a deleted, then b put in a new
     * record): the put of a searches again. */
    assert_int_equal(shmc_w_peek(p.w, 0, "a", 1, &v, &vn), SHMC_W_HIT);
    shmc_w_remove(p.w, 0, "a", 1);
    shmc_w_put(p.w, 0, "b", 1, "bb", 2, 0);
    shmc_w_put(p.w, 0, "a", 1, "5", 1, 0);
    want(&p, 0, "a", "5");
    want(&p, 0, "b", "bb");
    /* A look-up that missed notes nothing. */
    assert_int_equal(shmc_w_peek(p.w, 0, "zz", 2, &v, &vn), SHMC_W_MISS);
    shmc_w_put(p.w, 0, "zz", 2, "z", 1, 0);
    want(&p, 0, "zz", "z");
    want(&p, 0, "a", "5");
    check(&p);
    struct shmc_w_stats st;
    shmc_w_stats(p.w, &st);
    assert_int_equal(st.records, 5); /* a, b, c, zz in group 0; a in group 1 */
    pair_close(&p);
}

/* test_model's put: n random bytes for key, in the cache and the model
 * (*m, *mlen, *present); val is scratch room of at least n bytes. */
static void model_put(struct pair *p, unsigned *seed, const char *key, size_t kn, size_t n,
                      char *val, char **m, size_t *mlen, int *present)
{
    for (size_t i = 0; i < n; i++)
        val[i] = (char)rand_r(seed);
    shmc_w_put(p->w, 0, key, kn, val, n, 0);
    free(*m);
    *m = malloc(n + 1);
    memcpy(*m, val, n);
    *mlen = n;
    *present = 1;
}

/* Random operations against a model: a hit always holds the model's value,
 * a negative entry only ever stands for an absent key. */
static void test_model(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 2u << 20, 0);
    enum { NK = 3000 };
    static char *model[NK];
    static size_t mlen[NK];
    static int present[NK];
    unsigned seed = 7;
    char *val = malloc(5000);
    for (int op = 0; op < 60000; op++) {
        unsigned k = (unsigned)rand_r(&seed) % NK;
        /* Zipf-ish: a few keys are read far more than the rest. */
        if (rand_r(&seed) % 2)
            k %= 64;
        char key[16];
        int kn = snprintf(key, sizeof key, "key:%u", k);
        /* The daemon's hints before a look-up: they must change nothing,
         * and the second finds the tag of every key the cache holds. */
        int tags = shmc_w_prefetch_rec(p.w, shmc_w_prefetch(p.w, key, (size_t)kn), (size_t)kn);
        shmc_w_prefetch_rec(p.w, (uint64_t)rand_r(&seed) << 32 | (unsigned)rand_r(&seed),
                            (size_t)kn); /* any hash */
        int what = rand_r(&seed) % 10;
        if (what < 4) {
            size_t n = (size_t)rand_r(&seed) % ((rand_r(&seed) % 20) ? 200 : 5000);
            model_put(&p, &seed, key, (size_t)kn, n, val, &model[k], &mlen[k], &present[k]);
        } else if (what < 5) {
            shmc_w_deleted(p.w, 0, key, (size_t)kn);
            present[k] = 0;
        } else if (what < 6) {
            /* The daemon's fill of a miss. */
            if (present[k])
                shmc_w_put(p.w, 0, key, (size_t)kn, model[k], mlen[k], 0);
            else
                shmc_w_put_neg(p.w, 0, key, (size_t)kn);
        } else if (what < 7) {
            const char *v;
            size_t vn;
            /* A peek answers as the get after it, and counts nothing. */
            const char *pv = NULL;
            size_t pvn = 0;
            struct shmc_w_stats s0, s1;
            shmc_w_stats(p.w, &s0);
            int prc = shmc_w_peek(p.w, 0, key, (size_t)kn, &pv, &pvn);
            shmc_w_stats(p.w, &s1);
            assert_int_equal(s0.lookups, s1.lookups);
            int rc = shmc_w_get(p.w, 0, key, (size_t)kn, &v, &vn);
            assert_int_equal(prc, rc);
            if (rc == SHMC_W_HIT)
                assert_true(pv == v && pvn == vn);
            if (rc != SHMC_W_MISS)
                assert_true(tags > 0);
            if (rc == SHMC_W_HIT) {
                assert_true(present[k]);
                assert_int_equal(vn, mlen[k]);
                assert_memory_equal(v, model[k], vn);
            } else if (rc == SHMC_W_NEG) {
                assert_false(present[k]);
            }
            /* The daemon's write of a key it just peeked at (its key
             * counts): the put starts from the slot the look-up noted. */
            if (rand_r(&seed) % 2)
                model_put(&p, &seed, key, (size_t)kn, (size_t)rand_r(&seed) % 300, val, &model[k],
                          &mlen[k], &present[k]);
        } else {
            int rc = rget(&p, 0, key, (size_t)kn);
            if (rc == SHMC_HIT) {
                assert_true(present[k]);
                assert_int_equal(p.buf.len, mlen[k]);
                assert_memory_equal(p.buf.p, model[k], mlen[k]);
            } else {
                assert_true(rc == SHMC_MISS || (rc == SHMC_NEG && !present[k]));
            }
        }
        if (op % 5000 == 0)
            check(&p);
    }
    check(&p);
    struct shmc_w_stats st;
    shmc_w_stats(p.w, &st);
    assert_true(st.evictions > 0);
    assert_true(st.promotions > 0);
    assert_true(st.used <= st.size);
    for (int i = 0; i < NK; i++)
        free(model[i]);
    free(val);
    pair_close(&p);
}

/* A forked reader verifies checksummed values while the writer replaces
 * them as fast as it can: zero torn reads accepted. */
static uint64_t sum64(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static void test_torn_reads(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 2u << 20, 0);
    shmc_w_beat(p.w, UINT64_MAX / 2);
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(3);
        long hits = 0, bad = 0;
        time_t end = time(NULL) + 2;
        while (time(NULL) < end) {
            for (int k = 0; k < 64; k++) {
                char key[8];
                int kn = snprintf(key, sizeof key, "t%d", k);
                if (rget(&p, 0, key, (size_t)kn) != SHMC_HIT)
                    continue;
                hits++;
                uint64_t want;
                if (p.buf.len < 8) {
                    bad++;
                    continue;
                }
                memcpy(&want, p.buf.p, 8);
                if (want != sum64(p.buf.p + 8, p.buf.len - 8))
                    bad++;
            }
        }
        _exit(bad ? 1 : hits ? 0 : 2);
    }
    char val[600];
    unsigned seed = 3;
    assert_int_equal(write(go[1], "g", 1), 1);
    int status = 0;
    for (long i = 0; waitpid(pid, &status, WNOHANG) == 0; i++) {
        char key[8];
        int kn = snprintf(key, sizeof key, "t%ld", i % 64);
        /* Half of the writes have one size, so that a key's record is
         * often rewritten in place, the rest any size. */
        size_t n = rand_r(&seed) % 2 ? 200 : 8 + (size_t)rand_r(&seed) % 590;
        for (size_t j = 8; j < n; j++)
            val[j] = (char)rand_r(&seed);
        uint64_t s = sum64(val + 8, n - 8);
        memcpy(val, &s, 8);
        shmc_w_put(p.w, 0, key, (size_t)kn, val, n, 0);
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    close(go[0]);
    close(go[1]);
    pair_close(&p);
}

/* A client can neither write nor resize the segment. */
static void test_seals(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 1u << 20, 0);
    int fd = shmc_w_fd(p.w);
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(m == MAP_FAILED);
    assert_int_equal(errno, EPERM);
    assert_int_equal(ftruncate(fd, 0), -1);
    assert_int_equal(ftruncate(shmc_w_hint_fd(p.w), 0), -1);
    assert_int_equal(pwrite(fd, "x", 1, 0), -1);
    /* Closing tells readers to stop. */
    assert_true(shmc_r_alive(&p.r, 0));
    shmc_w_close(p.w);
    assert_false(shmc_r_alive(&p.r, 0));
    pair_close(&p);
}

static long huge_pages_free(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long n = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "HugePages_Free: %ld", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* Asked for hugetlb pages, the segment gets them where the pool has room
 * (rounded down to whole 2 MiB pages) and 4 KiB pages otherwise, including
 * below one huge page; either way it is sealed and serves. CI machines have
 * no pool, so there only the fallback runs. */
static void test_huge_pages(void **state)
{
    (void)state;
    const size_t sizes[] = {(3u << 20) + 4096, 1u << 20};
    for (size_t i = 0; i < 2; i++) {
        long free_before = huge_pages_free();
        struct pair p;
        pair_open_huge(&p, sizes[i], 0, true);
        bool want = sizes[i] >= (2u << 20) && free_before >= 1;
        assert_int_equal(shmc_w_huge(p.w), want);
        assert_int_equal(shmc_w_hdr(p.w)->seg_size, want ? 2u << 20 : sizes[i]);
        int fd = shmc_w_fd(p.w);
        assert_true(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
        assert_int_equal(ftruncate(fd, 0), -1);
        assert_int_equal(pwrite(fd, "x", 1, 0), -1);
        shmc_w_put(p.w, 0, "k", 1, "v", 1, 0);
        assert_int_equal(rget(&p, 0, "k", 1), SHMC_HIT);
        check(&p);
        pair_close(&p);
    }
}

/* A copy of a segment's header with one field changed, in a memfd. */
static int forged(const struct shmc_hdr *h, size_t size, void (*edit)(struct shmc_hdr *))
{
    int fd = memfd_create("forged", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)size), 0);
    struct shmc_hdr copy;
    memcpy(&copy, h, sizeof copy);
    edit(&copy);
    assert_int_equal(pwrite(fd, &copy, sizeof copy, 0), (ssize_t)sizeof copy);
    return fd;
}

static void e_magic(struct shmc_hdr *h)
{
    h->magic ^= 1;
}
static void e_abi(struct shmc_hdr *h)
{
    h->abi = SHMC_ABI + 1;
}
static void e_crc(struct shmc_hdr *h)
{
    h->nbuckets *= 2; /* checksum no longer matches */
}
static void e_geom(struct shmc_hdr *h)
{
    h->log_size = h->seg_size; /* runs past the end */
    h->hdr_crc = kv_crc32c(0, h, offsetof(struct shmc_hdr, hdr_crc));
}
static void e_none(struct shmc_hdr *h)
{
    (void)h;
}

static void test_bad_headers(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 1u << 20, 0);
    const struct shmc_hdr *h = shmc_w_hdr(p.w);
    struct {
        void (*edit)(struct shmc_hdr *);
        int rc;
        const char *msg;
    } cases[] = {
        {e_magic, -EBADMSG, "bad magic"},
        {e_abi, -EPROTO, "ABI version"},
        {e_crc, -EBADMSG, "checksum"},
        {e_geom, -EBADMSG, "log geometry"},
        {e_none, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = forged(h, p.r.size, cases[i].edit);
        struct shmc_r r;
        char err[160] = "";
        int rc = shmc_r_attach(&r, fd, -1, err, sizeof err);
        assert_int_equal(rc, cases[i].rc);
        if (cases[i].msg)
            assert_non_null(strstr(err, cases[i].msg));
        else
            shmc_r_detach(&r);
        close(fd);
    }
    /* Too small for a header at all. */
    int fd = memfd_create("tiny", MFD_CLOEXEC);
    struct shmc_r r;
    char err[160];
    assert_int_equal(shmc_r_attach(&r, fd, -1, err, sizeof err), -EBADMSG);
    close(fd);
    pair_close(&p);
}

/* A client writes its counter slot; the daemon reads and clears it. The
 * slots lie in the hint segment after the hints, inside it; a slot out of
 * range is refused, and so is a header whose slots overrun the segment. */
static void e_ctr(struct shmc_hdr *h)
{
    h->ctr_slots = (uint32_t)(h->hint_size / sizeof(struct shmc_ctr)) + 1;
    h->hdr_crc = kv_crc32c(0, h, offsetof(struct shmc_hdr, hdr_crc));
}

static void test_counter_slots(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 1u << 20, 0);
    const struct shmc_hdr *h = shmc_w_hdr(p.w);
    assert_int_equal(h->ctr_slots, SHMC_CTR_SLOTS);
    assert_true(h->ctr_off >= (uint64_t)h->nbuckets * SHMC_HINT_STRIDE);
    assert_true(h->ctr_off + SHMC_CTR_SLOTS * sizeof(struct shmc_ctr) <= h->hint_size);
    assert_null(shmc_r_ctr(&p.r, SHMC_CTR_SLOTS));
    struct shmc_ctr *first = shmc_r_ctr(&p.r, 0), *last = shmc_r_ctr(&p.r, SHMC_CTR_SLOTS - 1);
    assert_non_null(first);
    assert_non_null(last);
    last->hits = 7;
    last->key_misses = 3;
    first->retries = 1;
    struct shmc_ctr got;
    shmc_w_ctr_read(p.w, SHMC_CTR_SLOTS - 1, &got);
    assert_int_equal(got.hits, 7);
    assert_int_equal(got.key_misses, 3);
    assert_int_equal(got.retries, 0);
    shmc_w_ctr_clear(p.w, SHMC_CTR_SLOTS - 1);
    assert_int_equal(last->hits, 0);
    shmc_w_ctr_read(p.w, 0, &got);
    assert_int_equal(got.retries, 1);

    int fd = forged(h, p.r.size, e_ctr);
    struct shmc_r r;
    char err[160] = "";
    assert_int_equal(shmc_r_attach(&r, fd, shmc_w_hint_fd(p.w), err, sizeof err), -EBADMSG);
    assert_non_null(strstr(err, "bad hint segment"));
    close(fd);
    pair_close(&p);
}

/* SWAPDB's map in the header: the identity at first; a change is seen by
 * the next look-up, and a reader whose look-up came before it learns so. */
static void test_dbmap(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p, 1u << 20, 0);
    unsigned g;
    uint32_t seq;
    for (unsigned i = 0; i < SHMC_GROUPS; i++) {
        assert_true(shmc_r_dbmap(&p.r, i, &g, &seq));
        assert_int_equal(g, i);
    }
    assert_true(shmc_r_dbmap(&p.r, 0, &g, &seq));
    assert_true(shmc_r_dbmap_same(&p.r, seq));
    uint8_t map[SHMC_GROUPS];
    for (unsigned i = 0; i < SHMC_GROUPS; i++)
        map[i] = (uint8_t)i;
    map[0] = 5;
    map[5] = 0;
    shmc_w_dbmap(p.w, map);
    assert_false(shmc_r_dbmap_same(&p.r, seq)); /* what it read may be another database's */
    assert_true(shmc_r_dbmap(&p.r, 0, &g, &seq));
    assert_int_equal(g, 5);
    assert_true(shmc_r_dbmap(&p.r, 5, &g, &seq));
    assert_int_equal(g, 0);
    assert_true(shmc_r_dbmap_same(&p.r, seq));
    pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_transaction_all_or_nothing),
        cmocka_unit_test(test_full_bucket),
        cmocka_unit_test(test_record_limits),
        cmocka_unit_test(test_rewrite_is_access),
        cmocka_unit_test(test_room_keeps_all),
        cmocka_unit_test(test_put_after_lookup),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_torn_reads),
        cmocka_unit_test(test_seals),
        cmocka_unit_test(test_huge_pages),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_counter_slots),
        cmocka_unit_test(test_dbmap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
