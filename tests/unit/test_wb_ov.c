/*
 * test_wb_ov — the write-back overlay on its own: random writes, forgets
 * and range deletes over a key universe with shared prefixes, checked against
 * a plain array model (point reads, both directions of the ordered walk,
 * seeks) and against wb_ov_check's invariants (order, links back on every
 * level, the hash index through growth and shrinking, the nodes waiting to
 * be ordered).
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wb_ov.h"
#include "t_rnd.h"

#define NKEYS 3000

struct mkey {
    int cf;
    char k[16];
    size_t kn;
    bool present;
    bool tomb;
    uint64_t seq;
    char v[96];
    size_t vn;
};

static struct mkey keys[NKEYS]; /* sorted by (cf, key) */
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    return t_rnd(&rng);
}

static int mkey_cmp(const void *a, const void *b)
{
    const struct mkey *x = a, *y = b;
    return wb_ov_cmp(x->cf, x->k, x->kn, y->cf, y->k, y->kn);
}

/* Distinct keys of 0..11 bytes from a 3-letter alphabet, so many share
 * prefixes and some are prefixes of others; two column families. */
static void make_universe(void)
{
    size_t n = 0;
    while (n < NKEYS) {
        struct mkey m = {.cf = (int)(rnd() % 2), .kn = rnd() % 12};
        for (size_t i = 0; i < m.kn; i++)
            m.k[i] = "ab\xff"[rnd() % 3];
        bool dup = false;
        for (size_t i = 0; i < n && !dup; i++)
            dup = mkey_cmp(&keys[i], &m) == 0;
        if (!dup)
            keys[n++] = m;
    }
    qsort(keys, NKEYS, sizeof keys[0], mkey_cmp);
}

/* Links every waiting node, of every column family. */
static void order_all(struct wb_ov *o)
{
    for (int cf = 0; cf < WB_OV_CFS; cf++)
        wb_ov_order(o, cf, NULL, 0, NULL, 0);
}

static void check_all(struct wb_ov *o)
{
    assert_int_equal(wb_ov_check(o), 0);
    size_t live = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        struct mkey *m = &keys[i];
        /* Prefetch hints on present and absent keys change nothing. */
        wb_ov_prefetch(o, wb_ov_key_hash(m->cf, m->k, m->kn), 1);
        wb_ov_prefetch(o, wb_ov_key_hash(m->cf, m->k, m->kn), 2);
        struct wb_ov_node *n = wb_ov_find(o, m->cf, m->k, m->kn);
        if (!m->present) {
            assert_null(n);
            continue;
        }
        live++;
        assert_non_null(n);
        assert_int_equal(n->seq, m->seq);
        if (m->tomb) {
            assert_null(n->val);
        } else {
            assert_non_null(n->val);
            assert_int_equal(n->vlen, m->vn);
            assert_memory_equal(n->val, m->v, m->vn);
        }
    }
    assert_int_equal(o->count, live);
    /* The walk forward and back visits the model's keys in order. */
    order_all(o);
    struct wb_ov_node *n = wb_ov_seek(o, 0, "", 0), *last = NULL;
    for (size_t i = 0; i < NKEYS; i++) {
        if (!keys[i].present)
            continue;
        assert_non_null(n);
        assert_int_equal(wb_ov_cmp(n->cf, n->key, n->klen, keys[i].cf, keys[i].k, keys[i].kn), 0);
        last = n;
        n = wb_ov_next(n);
    }
    assert_null(n);
    for (size_t i = NKEYS; i-- > 0;) {
        if (!keys[i].present)
            continue;
        assert_ptr_equal(last, wb_ov_find(o, keys[i].cf, keys[i].k, keys[i].kn));
        last = wb_ov_prev(o, last);
    }
    assert_null(last);
}

static void test_wb_ov_matches_model(void **state)
{
    (void)state;
    make_universe();
    struct wb_ov o;
    wb_ov_init(&o);
    o.tabkeep = 1024; /* shrinking as far as it goes, to test it */
    uint64_t seq = 0;
    size_t maxcount = 0;
    bool shrank = false;
    uint64_t last_high = 0; /* when the tide last saw the index an eighth full */
    size_t skipped = 0, banded = 0, ordered = 0;
    for (int step = 0; step < 60000; step++) {
        /* Phases: grow towards the whole universe, then drain it, twice, so
         * the index grows and shrinks. */
        bool filling = (step / 15000) % 2 == 0;
        size_t i = rnd() % NKEYS;
        struct mkey *m = &keys[i];
        unsigned op = (unsigned)(rnd() % 100);
        if (op < (filling ? 70u : 2u)) {
            m->present = true;
            m->seq = ++seq;
            m->tomb = rnd() % 4 == 0;
            /* Mostly short values, kept in the node; now and then one
             * too long for its room or for any room (OV_VROOM_MAX), so
             * that values move between the node and the heap. */
            m->vn = m->tomb ? 0 : rnd() % 8 ? rnd() % 9 : rnd() % sizeof m->v;
            for (size_t j = 0; j < m->vn; j++)
                m->v[j] = (char)rnd();
            wb_ov_set(&o, wb_ov_key_hash(m->cf, m->k, m->kn), m->cf, m->k, m->kn,
                      m->tomb ? NULL : m->v, m->vn, m->seq);
        } else if (op < 99) {
            /* Forget with the node's own sequence number (it goes) or an
             * older one (a newer write replaced it: it stays). */
            uint64_t s = m->present && rnd() % 4 ? m->seq : m->seq ? m->seq - 1 : 7;
            wb_ov_forget(&o, wb_ov_key_hash(m->cf, m->k, m->kn), m->cf, m->k, m->kn, s);
            if (m->present && s == m->seq)
                m->present = false;
        } else {
            /* A range delete drops what it covers. */
            size_t j = i + rnd() % 40;
            if (j >= NKEYS)
                j = NKEYS - 1;
            if (j == i || keys[j].cf != m->cf)
                continue;
            wb_ov_set_range(&o, m->cf, m->k, m->kn, keys[j].k, keys[j].kn, ++seq);
            for (size_t x = i; x < j; x++)
                keys[x].present = false;
            assert_true(wb_ov_range_covers(&o, m->cf, m->k, m->kn));
            wb_ov_forget_ranges(&o, seq);
            assert_false(wb_ov_range_covers(&o, m->cf, m->k, m->kn));
        }
        /* Housekeeping's tide, a millisecond a step: the index shrinks
         * once it was last seen an eighth full WB_OV_SHRINK_MS ago, and only
         * then. */
        uint64_t now = (uint64_t)step + 1;
        size_t cap = o.tabmask + 1;
        bool low = cap > 1024 && o.count * 8 < cap;
        if (!low)
            last_high = now;
        wb_ov_tide(&o, now);
        if (o.tabmask + 1 < cap) {
            if (!low || now - last_high < WB_OV_SHRINK_MS)
                fail_msg("index shrunk at %" PRIu64 ", last high at %" PRIu64, now, last_high);
            assert_true(o.count * 4 <= o.tabmask + 1);
        } else if (low && now - last_high >= WB_OV_SHRINK_MS) {
            fail_msg("index not shrunk: %zu entries, %zu slots", o.count, cap);
        }
        if (o.count > maxcount)
            maxcount = o.count;
        if (maxcount > 1500 && o.tabmask + 1 <= 1024)
            shrank = true;
        if (step % 500 == 0 || step > 59900)
            check_all(&o);
        else if (step % 50 == 0)
            assert_int_equal(wb_ov_check(&o), 0); /* with nodes waiting */
        /* A walk of a range [t, u) of one column family, after wb_ov_order
         * of that range, sees the model's present keys there and nothing
         * else; the seek lands on the first. Not every step: new nodes
         * wait for an order, and should often be many. */
        if (rnd() % 64)
            continue;
        size_t t = rnd() % NKEYS, u = t + rnd() % 40;
        int cf = keys[t].cf;
        bool bounded = u < NKEYS && keys[u].cf == cf && rnd() % 8;
        const char *hi = bounded ? keys[u].k : NULL;
        size_t hin = bounded ? keys[u].kn : 0;
        size_t waited = wb_ov_waiting(&o, cf);
        wb_ov_order(&o, cf, keys[t].k, keys[t].kn, hi, hin);
        size_t left = wb_ov_waiting(&o, cf);
        if (waited)
            left == waited ? skipped++ : left ? banded++ : ordered++;
        struct wb_ov_node *x = wb_ov_seek(&o, cf, keys[t].k, keys[t].kn);
        for (size_t w = t; w < NKEYS && keys[w].cf == cf && (!bounded || w < u); w++) {
            if (!keys[w].present)
                continue;
            assert_non_null(x);
            if (wb_ov_cmp(x->cf, x->key, x->klen, cf, keys[w].k, keys[w].kn) != 0)
                fail_msg("range walk from key %zu to %zu: key %zu missing", t, u, w);
            x = wb_ov_next(x);
        }
        assert_true(!x || x->cf != cf ||
                    (bounded && wb_ov_cmp(x->cf, x->key, x->klen, cf, hi, hin) >= 0));
    }
    /* Every way was taken, many times: ranges in one key group with none
     * of it waiting (nothing ordered), ranges over a few bands (some
     * ordered), and the others. */
    if (skipped < 50 || banded < 50 || ordered < 50)
        fail_msg("skipped %zu, banded %zu, ordered %zu", skipped, banded, ordered);
    assert_true(maxcount > 1500); /* the index grew past its first size */
    assert_true(shrank);          /* and came back down */
    wb_ov_destroy(&o);
}

/* By default the index keeps up to 65536 slots when the overlay empties:
 * it fills again with the next flush. Above that it shrinks. */
static void test_wb_ov_index_kept(void **state)
{
    (void)state;
    struct wb_ov o;
    wb_ov_init(&o);
    char k[16];
    for (int round = 0; round < 2; round++) {
        int n = round ? 100000 : 20000;
        for (int i = 0; i < n; i++) {
            size_t kn = (size_t)snprintf(k, sizeof k, "k%d", i);
            wb_ov_set(&o, wb_ov_key_hash(1, k, kn), 1, k, kn, "v", 1, (uint64_t)i + 1);
        }
        size_t full = o.tabmask + 1;
        assert_true(full >= (size_t)n * 2);
        for (int i = 0; i < n; i++) {
            size_t kn = (size_t)snprintf(k, sizeof k, "k%d", i);
            wb_ov_forget(&o, wb_ov_key_hash(1, k, kn), 1, k, kn, (uint64_t)i + 1);
        }
        assert_int_equal(o.count, 0);
        uint64_t t0 = 1 + (uint64_t)round * 10 * WB_OV_SHRINK_MS;
        wb_ov_tide(&o, t0);
        wb_ov_tide(&o, t0 + WB_OV_SHRINK_MS - 1);
        assert_int_equal(o.tabmask + 1, full); /* not yet */
        wb_ov_tide(&o, t0 + WB_OV_SHRINK_MS);
        if (round == 0)
            assert_int_equal(o.tabmask + 1, full); /* 32768 slots: kept */
        else
            assert_int_equal(o.tabmask + 1, 65536); /* shrunk to the keep size */
    }
    assert_int_equal(wb_ov_check(&o), 0);
    wb_ov_destroy(&o);
}

static void fill(struct wb_ov *o, int from, int to, uint64_t seq)
{
    char k[16];
    for (int i = from; i < to; i++) {
        size_t kn = (size_t)snprintf(k, sizeof k, "k%d", i);
        wb_ov_set(o, wb_ov_key_hash(1, k, kn), 1, k, kn, "v", 1, seq);
    }
}

static void forget(struct wb_ov *o, int from, int to, uint64_t seq)
{
    char k[16];
    for (int i = from; i < to; i++) {
        size_t kn = (size_t)snprintf(k, sizeof k, "k%d", i);
        wb_ov_forget(o, wb_ov_key_hash(1, k, kn), 1, k, kn, seq);
    }
}

/* An overlay that fills and empties with each flush keeps its index; one
 * that stays low for WB_OV_SHRINK_MS gets an index that holds, at a quarter
 * full, the most it held meanwhile. */
static void test_wb_ov_index_tide(void **state)
{
    (void)state;
    struct wb_ov o;
    wb_ov_init(&o);
    fill(&o, 0, 100000, 1);
    size_t full = o.tabmask + 1;
    assert_int_equal(full, 262144);
    /* Low tides shorter than WB_OV_SHRINK_MS between high ones: kept. */
    uint64_t high = 1; /* the tide's last sight of the index an eighth full */
    wb_ov_tide(&o, high);
    for (int flush = 0; flush < 8; flush++) {
        forget(&o, 0, 100000, 1);
        wb_ov_tide(&o, high + 1);
        wb_ov_tide(&o, high + WB_OV_SHRINK_MS - 1);
        fill(&o, 0, 100000, 1);
        high += WB_OV_SHRINK_MS - 1;
        wb_ov_tide(&o, high); /* a high tide restarts the clock */
        assert_int_equal(o.tabmask + 1, full);
    }
    /* Low for good, with up to 20,000 nodes: 131072 slots hold them at a
     * quarter. */
    forget(&o, 0, 100000, 1);
    wb_ov_tide(&o, high + 1);
    fill(&o, 0, 20000, 2);
    wb_ov_tide(&o, high + 10);
    forget(&o, 0, 20000, 2);
    wb_ov_tide(&o, high + WB_OV_SHRINK_MS - 1);
    assert_int_equal(o.tabmask + 1, full);
    wb_ov_tide(&o, high + WB_OV_SHRINK_MS);
    assert_int_equal(o.tabmask + 1, 131072);
    /* Empty another WB_OV_SHRINK_MS: down to the keep size, and no further. */
    wb_ov_tide(&o, high + 2 * WB_OV_SHRINK_MS);
    assert_int_equal(o.tabmask + 1, 65536);
    wb_ov_tide(&o, high + 5 * WB_OV_SHRINK_MS);
    assert_int_equal(o.tabmask + 1, 65536);
    fill(&o, 0, 1000, 3); /* still an index that finds them */
    assert_int_equal(o.count, 1000);
    assert_int_equal(wb_ov_check(&o), 0);
    wb_ov_destroy(&o);
}

/* A range whose bounds share their first byte orders only the bands of
 * the second bytes between theirs; one whose bounds differ there orders
 * every band, keys shorter than two bytes (band 0) included: "b" lies in
 * ["aa", "bc") and in no band of 'a' to 'c'. */
static void test_wb_ov_order_bands(void **state)
{
    (void)state;
    const char *ks[] = {"", "a", "aa", "ab", "ac", "b", "ba", "bb", "bc", "c", "\x01\x05x"};
    size_t nk = sizeof ks / sizeof ks[0];
    struct wb_ov o;
    wb_ov_init(&o);
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < nk; i++)
            wb_ov_set(&o, wb_ov_key_hash(0, ks[i], strlen(ks[i])), 0, ks[i], strlen(ks[i]), "v", 1,
                      i + 1);
        if (round == 0) {
            /* Within 'a': the bands of 'a' to 'c' only, so "", "a", "b",
             * "c" (band 0) and the key in band 5 wait on. */
            wb_ov_order(&o, 0, "aa", 2, "ac", 2);
            assert_int_equal(wb_ov_waiting(&o, 0), 5);
            const struct wb_ov_node *x = wb_ov_seek(&o, 0, "aa", 2);
            for (size_t i = 2; i <= 4; i++, x = wb_ov_next(x))
                assert_int_equal(wb_ov_cmp(x->cf, x->key, x->klen, 0, ks[i], strlen(ks[i])), 0);
        } else {
            wb_ov_order(&o, 0, "aa", 2, "bc", 2);
            const struct wb_ov_node *x = wb_ov_seek(&o, 0, "aa", 2);
            for (size_t i = 2; i <= 7; i++, x = wb_ov_next(x)) {
                assert_non_null(x);
                assert_int_equal(wb_ov_cmp(x->cf, x->key, x->klen, 0, ks[i], strlen(ks[i])), 0);
            }
        }
        assert_int_equal(wb_ov_check(&o), 0);
    }
    wb_ov_destroy(&o);
}

/* The waiting nodes' sort (wb_ov_order) orders by prefix words and by whole
 * keys where those tie: keys that pad to the same words ("a", "a\0"),
 * long keys alike past the words, runs of one first word long enough for
 * its comparison sort, and all of it in several column families, ordered
 * in two rounds so that the second links among nodes already listed. */
static void test_wb_ov_order_keys(void **state)
{
    (void)state;
    enum { MAXK = 2000 };
    static char ks[MAXK][80];
    static size_t kn[MAXK];
    static int kcf[MAXK];
    size_t n = 0;
    /* 900 alike in their first 60 bytes, past two sets of words (each
     * round orders more than PEND_RADIX_MIN of them); with them the 60
     * bytes alone, and followed by a zero. */
    const char *alike = "a key whose first 60 bytes are shared with 899 others, then:";
    for (int i = 0; i < 900; i++, n++) {
        kn[n] = (size_t)snprintf(ks[n], sizeof ks[n], "%s%d", alike, i * 7919 % 1000);
        kcf[n] = 0;
    }
    for (size_t z = 0; z < 2; z++, n++) {
        memcpy(ks[n], alike, 60);
        ks[n][60] = 0;
        kn[n] = 60 + z;
        kcf[n] = 0;
    }
    for (int i = 0; i < 300; i++, n++) { /* one first word, then apart */
        kn[n] = (size_t)snprintf(ks[n], sizeof ks[n], "abcdefg%d", i * 104729 % 100000);
        kcf[n] = 1;
    }
    for (size_t len = 0; len < 5; len++) /* zeros that pad alike */
        for (int cf = 0; cf < 3; cf++, n++) {
            memset(ks[n], 0, len);
            kn[n] = len;
            kcf[n] = cf;
        }
    for (size_t len = 0; len < 4; len++, n++) {
        ks[n][0] = 'a';
        memset(ks[n] + 1, 0, len);
        kn[n] = len + 1;
        kcf[n] = 0;
    }
    while (n < MAXK) { /* short and long keys over {0, 1, 0xff} */
        size_t len = rnd() % 40;
        for (size_t j = 0; j < len; j++)
            ks[n][j] = "\0\1\xff"[rnd() % 3];
        kn[n] = len;
        kcf[n] = (int)(rnd() % 3);
        bool dup = false;
        for (size_t j = 0; j < n && !dup; j++)
            dup = wb_ov_cmp(kcf[j], ks[j], kn[j], kcf[n], ks[n], kn[n]) == 0;
        if (!dup)
            n++;
    }
    for (size_t i = 0; i < MAXK; i++) { /* a random order of insertion */
        size_t j = i + rnd() % (MAXK - i);
        char t[80];
        memcpy(t, ks[i], sizeof t);
        memcpy(ks[i], ks[j], sizeof t);
        memcpy(ks[j], t, sizeof t);
        size_t tn = kn[i];
        kn[i] = kn[j];
        kn[j] = tn;
        int tc = kcf[i];
        kcf[i] = kcf[j];
        kcf[j] = tc;
    }
    struct wb_ov o;
    wb_ov_init(&o);
    for (int round = 0; round < 2; round++) {
        size_t from = round ? MAXK / 3 : 0, to = round ? MAXK : MAXK / 3;
        for (size_t i = from; i < to; i++)
            wb_ov_set(&o, wb_ov_key_hash(kcf[i], ks[i], kn[i]), kcf[i], ks[i], kn[i], "v", 1,
                      i + 1);
        order_all(&o);
        assert_int_equal(wb_ov_check(&o), 0);
        size_t seen = 0;
        const struct wb_ov_node *p = NULL;
        for (const struct wb_ov_node *x = wb_ov_seek(&o, 0, "", 0); x; p = x, x = x->next[0]) {
            if (p)
                assert_true(wb_ov_cmp(p->cf, p->key, p->klen, x->cf, x->key, x->klen) < 0);
            seen++;
        }
        assert_int_equal(seen, to);
    }
    wb_ov_destroy(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wb_ov_matches_model), cmocka_unit_test(test_wb_ov_index_kept),
        cmocka_unit_test(test_wb_ov_index_tide), cmocka_unit_test(test_wb_ov_order_bands),
        cmocka_unit_test(test_wb_ov_order_keys)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
