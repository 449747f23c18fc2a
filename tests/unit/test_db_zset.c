/*
 * test_db_zset — sorted sets: ZADD flags, ranges by rank/score/lex in both
 * directions with limits, ranks, removals, pops and ZUNION/ZINTER/ZDIFF.
 */
#include "fixture.h"

#include <math.h>

/* Adds a..e with scores 1..5 to key "z". */
static void add5(struct db *d)
{
    struct db_str m[] = {S("a"), S("b"), S("c"), S("d"), S("e")};
    double sc[] = {1, 2, 3, 4, 5};
    uint64_t n;
    assert_int_equal(db_zadd(d, 0, K("z"), sc, m, 5, 0, &n, NULL), 0);
    assert_int_equal(n, 5);
}

/* Asserts the members of v, in order, as one string ("abc"). */
static void assert_members(const struct db_vec *v, const char *want)
{
    assert_int_equal(v->n, strlen(want));
    for (size_t i = 0; i < v->n; i++) {
        assert_int_equal(db_vec_len(v, i), 1);
        assert_int_equal(db_vec_ptr(v, i)[0], want[i]);
    }
}

static struct db_zspec rank(int64_t start, int64_t stop, int rev)
{
    struct db_zspec s = {.by = DB_ZBY_RANK, .start = start, .stop = stop, .rev = rev, .limit = -1};
    return s;
}

static struct db_zspec score(double min, int minex, double max, int maxex, int rev)
{
    struct db_zspec s = {.by = DB_ZBY_SCORE,
                         .min = min,
                         .minex = minex,
                         .max = max,
                         .maxex = maxex,
                         .rev = rev,
                         .limit = -1};
    return s;
}

static void zr(struct db *d, struct db_zspec s, const char *want)
{
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_zrange(d, 0, K("z"), &s, &v), 0);
    assert_members(&v, want);
    db_vec_destroy(&v);
}

static void test_db_zset_add_flags(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    add5(d);
    uint64_t n;
    double out, got;
    struct db_str a[] = {S("a")}, x[] = {S("x")};
    double ten = 10, zero = 0;
    assert_int_equal(db_zadd(d, 0, K("z"), &ten, a, 1, DB_ZADD_NX, &n, NULL), 0);
    assert_int_equal(n, 0);
    assert_int_equal(db_zscore(d, 0, K("z"), K("a"), &got), 0);
    assert_true(got == 1);
    assert_int_equal(db_zadd(d, 0, K("z"), &ten, x, 1, DB_ZADD_XX, &n, NULL), 0);
    assert_int_equal(db_zscore(d, 0, K("z"), K("x"), &got), KV_ENOTFOUND);
    assert_int_equal(db_zadd(d, 0, K("z"), &ten, a, 1, DB_ZADD_CH, &n, NULL), 0);
    assert_int_equal(n, 1); /* CH counts the change */
    assert_int_equal(db_zadd(d, 0, K("z"), &zero, a, 1, DB_ZADD_GT | DB_ZADD_CH, &n, NULL), 0);
    assert_int_equal(n, 0);
    assert_int_equal(db_zadd(d, 0, K("z"), &zero, a, 1, DB_ZADD_LT | DB_ZADD_CH, &n, NULL), 0);
    assert_int_equal(n, 1);
    /* GT does not stop a new member from being added. */
    assert_int_equal(db_zadd(d, 0, K("z"), &zero, x, 1, DB_ZADD_GT, &n, NULL), 0);
    assert_int_equal(n, 1);
    /* INCR. */
    double two = 2.5;
    assert_int_equal(db_zadd(d, 0, K("z"), &two, x, 1, DB_ZADD_INCR, &n, &out), 1);
    assert_true(out == 2.5);
    assert_int_equal(db_zadd(d, 0, K("z"), &two, x, 1, DB_ZADD_INCR | DB_ZADD_NX, &n, &out), 0);
    double minus = -100;
    assert_int_equal(db_zadd(d, 0, K("z"), &minus, x, 1, DB_ZADD_INCR | DB_ZADD_GT, &n, &out), 0);
    double inf = INFINITY, ninf = -INFINITY;
    assert_int_equal(db_zadd(d, 0, K("z"), &inf, x, 1, DB_ZADD_INCR, &n, &out), 1);
    assert_int_equal(db_zadd(d, 0, K("z"), &ninf, x, 1, DB_ZADD_INCR, &n, &out), KV_EZNAN);
    assert_int_equal(db_zscore(d, 0, K("z"), K("x"), &got), 0);
    assert_true(isinf(got) && got > 0);
    /* Repeated member in one ZADD: applied in order, counted once. */
    struct db_str rep[] = {S("r"), S("r")};
    double rs[] = {1, 7};
    assert_int_equal(db_zadd(d, 0, K("z"), rs, rep, 2, 0, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_zscore(d, 0, K("z"), K("r"), &got), 0);
    assert_true(got == 7);
    assert_int_equal(db_zcard(d, 0, K("z"), &n), 0);
    assert_int_equal(n, 7);
    /* XX on an absent key creates nothing. */
    assert_int_equal(db_zadd(d, 0, K("nz"), &ten, x, 1, DB_ZADD_XX, &n, NULL), 0);
    assert_int_equal(db_exists(d, 0, K("nz")), 0);
    /* -0 is stored as 0. */
    double mz = -0.0;
    assert_int_equal(db_zadd(d, 0, K("nz"), &mz, x, 1, 0, &n, NULL), 0);
    assert_int_equal(db_zscore(d, 0, K("nz"), K("x"), &got), 0);
    assert_false(signbit(got));
}

static void test_db_zset_range_rank(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    add5(d);
    zr(d, rank(0, -1, 0), "abcde");
    zr(d, rank(1, 2, 0), "bc");
    zr(d, rank(-2, -1, 0), "de");
    zr(d, rank(-100, 1, 0), "ab");
    zr(d, rank(3, 100, 0), "de");
    zr(d, rank(3, 1, 0), "");
    zr(d, rank(5, 10, 0), "");
    zr(d, rank(0, 1, 1), "ed");
    zr(d, rank(-1, -1, 1), "a");
    struct db_vec v;
    db_vec_init(&v);
    struct db_zspec s = rank(0, -1, 0);
    assert_int_equal(db_zrange(d, 0, K("none"), &s, &v), 0);
    assert_int_equal(v.n, 0);
    assert_int_equal(db_set(d, 0, K("str"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_zrange(d, 0, K("str"), &s, &v), KV_EWRONGTYPE);
    db_vec_destroy(&v);
}

static void test_db_zset_range_score(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    add5(d);
    zr(d, score(2, 0, 4, 0, 0), "bcd");
    zr(d, score(2, 1, 4, 1, 0), "c");
    zr(d, score(-INFINITY, 0, INFINITY, 0, 0), "abcde");
    zr(d, score(2, 0, 4, 0, 1), "dcb");
    zr(d, score(2, 1, 4, 1, 1), "c");
    zr(d, score(4.5, 0, INFINITY, 0, 1), "e");
    zr(d, score(5, 1, INFINITY, 0, 0), "");
    zr(d, score(4, 0, 2, 0, 0), "");
    struct db_zspec s = score(-INFINITY, 0, INFINITY, 0, 0);
    s.offset = 1;
    s.limit = 2;
    zr(d, s, "bc");
    s.rev = 1;
    zr(d, s, "dc");
    s.offset = -1;
    zr(d, s, ""); /* a negative offset yields nothing */
    s.offset = 3;
    s.limit = -5; /* a negative count means all */
    zr(d, s, "ba");
    /* Equal scores order by member; infinite scores sort at the ends. */
    struct db_str m[] = {S("y"), S("x"), S("w"), S("v")};
    double sc[] = {3, 3, INFINITY, -INFINITY};
    uint64_t n;
    assert_int_equal(db_zadd(d, 0, K("z"), sc, m, 4, 0, &n, NULL), 0);
    zr(d, score(3, 0, 3, 0, 0), "cxy");
    zr(d, score(3, 0, 3, 0, 1), "yxc");
    zr(d, rank(0, -1, 0), "vabcxydew");
    zr(d, score(-INFINITY, 1, INFINITY, 1, 0), "abcxyde");
    assert_int_equal(
        db_zcount(d, 0, K("z"),
                  &(struct db_zspec){.by = DB_ZBY_SCORE, .min = 2, .max = 4, .limit = -1}, &n),
        0);
    assert_int_equal(n, 5);
}

static struct db_zspec lex(int mininf, int minex, const char *min, int maxinf, int maxex,
                           const char *max, int rev)
{
    struct db_zspec s = {.by = DB_ZBY_LEX, .rev = rev, .limit = -1};
    s.lmin.inf = mininf;
    s.lmin.ex = minex;
    s.lmin.v = (struct db_str){min, min ? strlen(min) : 0};
    s.lmax.inf = maxinf;
    s.lmax.ex = maxex;
    s.lmax.v = (struct db_str){max, max ? strlen(max) : 0};
    return s;
}

static void test_db_zset_range_lex(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    struct db_str m[] = {S("a"), S("b"), S("c"), S("d"), S("e")};
    double sc[] = {0, 0, 0, 0, 0};
    uint64_t n;
    assert_int_equal(db_zadd(d, 0, K("z"), sc, m, 5, 0, &n, NULL), 0);
    zr(d, lex(-1, 0, NULL, 1, 0, NULL, 0), "abcde");
    zr(d, lex(0, 0, "b", 0, 0, "d", 0), "bcd");
    zr(d, lex(0, 1, "b", 0, 1, "d", 0), "c");
    zr(d, lex(0, 0, "bb", 1, 0, NULL, 0), "cde");
    zr(d, lex(-1, 0, NULL, 0, 1, "c", 0), "ab");
    zr(d, lex(0, 0, "b", 0, 0, "d", 1), "dcb");
    zr(d, lex(0, 1, "b", 0, 1, "d", 1), "c");
    zr(d, lex(-1, 0, NULL, 0, 0, "cc", 1), "cba");
    zr(d, lex(1, 0, NULL, 1, 0, NULL, 0), "");   /* min "+" */
    zr(d, lex(-1, 0, NULL, -1, 0, NULL, 0), ""); /* max "-" */
    struct db_zspec s = lex(-1, 0, NULL, 1, 0, NULL, 1);
    s.offset = 1;
    s.limit = 2;
    zr(d, s, "dc");
    s.rev = 0;
    assert_int_equal(db_zcount(d, 0, K("z"), &s, &n), 0);
    assert_int_equal(n, 5); /* ZLEXCOUNT ignores LIMIT */
}

static void test_db_zset_rank_rem_pop(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    add5(d);
    uint64_t r, n;
    assert_int_equal(db_zrank(d, 0, K("z"), K("a"), 0, &r), 0);
    assert_int_equal(r, 0);
    assert_int_equal(db_zrank(d, 0, K("z"), K("d"), 0, &r), 0);
    assert_int_equal(r, 3);
    assert_int_equal(db_zrank(d, 0, K("z"), K("d"), 1, &r), 0);
    assert_int_equal(r, 1);
    assert_int_equal(db_zrank(d, 0, K("z"), K("q"), 0, &r), KV_ENOTFOUND);
    assert_int_equal(db_zrank(d, 0, K("none"), K("q"), 0, &r), KV_ENOTFOUND);

    struct db_zspec s = rank(0, 0, 0);
    assert_int_equal(db_zremrange(d, 0, K("z"), &s, &n), 0);
    assert_int_equal(n, 1);
    s = score(4, 0, INFINITY, 0, 0);
    assert_int_equal(db_zremrange(d, 0, K("z"), &s, &n), 0);
    assert_int_equal(n, 2);
    zr(d, rank(0, -1, 0), "bc");
    assert_int_equal(db_zcard(d, 0, K("z"), &n), 0);
    assert_int_equal(n, 2);
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_zpop(d, 0, K("z"), 1, 1, &v), 0);
    assert_members(&v, "c");
    assert_true(v.items[0].score == 3);
    db_vec_clear(&v);
    assert_int_equal(db_zpop(d, 0, K("z"), 0, 10, &v), 0);
    assert_members(&v, "b");
    assert_int_equal(db_exists(d, 0, K("z")), 0);
    db_vec_clear(&v);
    assert_int_equal(db_zpop(d, 0, K("z"), 0, 10, &v), 0);
    assert_int_equal(v.n, 0);
    struct db_str m[] = {S("a"), S("zz")};
    add5(d);
    assert_int_equal(db_zrem(d, 0, K("z"), m, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_zrandmember(d, 0, K("z"), -6, &v), 0);
    assert_int_equal(v.n, 6);
    db_vec_destroy(&v);
}

static void test_db_zset_store_ops(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    add5(d);
    uint64_t n;
    struct db_str m2[] = {S("a"), S("b"), S("x")};
    double sc2[] = {10, 20, 30};
    assert_int_equal(db_zadd(d, 0, K("z2"), sc2, m2, 3, 0, &n, NULL), 0);
    struct db_str sm[] = {S("b"), S("y")};
    assert_int_equal(db_sadd(d, 0, K("s"), sm, 2, &n), 0);

    struct db_vec v;
    db_vec_init(&v);
    struct db_str k2[] = {S("z"), S("z2")}, k3[] = {S("z"), S("z2"), S("s")};
    assert_int_equal(db_zsetop(d, 0, DB_ZINTER, k2, 2, NULL, DB_AGG_SUM, &v), 0);
    assert_members(&v, "ab");
    assert_true(v.items[0].score == 11 && v.items[1].score == 22);
    db_vec_clear(&v);
    double w[] = {2, 0.5, 100};
    assert_int_equal(db_zsetop(d, 0, DB_ZINTER, k3, 3, w, DB_AGG_MAX, &v), 0);
    assert_members(&v, "b");
    assert_true(v.items[0].score == 100); /* a set member scores 1, weighted */
    db_vec_clear(&v);
    assert_int_equal(db_zsetop(d, 0, DB_ZUNION, k3, 3, NULL, DB_AGG_MIN, &v), 0);
    assert_members(&v, "abycdex"); /* ordered by score, then member */
    db_vec_clear(&v);
    assert_int_equal(db_zsetop(d, 0, DB_ZDIFF, k3, 3, NULL, DB_AGG_SUM, &v), 0);
    assert_members(&v, "cde");
    db_vec_clear(&v);
    /* inf * 0 weights to 0, as in Redis. */
    double ws[] = {0, 1};
    double inf = INFINITY;
    struct db_str e[] = {S("e")};
    assert_int_equal(db_zadd(d, 0, K("z"), &inf, e, 1, 0, &n, NULL), 0);
    assert_int_equal(db_zsetop(d, 0, DB_ZUNION, k2, 2, ws, DB_AGG_SUM, &v), 0);
    assert_true(v.items[0].score == 0);
    db_vec_clear(&v);

    assert_int_equal(db_zsetop_store(d, 0, DB_ZUNION, K("out"), k2, 2, NULL, DB_AGG_SUM, &n), 0);
    assert_int_equal(n, 6);
    double got;
    assert_int_equal(db_zscore(d, 0, K("out"), K("b"), &got), 0);
    assert_true(got == 22);
    struct db_str km[] = {S("z"), S("missing")};
    assert_int_equal(db_zsetop_store(d, 0, DB_ZINTER, K("out"), km, 2, NULL, DB_AGG_SUM, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(db_exists(d, 0, K("out")), 0);
    assert_int_equal(db_set(d, 0, K("str"), K("v"), 0, 0, NULL, NULL), 1);
    struct db_str kb[] = {S("z"), S("str")};
    assert_int_equal(db_zsetop(d, 0, DB_ZUNION, kb, 2, NULL, DB_AGG_SUM, &v), KV_EWRONGTYPE);

    struct db_zspec s = rank(1, 2, 1);
    assert_int_equal(db_zrangestore(d, 0, K("rs"), K("z"), &s, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_zscore(d, 0, K("rs"), K("d"), &got), 0);
    assert_true(got == 4);
    /* ZRANGESTORE onto its own source. */
    s = rank(0, 0, 0);
    assert_int_equal(db_zrangestore(d, 0, K("z"), K("z"), &s, &n), 0);
    assert_int_equal(db_zcard(d, 0, K("z"), &n), 0);
    assert_int_equal(n, 1);
    db_vec_destroy(&v);
}

static void test_db_zset_scan(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    add5(d);
    struct db_vec v;
    db_vec_init(&v);
    char *next;
    size_t nextn;
    assert_int_equal(
        db_cscan(d, 0, K("z"), ENC_TYPE_ZSET, NULL, 0, NULL, 0, 100, &v, &next, &nextn), 0);
    assert_null(next);
    assert_int_equal(v.n, 10);
    assert_item(&v, 0, "a");
    assert_item(&v, 1, "1");
    db_vec_destroy(&v);
}

/* ZRANDMEMBER of a large sorted set goes through a pick index (db_pick.c):
 * each pick carries the score its member has. */
static void test_db_zset_pick(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char b[32];
    struct db_str m[1] = {{b, 0}};
    uint64_t n;
    for (int i = 0; i < 2000; i++) {
        double sc = i * 0.5 - 100;
        m[0].n = (size_t)snprintf(b, sizeof b, "m%d", i);
        assert_int_equal(db_zadd(d, 0, K("z"), &sc, m, 1, 0, &n, NULL), 0);
    }
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_zrandmember(d, 0, K("z"), 12, &v), 0);
    assert_int_equal(d->picks.n, 1);
    assert_int_equal(v.n, 12);
    for (size_t i = 0; i < v.n; i++) {
        char num[16] = {0};
        memcpy(num, db_vec_ptr(&v, i) + 1, db_vec_len(&v, i) - 1);
        assert_true(v.items[i].score == atoi(num) * 0.5 - 100);
    }
    db_vec_clear(&v);
    assert_int_equal(db_zrandmember(d, 0, K("z"), -12, &v), 0);
    assert_int_equal(v.n, 12);
    db_vec_destroy(&v);
}

/* Score-index edges (db_zedge.c) against a model: random adds (often past
 * either end), removals, pops from both ends, ranges from both ends, ranks,
 * deletes of the whole set, with write-back's drains in between so that
 * removed members' tombstones lie in RocksDB under edges learned before.
 * An edge that hid a live member, or let a dead one through, shows here. */
#define ZM 120
struct zmodel {
    bool in[ZM];
    double sc[ZM];
};

static int zm_cmp_idx(const struct zmodel *z, int a, int b)
{
    if (z->sc[a] != z->sc[b])
        return z->sc[a] < z->sc[b] ? -1 : 1;
    char x[8], y[8];
    snprintf(x, sizeof x, "m%d", a);
    snprintf(y, sizeof y, "m%d", b);
    return strcmp(x, y);
}

/* The model's members in score order into ord; their number. */
static int zm_sorted(const struct zmodel *z, int *ord)
{
    int n = 0;
    for (int i = 0; i < ZM; i++)
        if (z->in[i])
            ord[n++] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && zm_cmp_idx(z, ord[j - 1], ord[j]) > 0; j--) {
            int t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    return n;
}

static void zm_expect(const struct db_vec *v, const struct zmodel *z, const int *ord, int from,
                      int n, int rev, int step)
{
    if ((int)v->n != n)
        fail_msg("step %d: %zu members, model %d", step, v->n, n);
    for (int i = 0; i < n; i++) {
        int at = rev ? from - i : from + i;
        char m[8];
        int mn = snprintf(m, sizeof m, "m%d", ord[at]);
        if (db_vec_len(v, (size_t)i) != (size_t)mn ||
            memcmp(db_vec_ptr(v, (size_t)i), m, (size_t)mn) || v->items[i].score != z->sc[ord[at]])
            fail_msg("step %d: member %d differs from the model's %s", step, i, m);
    }
}

static void zedges_model(struct fx *f)
{
    struct db *d = &f->d;
    struct zmodel z;
    memset(&z, 0, sizeof z);
    int ord[ZM];
    uint64_t rng = 0x9e3779b97f4a7c15ull;
#define RND(n) ((int)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (n))
    struct db_vec v;
    db_vec_init(&v);
    double lo = 0, hi = 0;
    for (int step = 0; step < 4000; step++) {
        int op = RND(100), n = zm_sorted(&z, ord);
        uint64_t got;
        char m[8];
        if (op < 30) { /* ZADD, often past either end */
            int k = 1 + RND(4);
            for (int j = 0; j < k; j++) {
                int i = RND(ZM);
                double s = RND(10) == 0 ? --lo : RND(10) == 0 ? ++hi : (double)(RND(200) - 100) / 2;
                int mn = snprintf(m, sizeof m, "m%d", i);
                struct db_str ms = {m, (size_t)mn};
                assert_int_equal(db_zadd(d, 0, K("q"), &s, &ms, 1, 0, &got, NULL), 0);
                z.in[i] = true;
                z.sc[i] = s;
            }
        } else if (op < 42) { /* ZREM */
            int i = RND(ZM);
            int mn = snprintf(m, sizeof m, "m%d", i);
            struct db_str ms = {m, (size_t)mn};
            assert_int_equal(db_zrem(d, 0, K("q"), &ms, 1, &got), 0);
            assert_int_equal(got, z.in[i]);
            z.in[i] = false;
        } else if (op < 60) { /* ZPOPMIN / ZPOPMAX */
            int max = RND(2), c = 1 + RND(4);
            assert_int_equal(db_zpop(d, 0, K("q"), max, (uint64_t)c, &v), 0);
            int k = c < n ? c : n;
            zm_expect(&v, &z, ord, max ? n - 1 : 0, k, max, step);
            for (int j = 0; j < k; j++)
                z.in[ord[max ? n - 1 - j : j]] = false;
        } else if (op < 68) { /* ranges by rank from either end */
            int rev = RND(2), c = RND(6);
            struct db_zspec sp = {
                .by = DB_ZBY_RANK, .start = 0, .stop = c, .rev = rev, .limit = -1};
            assert_int_equal(db_zrange(d, 0, K("q"), &sp, &v), 0);
            int k = c + 1 < n ? c + 1 : n;
            zm_expect(&v, &z, ord, rev ? n - 1 : 0, k, rev, step);
        } else if (op < 75) { /* any ranks, negative ones too: walked from the nearer end */
            int rev = RND(2), a = RND(2 * n + 6) - n - 3, b = RND(2 * n + 6) - n - 3;
            struct db_zspec sp = {
                .by = DB_ZBY_RANK, .start = a, .stop = b, .rev = rev, .limit = -1};
            assert_int_equal(db_zrange(d, 0, K("q"), &sp, &v), 0);
            if (a < 0)
                a += n;
            if (b < 0)
                b += n;
            if (a < 0)
                a = 0;
            if (b >= n)
                b = n - 1;
            int k = a > b || a >= n ? 0 : b - a + 1;
            zm_expect(&v, &z, ord, rev ? n - 1 - a : a, k, rev, step);
        } else if (op < 87) { /* ranges by score: -inf..x, or x..+inf backwards */
            int rev = RND(2);
            double x = (double)(RND(200) - 100) / 2;
            struct db_zspec sp = {.by = DB_ZBY_SCORE,
                                  .rev = rev,
                                  .limit = -1,
                                  .min = rev ? x : -INFINITY,
                                  .max = rev ? INFINITY : x};
            assert_int_equal(db_zrange(d, 0, K("q"), &sp, &v), 0);
            int k = 0;
            if (!rev)
                while (k < n && z.sc[ord[k]] <= x)
                    k++;
            else
                while (k < n && z.sc[ord[n - 1 - k]] >= x)
                    k++;
            zm_expect(&v, &z, ord, rev ? n - 1 : 0, k, rev, step);
        } else if (op < 93) { /* ZRANK or ZREVRANK, ZCARD */
            int i = RND(ZM), rev = RND(2);
            int mn = snprintf(m, sizeof m, "m%d", i);
            uint64_t r;
            int rc = db_zrank(d, 0, K("q"), m, (size_t)mn, rev, &r);
            if (!z.in[i]) {
                assert_int_equal(rc, KV_ENOTFOUND);
            } else {
                assert_int_equal(rc, 0);
                assert_int_equal(ord[rev ? n - 1 - (int)r : (int)r], i);
            }
            assert_int_equal(db_zcard(d, 0, K("q"), &got), 0);
            assert_int_equal(got, (uint64_t)n);
        } else if (op < 95) { /* the whole set goes; the next is a new version */
            db_del(d, 0, K("q"));
            memset(&z, 0, sizeof z);
        } else if (fx_writeback == 1) { /* tombstones into RocksDB */
            assert_int_equal(stor_drain(f->s), 0);
        }
        db_vec_clear(&v);
    }
#undef RND
    db_vec_destroy(&v);
}

static void test_db_zset_edges_model(void **state)
{
    struct fx *f = *state;
    /* Small sorted sets are walked from db_scache's copies, which learn no
     * edges: once without them, so that every walk is RocksDB's, once with. */
    f->d.scache_max = 0;
    zedges_model(f);
    assert_true(f->d.zedges.n > 0); /* the walks above learned edges */
    db_del(&f->d, 0, K("q"));
    f->d.scache_max = DB_SCACHE_MEMBERS;
    zedges_model(f);
    assert_true(f->d.scache.hits > 0);
}

/* Ranks and ranges at either end of a large set cost a few steps, however
 * long each end's first seek took: the race counts only the steps. */
static void test_db_zset_race_ends(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    enum { N = 2000 };        /* over DB_SCACHE_LARGE: every walk is storage's */
    d->zrix_min = UINT64_MAX; /* the walks, not a rank index (test_db_zrix) */
    static char names[N][8];
    static double sc[N];
    static struct db_str m[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "m%04d", i);
        sc[i] = i;
        m[i] = (struct db_str){names[i], 5};
    }
    uint64_t n;
    assert_int_equal(db_zadd(d, 0, K("z"), sc, m, N, 0, &n, NULL), 0);
    struct {
        int rev;
        int64_t start, stop;
        const char *first;
    } r[] = {{0, 0, 9, "m0000"}, {0, -10, -1, "m1990"}, {1, 0, 9, "m1999"}, {1, -10, -1, "m0009"}};
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
            struct db_vec v;
            db_vec_init(&v);
            struct db_zspec sp = {.by = DB_ZBY_RANK,
                                  .rev = r[i].rev,
                                  .start = r[i].start,
                                  .stop = r[i].stop,
                                  .limit = -1};
            uint64_t m0 = stor_moves();
            assert_int_equal(db_zrange(d, 0, K("z"), &sp, &v), 0);
            uint64_t moves = stor_moves() - m0;
            assert_int_equal(v.n, 10);
            assert_memory_equal(db_vec_ptr(&v, 0), r[i].first, 5);
            db_vec_destroy(&v);
            if (moves > 40)
                fail_msg("range %zu: %llu moves", i, (unsigned long long)moves);
        }
        for (int rev = 0; rev < 2; rev++) {
            const char *mem = rev ? "m1999" : "m0000";
            uint64_t rank, m0 = stor_moves();
            assert_int_equal(db_zrank(d, 0, K("z"), mem, 5, rev, &rank), 0);
            assert_int_equal(rank, 0);
            if (stor_moves() - m0 > 40)
                fail_msg("rank of %s: %llu moves", mem, (unsigned long long)(stor_moves() - m0));
        }
    }
}

/* ZMSCORE of more members than one batch reads, some absent, some
 * repeated, against ZSCORE one by one; then of a missing key and of a key
 * of another type. */
static void zmscore_check(struct db *d)
{
    char names[150][16];
    struct db_str q[150];
    double sc[150];
    fx_names(names, q, 150, "m");
    assert_int_equal(db_zmscore(d, 0, K("bigz"), q, 150, sc), 0);
    int members = 0;
    for (int j = 0; j < 150; j++) {
        double one;
        int rc = db_zscore(d, 0, K("bigz"), q[j].p, q[j].n, &one);
        if ((j * 7 % 100) % 3) {
            assert_int_equal(rc, KV_ENOTFOUND);
            assert_true(isnan(sc[j]));
            continue;
        }
        assert_int_equal(rc, 0);
        assert_true(sc[j] == one && one == (j * 7 % 100) * -1.5);
        members++;
    }
    assert_true(members > 0 && members < 150);
    assert_int_equal(db_zmscore(d, 0, K("nothing"), q, 150, sc), 0);
    for (int j = 0; j < 150; j++)
        assert_true(isnan(sc[j]));
    assert_int_equal(db_zmscore(d, 0, K("str"), q, 150, sc), KV_EWRONGTYPE);
}

static void test_db_zset_zmscore_many(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    for (int i = 0; i < 100; i += 3) {
        char m[16];
        double score = i * -1.5;
        struct db_str mv = {m, (size_t)snprintf(m, sizeof m, "m%d", i)};
        assert_int_equal(db_zadd(d, 0, K("bigz"), &score, &mv, 1, 0, &n, NULL), 0);
    }
    assert_int_equal(db_set(d, 0, K("str"), K("v"), 0, 0, NULL, NULL), 1);
    zmscore_check(d);
    fx_reopen(f);
    zmscore_check(d);
}

/* ZREM of more members than one batch reads, one named twice in one
 * batch and others in two, some absent, on records the flusher has taken
 * from the overlay (with write-back): each present member removed once,
 * with its score record, the rest kept, after a reopen too. */
static void test_db_zset_zrem_many(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n, removed;
    for (int i = 0; i < 200; i += 3) {
        char m[16];
        double sc = i;
        struct db_str mv = {m, (size_t)snprintf(m, sizeof m, "m%d", i)};
        assert_int_equal(db_zadd(d, 0, K("rz"), &sc, &mv, 1, 0, &n, NULL), 0);
    }
    if (stor_can_defer(f->s))
        assert_int_equal(stor_drain(f->s), 0);
    char names[150][16];
    struct db_str q[150];
    fx_names(names, q, 150, "m");
    q[1] = q[0]; /* m0 twice in the first batch; m7 not at all */
    assert_int_equal(db_zrem(d, 0, K("rz"), q, 150, &removed), 0);
    assert_int_equal(removed, 34); /* m0, m3 .. m99 */
    assert_int_equal(db_zrem(d, 0, K("rz"), q, 150, &removed), 0);
    assert_int_equal(removed, 0);
    for (int reopen = 0; reopen < 2; reopen++) {
        if (reopen)
            fx_reopen(f);
        assert_int_equal(db_zcard(d, 0, K("rz"), &n), 0);
        assert_int_equal(n, 33);
        struct db_zspec all = score(-INFINITY, 0, INFINITY, 0, 0);
        struct db_vec v;
        db_vec_init(&v);
        assert_int_equal(db_zrange(d, 0, K("rz"), &all, &v), 0);
        assert_int_equal(v.n, 33); /* no score record left behind */
        for (size_t j = 0; j < v.n; j++)
            assert_true(v.items[j].score >= 100);
        db_vec_destroy(&v);
    }
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_zset_add_flags),
        T(test_db_zset_range_rank),
        T(test_db_zset_range_score),
        T(test_db_zset_range_lex),
        T(test_db_zset_rank_rem_pop),
        T(test_db_zset_store_ops),
        T(test_db_zset_scan),
        T(test_db_zset_pick),
        T(test_db_zset_edges_model),
        cmocka_unit_test_setup_teardown(test_db_zset_edges_model, fx_setup_wb, fx_teardown),
        T(test_db_zset_race_ends),
        T(test_db_zset_zmscore_many),
        T(test_db_zset_zrem_many),
        cmocka_unit_test_setup_teardown(test_db_zset_zrem_many, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_zset_zmscore_many, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_zset_race_ends, fx_setup_wb_overlay, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
