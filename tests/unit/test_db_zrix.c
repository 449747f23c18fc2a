/*
 * Rank indexes of sorted sets (db_zrix.c): every rank query of a model run
 * answers as a sorted array would, while members come and go one by one
 * and in bulk, the index is dropped and built again, the engine drains
 * and reopens; the counts never have to be rebuilt for adding up wrong.
 */
#include <math.h>

#include "fixture.h"

#define U 700 /* members m0..m699 */

struct model {
    bool in[U];
    double sc[U];
    int ord[U]; /* members in, in score order, then by name */
    int n;
};

static int name(int i, char *m)
{
    return snprintf(m, 8, "m%d", i);
}

static int cmp_idx(const struct model *z, int a, int b)
{
    if (z->sc[a] != z->sc[b])
        return z->sc[a] < z->sc[b] ? -1 : 1;
    char x[8], y[8];
    name(a, x);
    name(b, y);
    return strcmp(x, y);
}

static void sort_model(struct model *z)
{
    z->n = 0;
    for (int i = 0; i < U; i++)
        if (z->in[i])
            z->ord[z->n++] = i;
    for (int i = 1; i < z->n; i++)
        for (int j = i; j > 0 && cmp_idx(z, z->ord[j - 1], z->ord[j]) > 0; j--) {
            int t = z->ord[j];
            z->ord[j] = z->ord[j - 1];
            z->ord[j - 1] = t;
        }
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int rnd(int n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng >> 33) % (uint64_t)n);
}

static void add(struct db *d, struct model *z, int i, double s)
{
    char m[8];
    struct db_str ms = {m, (size_t)name(i, m)};
    uint64_t got;
    assert_int_equal(db_zadd(d, 0, K("z"), &s, &ms, 1, 0, &got, NULL), 0);
    z->in[i] = true;
    z->sc[i] = s;
}

static void expect_range(const struct db_vec *v, const struct model *z, int from, int n, int rev,
                         int step)
{
    if ((int)v->n != n)
        fail_msg("step %d: %zu members, model %d", step, v->n, n);
    for (int i = 0; i < n; i++) {
        int at = z->ord[rev ? from - i : from + i];
        char m[8];
        int mn = name(at, m);
        if (db_vec_len(v, (size_t)i) != (size_t)mn ||
            memcmp(db_vec_ptr(v, (size_t)i), m, (size_t)mn))
            fail_msg("step %d: member %d is not %s", step, i, m);
        assert_true(v->items[i].score == z->sc[at]);
    }
}

static void run_model(struct fx *f, int steps, unsigned bits)
{
    struct db *d = &f->d;
    d->zrix_min = 64;
    d->zrix_walk = 4;
    d->zrix_bits = bits;
    d->zrm_block = 4; /* blocks split and empty all the time */
    static struct model z;
    memset(&z, 0, sizeof z);
    struct db_vec v;
    db_vec_init(&v);
    for (int i = 0; i < 500; i++)
        add(d, &z, rnd(U), (double)(rnd(200) - 100) / 2);
    for (int step = 0; step < steps; step++) {
        sort_model(&z);
        int op = rnd(1000), n = z.n;
        char m[8];
        uint64_t got;
        if (op < 300) { /* ZADD: new members and new scores */
            for (int k = 1 + rnd(4); k > 0; k--)
                add(d, &z, rnd(U), rnd(20) ? (double)(rnd(200) - 100) / 2 : rnd(2) ? -1e9 : 1e9);
        } else if (op < 310) { /* ZADD of many: the index is dropped */
            int k = 150 + rnd(200);
            double *sc = malloc((size_t)k * sizeof *sc);
            struct db_str *ms = malloc((size_t)k * sizeof *ms);
            char(*names)[8] = malloc((size_t)k * 8);
            for (int j = 0; j < k; j++) {
                int i = rnd(U);
                sc[j] = (double)(rnd(200) - 100) / 2;
                ms[j] = (struct db_str){names[j], (size_t)name(i, names[j])};
                z.in[i] = true;
                z.sc[i] = sc[j];
            }
            assert_int_equal(db_zadd(d, 0, K("z"), sc, ms, (size_t)k, 0, &got, NULL), 0);
            free(sc);
            free(ms);
            free(names);
        } else if (op < 420) { /* ZREM */
            for (int k = 1 + rnd(3); k > 0; k--) {
                int i = rnd(U);
                struct db_str ms = {m, (size_t)name(i, m)};
                assert_int_equal(db_zrem(d, 0, K("z"), &ms, 1, &got), 0);
                assert_int_equal(got, z.in[i]);
                z.in[i] = false;
            }
        } else if (op < 480) { /* ZPOPMIN / ZPOPMAX */
            int max = rnd(2), c = 1 + rnd(3), k = c < n ? c : n;
            assert_int_equal(db_zpop(d, 0, K("z"), max, (uint64_t)c, &v), 0);
            expect_range(&v, &z, max ? n - 1 : 0, k, max, step);
            for (int j = 0; j < k; j++)
                z.in[z.ord[max ? n - 1 - j : j]] = false;
        } else if (op < 650) { /* ZRANK / ZREVRANK */
            int i = rnd(U), rev = rnd(2);
            uint64_t r;
            int rc = db_zrank(d, 0, K("z"), m, (size_t)name(i, m), rev, &r);
            if (!z.in[i]) {
                assert_int_equal(rc, KV_ENOTFOUND);
            } else {
                assert_int_equal(rc, 0);
                if (z.ord[rev ? n - 1 - (int)r : (int)r] != i)
                    fail_msg("step %d: rank %llu of %s", step, (unsigned long long)r, m);
            }
        } else if (op < 800) { /* ZRANGE by rank anywhere, either way */
            int rev = rnd(2), a = rnd(n + 2), c = rnd(12);
            struct db_zspec sp = {
                .by = DB_ZBY_RANK, .start = a, .stop = a + c, .rev = rev, .limit = -1};
            assert_int_equal(db_zrange(d, 0, K("z"), &sp, &v), 0);
            int b = a + c < n ? a + c : n - 1, k = a >= n ? 0 : b - a + 1;
            expect_range(&v, &z, rev ? n - 1 - a : a, k, rev, step);
        } else if (op < 900) { /* ZCOUNT, either end open or exclusive */
            double lo = (double)(rnd(220) - 110) / 2, hi = lo + (double)rnd(100) / 2;
            struct db_zspec sp = {.by = DB_ZBY_SCORE,
                                  .min = rnd(8) ? lo : -INFINITY,
                                  .max = rnd(8) ? hi : INFINITY,
                                  .minex = rnd(2),
                                  .maxex = rnd(2),
                                  .limit = -1};
            assert_int_equal(db_zcount(d, 0, K("z"), &sp, &got), 0);
            uint64_t want = 0;
            for (int j = 0; j < n; j++) {
                double s = z.sc[z.ord[j]];
                if ((sp.minex ? s > sp.min : s >= sp.min) && (sp.maxex ? s < sp.max : s <= sp.max))
                    want++;
            }
            if (got != want)
                fail_msg("step %d: ZCOUNT %llu, model %llu", step, (unsigned long long)got,
                         (unsigned long long)want);
        } else if (op < 930) { /* ZREMRANGEBYRANK in the middle */
            int a = rnd(n + 1), c = rnd(5);
            struct db_zspec sp = {.by = DB_ZBY_RANK, .start = a, .stop = a + c, .limit = -1};
            assert_int_equal(db_zremrange(d, 0, K("z"), &sp, &got), 0);
            int b = a + c < n ? a + c : n - 1, k = a >= n ? 0 : b - a + 1;
            assert_int_equal(got, (uint64_t)k);
            for (int j = a; j <= b; j++)
                z.in[z.ord[j]] = false;
        } else if (op < 960) { /* the index's records into RocksDB */
            assert_int_equal(stor_drain(f->s), 0);
        } else if (op < 965) { /* a clean restart, or as after kill -9: the journal replays */
            if (rnd(2)) {
                fx_reopen(f);
            } else {
                struct db_opts o = f->d.o;
                assert_int_equal(stor_sync(f->s), 0); /* all acknowledged */
                db_destroy(&f->d);
                fx_abandon(f->s); /* its flusher still reports to d until then */
                memset(&f->d, 0, sizeof f->d);
                f->s = NULL;
                assert_int_equal(fx_open_in(f, &o), 0);
            }
            d = &f->d;
            d->zrix_min = 64;
            d->zrix_walk = 4;
            d->zrix_bits = bits;
            d->zrm_block = 4;
        } else if (op < 967) { /* the copies in memory go: read again */
            db_zrm_reset(d);
        } else if (op < 969) { /* the whole set goes, and comes back new */
            db_del(d, 0, K("z"));
            memset(&z, 0, sizeof z);
            for (int i = 0; i < 300; i++)
                add(d, &z, rnd(U), (double)(rnd(200) - 100) / 2);
        } else { /* ZCARD */
            assert_int_equal(db_zcard(d, 0, K("z"), &got), 0);
            assert_int_equal(got, (uint64_t)n);
        }
        db_vec_clear(&v);
        if (d->zrix_stale)
            fail_msg("step %d (op %d): the counts did not add up", step, op);
    }
    db_vec_destroy(&v);
}

static void test_db_zrix_model(void **state)
{
    struct fx *f = *state;
    run_model(f, 6000, 0);
    assert_int_equal(f->d.zrix_stale, 0);
}

/* One member in 2 and in 4 a fence: fences come and go all the time. */
static void test_db_zrix_model_deep(void **state)
{
    struct fx *f = *state;
    run_model(f, 4000, 1);
    assert_int_equal(f->d.zrix_stale, 0);
    db_del(&f->d, 0, K("z"));
    run_model(f, 4000, 2);
    assert_int_equal(f->d.zrix_stale, 0);
}

/* ZLEXCOUNT over equal scores, through the index and, with one score
 * changed, by the walk. */
static void test_db_zrix_lex(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    d->zrix_min = 64;
    char m[8];
    uint64_t got;
    for (int i = 0; i < 400; i++) {
        double s = 1;
        struct db_str ms = {m, (size_t)name(i, m)};
        assert_int_equal(db_zadd(d, 0, K("l"), &s, &ms, 1, 0, &got, NULL), 0);
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int t = 0; t < 300; t++) {
            int a = rnd(420), b = rnd(420), aex = rnd(2), bex = rnd(2), ainf = rnd(10) == 0,
                binf = rnd(10) == 0;
            char x[8], y[8];
            int xn = name(a, x), yn = name(b, y);
            struct db_zspec sp = {.by = DB_ZBY_LEX, .limit = -1};
            sp.lmin = (struct db_lexb){.inf = ainf ? -1 : 0, .ex = aex, .v = {x, (size_t)xn}};
            sp.lmax = (struct db_lexb){.inf = binf ? 1 : 0, .ex = bex, .v = {y, (size_t)yn}};
            assert_int_equal(db_zcount(d, 0, K("l"), &sp, &got), 0);
            uint64_t want = 0;
            for (int i = 0; i < 400 + pass; i++) {
                int mn = name(i, m);
                int ca = db_bytes_cmp(m, (size_t)mn, x, (size_t)xn);
                int cb = db_bytes_cmp(m, (size_t)mn, y, (size_t)yn);
                if ((ainf || (aex ? ca > 0 : ca >= 0)) && (binf || (bex ? cb < 0 : cb <= 0)))
                    want++;
            }
            if (pass == 0)
                assert_int_equal(got, want);
            /* pass 1: scores differ, Redis's answer is undefined; only no error */
        }
        double s = 2;
        struct db_str ms = {m, (size_t)name(400, m)};
        assert_int_equal(db_zadd(d, 0, K("l"), &s, &ms, 1, 0, &got, NULL), 0);
    }
    assert_true(d->zrix_built > 0);
}

enum { BIG = 20000 };

/* Fills sorted set key with BIG members b<i> scored i, in one ZADD (an
 * index is never kept through a bulk write). */
static void fill_big(struct db *d, const char *key, size_t klen)
{
    static char names[BIG][8];
    static double sc[BIG];
    static struct db_str m[BIG];
    for (int i = 0; i < BIG; i++) {
        m[i] = (struct db_str){names[i], (size_t)snprintf(names[i], 8, "b%05d", i)};
        sc[i] = i;
    }
    uint64_t n;
    assert_int_equal(db_zadd(d, 0, key, klen, sc, m, BIG, 0, &n, NULL), 0);
    assert_int_equal(n, BIG);
}

/* With an index, a rank or a range by rank anywhere in a large set reads
 * a few hundred records, not thousands; writes keep it right. */
static void test_db_zrix_cost(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    fill_big(d, K("big"));
    char m[8];
    uint64_t r;
    assert_int_equal(db_zrank(d, 0, K("big"), "b10000", 6, 0, &r), 0); /* builds it */
    assert_int_equal(r, 10000);
    assert_int_equal(d->zrix_built, 1);
    assert_int_equal(stor_drain(f->s), 0);
    for (int t = 0; t < 200; t++) {
        int i = rnd(BIG);
        snprintf(m, sizeof m, "b%05d", i);
        uint64_t m0 = stor_moves();
        if (t % 2) {
            assert_int_equal(db_zrank(d, 0, K("big"), m, 6, t % 4 == 1, &r), 0);
            assert_int_equal(r, t % 4 == 1 ? (uint64_t)(BIG - 1 - i) : (uint64_t)i);
        } else {
            struct db_vec v;
            db_vec_init(&v);
            struct db_zspec sp = {.by = DB_ZBY_RANK, .start = i, .stop = i + 9, .limit = -1};
            assert_int_equal(db_zrange(d, 0, K("big"), &sp, &v), 0);
            assert_int_equal(v.n, i + 9 < BIG ? 10 : BIG - i);
            assert_memory_equal(db_vec_ptr(&v, 0), m, 6);
            db_vec_destroy(&v);
        }
        uint64_t moves = stor_moves() - m0;
        if (moves > 800)
            fail_msg("query %d (i %d): %llu moves", t, i, (unsigned long long)moves);
        /* a write between queries: one member out, one in */
        double s = BIG + t;
        struct db_str ms = {m, 6};
        uint64_t got;
        assert_int_equal(db_zrem(d, 0, K("big"), &ms, 1, &got), 0);
        assert_int_equal(db_zadd(d, 0, K("big"), &s, &ms, 1, 0, &got, NULL), 0);
        s = i;
        assert_int_equal(db_zadd(d, 0, K("big"), &s, &ms, 1, 0, &got, NULL), 0);
    }
    assert_int_equal(d->zrix_built, 1);
    assert_int_equal(d->zrix_stale, 0);
}

/* What must not touch an index: a ZADD that changes nothing, however many
 * members it names; and an empty member standing as a fence survives its
 * copy's reload. */
static void test_db_zrix_keeps(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    fill_big(d, K("k"));
    uint64_t r, n;
    assert_int_equal(db_zrank(d, 0, K("k"), "b00007", 6, 0, &r), 0);
    assert_int_equal(d->zrix_built, 1);
    static char names[1000][8];
    static double sc[1000];
    static struct db_str m[1000];
    for (int i = 0; i < 1000; i++) {
        m[i] = (struct db_str){names[i], (size_t)snprintf(names[i], 8, "b%05d", i)};
        sc[i] = -1;
    }
    assert_int_equal(db_zadd(d, 0, K("k"), sc, m, 1000, DB_ZADD_NX, &n, NULL), 0);
    assert_int_equal(n, 0);
    assert_int_equal(d->last_commit_ops, 0); /* nothing written */
    assert_int_equal(db_zrank(d, 0, K("k"), "b00007", 6, 0, &r), 0);
    assert_int_equal(r, 7);
    assert_int_equal(d->zrix_built, 1); /* the same index */

    d->zrix_bits = 1; /* "" is a fence at one bit in 2 */
    d->zrix_min = 64;
    for (int i = 0; i < 100; i++) {
        double s = i;
        struct db_str ms = {names[i], strlen(names[i])};
        assert_int_equal(db_zadd(d, 0, K("e"), &s, &ms, 1, 0, &n, NULL), 0);
    }
    double s = 50.5;
    struct db_str empty = {"", 0};
    assert_int_equal(db_zadd(d, 0, K("e"), &s, &empty, 1, 0, &n, NULL), 0);
    assert_int_equal(db_zrank(d, 0, K("e"), "", 0, 0, &r), 0);
    assert_int_equal(r, 51);
    db_zrm_reset(d); /* read back from the records */
    assert_int_equal(db_zrank(d, 0, K("e"), "b00099", 6, 0, &r), 0);
    assert_int_equal(r, 100);
    assert_int_equal(d->zrix_stale, 0);
}

/* The compaction filter drops the records of a deleted set's index, and
 * of an index dropped and built again, and keeps the live one's. */
static void test_db_zrix_gc(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    fill_big(d, K("a"));
    fill_big(d, K("b"));
    uint64_t r;
    assert_int_equal(db_zrank(d, 0, K("a"), "b00100", 6, 0, &r), 0);
    assert_int_equal(db_zrank(d, 0, K("b"), "b00100", 6, 0, &r), 0);
    assert_int_equal(stor_drain(f->s), 0);
    assert_int_equal(stor_compact(f->s, STOR_CF_RANK), 0);
    uint64_t one = fx_count_cf(f, STOR_CF_RANK) / 2;
    assert_true(one >= 4 + BIG / 40 && one <= 4 + BIG / 25); /* heads + about 1/31 */
    db_del(d, 0, K("a"));
    /* b: a bulk ZREM drops its index; the next query builds another */
    static char names[2000][8];
    static struct db_str m[2000];
    for (int i = 0; i < 2000; i++)
        m[i] = (struct db_str){names[i], (size_t)snprintf(names[i], 8, "b%05d", 2 * i)};
    assert_int_equal(db_zrem(d, 0, K("b"), m, 2000, &r), 0);
    assert_int_equal(r, 2000);
    assert_int_equal(db_zrank(d, 0, K("b"), "b00101", 6, 0, &r), 0);
    assert_int_equal(r, 50); /* b00000..b00100 less the 51 even ones */
    assert_int_equal(d->zrix_built, 3);
    assert_int_equal(stor_drain(f->s), 0);
    assert_int_equal(stor_compact(f->s, STOR_CF_RANK), 0);
    uint64_t left = fx_count_cf(f, STOR_CF_RANK);
    assert_true(left < one && left >= 4 + (BIG - 2000) / 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_db_zrix_model, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_zrix_model_deep, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_zrix_lex, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_zrix_cost, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_zrix_gc, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_zrix_keeps, fx_setup_wb, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
