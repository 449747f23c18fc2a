/*
 * test_db_list — lists: pushes and pops at both ends, ranges, index/set,
 * LREM in both directions, LINSERT on either side, LTRIM, LPOS, LMOVE, and
 * SORT's STORE (db_lstore), and the window of a list kept for LRANGE.
 */
#include "fixture.h"

/* Asserts the whole list "l" equals want, one character per element. */
static void assert_list(struct db *d, const char *want)
{
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_lrange(d, 0, K("l"), 0, -1, &v), 0);
    assert_int_equal(v.n, strlen(want));
    for (size_t i = 0; i < v.n; i++) {
        assert_int_equal(db_vec_len(&v, i), 1);
        assert_int_equal(db_vec_ptr(&v, i)[0], want[i]);
    }
    uint64_t n;
    assert_int_equal(db_llen(d, 0, K("l"), &n), 0);
    assert_int_equal(n, strlen(want));
    db_vec_destroy(&v);
}

/* Replaces list "l" with the characters of s, pushed right. */
static void make_list(struct db *d, const char *s)
{
    db_del(d, 0, K("l"));
    uint64_t n;
    for (const char *p = s; *p; p++) {
        struct db_str e = {p, 1};
        assert_int_equal(db_push(d, 0, K("l"), 0, &e, 1, 0, &n), 0);
    }
}

static void test_db_list_push_pop(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str ab[] = {S("a"), S("b")}, cd[] = {S("c"), S("d")};
    assert_int_equal(db_push(d, 0, K("l"), 1, ab, 2, 0, &n), 0); /* LPUSH a b → b a */
    assert_int_equal(n, 2);
    assert_int_equal(db_push(d, 0, K("l"), 0, cd, 2, 0, &n), 0); /* RPUSH c d */
    assert_int_equal(n, 4);
    assert_list(d, "bacd");
    assert_int_equal(db_push(d, 0, K("none"), 0, cd, 2, 1, &n), 0); /* RPUSHX */
    assert_int_equal(n, 0);
    assert_int_equal(db_exists(d, 0, K("none")), 0);
    assert_int_equal(db_push(d, 0, K("l"), 1, cd, 1, 1, &n), 0); /* LPUSHX */
    assert_int_equal(n, 5);
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_pop(d, 0, K("l"), 1, 2, &v), 0);
    assert_int_equal(v.n, 2);
    assert_item(&v, 0, "c");
    assert_item(&v, 1, "b");
    db_vec_clear(&v);
    assert_int_equal(db_pop(d, 0, K("l"), 0, 1, &v), 0);
    assert_item(&v, 0, "d");
    db_vec_clear(&v);
    assert_list(d, "ac");
    assert_int_equal(db_pop(d, 0, K("l"), 0, 10, &v), 0);
    assert_int_equal(v.n, 2);
    assert_int_equal(db_exists(d, 0, K("l")), 0);
    db_vec_clear(&v);
    assert_int_equal(db_pop(d, 0, K("l"), 0, 1, &v), KV_ENOTFOUND);
    assert_int_equal(db_set(d, 0, K("s"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_push(d, 0, K("s"), 0, cd, 1, 0, &n), KV_EWRONGTYPE);
    assert_int_equal(db_pop(d, 0, K("s"), 0, 1, &v), KV_EWRONGTYPE);
    db_vec_destroy(&v);
}

static void test_db_list_range_index_set(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    make_list(d, "abcde");
    struct db_vec v;
    db_vec_init(&v);
    struct {
        int64_t s, e;
        size_t n;
        const char *first;
    } c[] = {{0, -1, 5, "a"},  {1, 2, 2, "b"},  {-2, -1, 2, "d"}, {-100, 0, 1, "a"},
             {3, 100, 2, "d"}, {3, 1, 0, NULL}, {5, 6, 0, NULL}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        assert_int_equal(db_lrange(d, 0, K("l"), c[i].s, c[i].e, &v), 0);
        assert_int_equal(v.n, c[i].n);
        if (c[i].first)
            assert_memory_equal(db_vec_ptr(&v, 0), c[i].first, 1);
        db_vec_clear(&v);
    }
    assert_int_equal(db_lrange(d, 0, K("none"), 0, -1, &v), 0);
    assert_int_equal(v.n, 0);
    db_vec_destroy(&v);
    char *e;
    size_t en;
    assert_int_equal(db_lindex(d, 0, K("l"), -1, &e, &en), 0);
    assert_memory_equal(e, "e", 1);
    free(e);
    assert_int_equal(db_lindex(d, 0, K("l"), 5, &e, &en), KV_ENOTFOUND);
    assert_int_equal(db_lindex(d, 0, K("l"), -6, &e, &en), KV_ENOTFOUND);
    assert_int_equal(db_lset(d, 0, K("l"), 1, K("B")), 0);
    assert_int_equal(db_lset(d, 0, K("l"), -1, K("E")), 0);
    assert_list(d, "aBcdE");
    assert_int_equal(db_lset(d, 0, K("l"), 5, K("x")), KV_ERANGE);
    assert_int_equal(db_lset(d, 0, K("none"), 0, K("x")), KV_ENOTFOUND);
}

static void test_db_list_lrem(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    make_list(d, "axbxcx");
    assert_int_equal(db_lrem(d, 0, K("l"), 2, K("x"), &n), 0);
    assert_int_equal(n, 2);
    assert_list(d, "abcx");
    make_list(d, "axbxcx");
    assert_int_equal(db_lrem(d, 0, K("l"), -2, K("x"), &n), 0); /* from the tail */
    assert_int_equal(n, 2);
    assert_list(d, "axbc");
    make_list(d, "xaxx");
    assert_int_equal(db_lrem(d, 0, K("l"), 0, K("x"), &n), 0);
    assert_int_equal(n, 3);
    assert_list(d, "a");
    assert_int_equal(db_lrem(d, 0, K("l"), 0, K("q"), &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(db_lrem(d, 0, K("l"), 1, K("a"), &n), 0);
    assert_int_equal(db_exists(d, 0, K("l")), 0);
    assert_int_equal(db_lrem(d, 0, K("l"), 1, K("a"), &n), 0);
    assert_int_equal(n, 0);
    /* After a removal the list still pushes and pops at both ends. */
    make_list(d, "abc");
    assert_int_equal(db_lrem(d, 0, K("l"), 1, K("b"), &n), 0);
    struct db_str z = S("z");
    assert_int_equal(db_push(d, 0, K("l"), 0, &z, 1, 0, &n), 0);
    assert_int_equal(db_push(d, 0, K("l"), 1, &z, 1, 0, &n), 0);
    assert_list(d, "zacz");
}

static void test_db_list_linsert(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    int64_t len;
    make_list(d, "abcde");
    assert_int_equal(db_linsert(d, 0, K("l"), 1, K("b"), K("X"), &len), 0); /* near the head */
    assert_int_equal(len, 6);
    assert_list(d, "aXbcde");
    assert_int_equal(db_linsert(d, 0, K("l"), 0, K("d"), K("Y"), &len), 0); /* near the tail */
    assert_list(d, "aXbcdYe");
    assert_int_equal(db_linsert(d, 0, K("l"), 1, K("a"), K("0"), &len), 0);
    assert_int_equal(db_linsert(d, 0, K("l"), 0, K("e"), K("9"), &len), 0);
    assert_list(d, "0aXbcdYe9");
    assert_int_equal(db_linsert(d, 0, K("l"), 0, K("nope"), K("9"), &len), 0);
    assert_int_equal(len, -1);
    assert_int_equal(db_linsert(d, 0, K("none"), 0, K("a"), K("9"), &len), 0);
    assert_int_equal(len, 0);
    char *e;
    size_t en;
    assert_int_equal(db_lindex(d, 0, K("l"), 2, &e, &en), 0);
    assert_memory_equal(e, "X", 1);
    free(e);
}

static void test_db_list_ltrim(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    make_list(d, "abcdef");
    assert_int_equal(db_ltrim(d, 0, K("l"), 1, -2), 1);
    assert_list(d, "bcde");
    assert_int_equal(db_ltrim(d, 0, K("l"), -3, 100), 1);
    assert_list(d, "cde");
    assert_int_equal(db_ltrim(d, 0, K("l"), 2, 1), 1); /* empty range: the key goes */
    assert_int_equal(db_exists(d, 0, K("l")), 0);
    assert_int_equal(db_ltrim(d, 0, K("l"), 0, 1), 0);
}

static void test_db_list_lpos(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    make_list(d, "abcabc");
    int64_t *pos;
    size_t np;
    assert_int_equal(db_lpos(d, 0, K("l"), K("c"), 1, 0, 0, &pos, &np), 0);
    assert_int_equal(np, 2);
    assert_true(pos[0] == 2 && pos[1] == 5);
    free(pos);
    assert_int_equal(db_lpos(d, 0, K("l"), K("c"), 2, 1, 0, &pos, &np), 0);
    assert_true(np == 1 && pos[0] == 5);
    free(pos);
    assert_int_equal(db_lpos(d, 0, K("l"), K("c"), -1, 0, 0, &pos, &np), 0);
    assert_true(np == 2 && pos[0] == 5 && pos[1] == 2);
    free(pos);
    assert_int_equal(db_lpos(d, 0, K("l"), K("c"), 1, 0, 3, &pos, &np), 0); /* MAXLEN 3 */
    assert_true(np == 1 && pos[0] == 2);
    free(pos);
    assert_int_equal(db_lpos(d, 0, K("l"), K("c"), 3, 0, 0, &pos, &np), 0);
    assert_int_equal(np, 0);
    assert_null(pos);
    assert_int_equal(db_lpos(d, 0, K("none"), K("c"), 1, 0, 0, &pos, &np), 0);
    assert_int_equal(np, 0);
}

static void test_db_list_lmove(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    make_list(d, "abc");
    char *e;
    size_t en;
    /* Rotation onto itself. */
    assert_int_equal(db_lmove(d, 0, K("l"), K("l"), 0, 1, &e, &en), 0);
    assert_memory_equal(e, "c", 1);
    free(e);
    assert_list(d, "cab");
    assert_int_equal(db_lmove(d, 0, K("l"), K("dst"), 1, 0, &e, &en), 0);
    free(e);
    assert_list(d, "ab");
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_lrange(d, 0, K("dst"), 0, -1, &v), 0);
    assert_int_equal(v.n, 1);
    assert_item(&v, 0, "c");
    db_vec_destroy(&v);
    assert_int_equal(db_lmove(d, 0, K("none"), K("dst"), 1, 0, &e, &en), KV_ENOTFOUND);
    assert_int_equal(db_set(d, 0, K("s"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_lmove(d, 0, K("l"), K("s"), 1, 0, &e, &en), KV_EWRONGTYPE);
    assert_list(d, "ab"); /* nothing moved */
    /* A one-element list moved onto itself survives, expiry and all (the
     * differential test found it losing the TTL). */
    make_list(d, "z");
    assert_int_equal(db_expire(d, 0, K("l"), stor_now_ms() + 100000, 0), 1);
    assert_int_equal(db_lmove(d, 0, K("l"), K("l"), 1, 0, &e, &en), 0);
    free(e);
    assert_list(d, "z");
    uint64_t exp;
    assert_int_equal(db_expiretime(d, 0, K("l"), &exp), 0);
    assert_true(exp > 0);
}

static void test_db_list_lstore(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    /* Over a hash with an expiry: a plain list, no TTL, no old fields. */
    uint64_t n;
    struct db_str fv[] = {S("f"), S("v")};
    assert_int_equal(db_hset(d, 0, K("l"), fv, 1, 0, &n), 0);
    assert_int_equal(db_expire(d, 0, K("l"), stor_now_ms() + 100000, 0), 1);
    struct db_vec v;
    db_vec_init(&v);
    db_vec_push(&v, "x", 1, 0);
    db_vec_push_nil(&v);
    db_vec_push(&v, "y", 1, 0);
    assert_int_equal(db_lstore(d, 0, K("l"), &v), 0);
    struct db_vec got;
    db_vec_init(&got);
    assert_int_equal(db_lrange(d, 0, K("l"), 0, -1, &got), 0);
    assert_int_equal(got.n, 3);
    assert_item(&got, 0, "x");
    assert_item(&got, 1, ""); /* a nil is stored as "" */
    assert_item(&got, 2, "y");
    db_vec_destroy(&got);
    uint64_t exp;
    assert_int_equal(db_expiretime(d, 0, K("l"), &exp), 0);
    assert_int_equal(exp, 0);
    /* Pushes go on from the stored positions. */
    struct db_str z = S("z");
    assert_int_equal(db_push(d, 0, K("l"), 1, &z, 1, 0, &n), 0);
    assert_int_equal(n, 4);
    /* Nothing to store deletes the destination; an absent one stays so. */
    db_vec_clear(&v);
    assert_int_equal(db_lstore(d, 0, K("l"), &v), 0);
    assert_int_equal(db_exists(d, 0, K("l")), 0);
    assert_int_equal(db_lstore(d, 0, K("none"), &v), 0);
    assert_int_equal(db_exists(d, 0, K("none")), 0);
    db_vec_destroy(&v);
}

/* The window of a list kept for LRANGE (db_scache.c): random writes of
 * every kind that changes a list, each followed by ranges read near either
 * end, the middle and the whole, checked against a model. Run with the
 * cache on and off, plain and with write-back. */
#define WM 600 /* the model's room */
struct wmodel {
    char e[WM][8];
    int n;
};

static void wm_check(struct db *d, const char *key, const struct wmodel *m, int64_t s, int64_t t)
{
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_lrange(d, 0, key, strlen(key), s, t, &v), 0);
    int64_t a = s < 0 ? s + m->n : s, b = t < 0 ? t + m->n : t;
    if (a < 0)
        a = 0;
    if (b >= m->n)
        b = m->n - 1;
    size_t want = a > b ? 0 : (size_t)(b - a + 1);
    if (v.n != want)
        fail_msg("%s LRANGE %lld %lld: %zu elements, want %zu", key, (long long)s, (long long)t,
                 v.n, want);
    for (size_t i = 0; i < v.n; i++)
        if (db_vec_len(&v, i) != strlen(m->e[a + (int64_t)i]) ||
            memcmp(db_vec_ptr(&v, i), m->e[a + (int64_t)i], db_vec_len(&v, i)))
            fail_msg("%s LRANGE %lld %lld: element %zu is %.*s, want %s", key, (long long)s,
                     (long long)t, i, (int)db_vec_len(&v, i), db_vec_ptr(&v, i),
                     m->e[a + (int64_t)i]);
    db_vec_destroy(&v);
}

static void wm_insert(struct wmodel *m, int at, const char *e)
{
    memmove(m->e[at + 1], m->e[at], (size_t)(m->n - at) * sizeof m->e[0]);
    snprintf(m->e[at], sizeof m->e[0], "%s", e);
    m->n++;
}

static void wm_remove(struct wmodel *m, int at)
{
    memmove(m->e[at], m->e[at + 1], (size_t)(m->n - at - 1) * sizeof m->e[0]);
    m->n--;
}

static void test_db_list_window(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    static struct wmodel m, o; /* "l", and "o" it is renamed to and back */
    m.n = o.n = 0;
    srand(4001);
    uint64_t hits = d->scache.hits, n;
    int serial = 0, sizes = 0;
    for (int step = 0; step < 3000; step++) {
        char e[8];
        snprintf(e, sizeof e, "v%d", serial++ % 10000);
        struct db_str es = {e, strlen(e)};
        char *got;
        size_t gn;
        int op = rand() % 16;
        if (m.n > WM - 10)
            op = 4; /* pop */
        switch (op) {
        case 0:
        case 1:
        case 2: /* LPUSH, RPUSH of 1 to 8, more while it is short */
            for (int c = m.n < 300 ? 1 + rand() % 8 : 1; c > 0; c--) {
                snprintf(e, sizeof e, "v%d", serial++ % 10000);
                es.n = strlen(e);
                assert_int_equal(db_push(d, 0, K("l"), op == 0, &es, 1, 0, &n), 0);
                wm_insert(&m, op == 0 ? 0 : m.n, e);
            }
            break;
        case 3:
        case 4: { /* LPOP, RPOP of up to 3 */
            struct db_vec v;
            db_vec_init(&v);
            int left = op == 3, c = 1 + rand() % 3;
            int rc = db_pop(d, 0, K("l"), left, (uint64_t)c, &v);
            assert_int_equal(rc, m.n ? 0 : KV_ENOTFOUND);
            for (int i = 0; i < c && m.n; i++)
                wm_remove(&m, left ? 0 : m.n - 1);
            db_vec_destroy(&v);
            break;
        }
        case 5: /* LSET */
            if (m.n) {
                int i = rand() % m.n;
                assert_int_equal(db_lset(d, 0, K("l"), i, e, strlen(e)), 0);
                snprintf(m.e[i], sizeof m.e[0], "%s", e);
            }
            break;
        case 6: /* LINSERT before a pivot near an end */
            if (m.n) {
                int i = rand() % 2 ? rand() % (m.n < 5 ? m.n : 5)
                                   : m.n - 1 - rand() % (m.n < 5 ? m.n : 5);
                char pv[8];
                memcpy(pv, m.e[i], sizeof pv);
                int64_t len;
                assert_int_equal(db_linsert(d, 0, K("l"), 1, pv, strlen(pv), e, strlen(e), &len),
                                 0);
                int first = 0;
                while (strcmp(m.e[first], pv))
                    first++;
                wm_insert(&m, first, e);
            }
            break;
        case 7: /* LREM of the first element's value */
            if (m.n) {
                char pv[8];
                memcpy(pv, m.e[0], sizeof pv);
                uint64_t removed;
                assert_int_equal(db_lrem(d, 0, K("l"), 0, pv, strlen(pv), &removed), 0);
                for (int i = m.n - 1; i >= 0; i--)
                    if (!strcmp(m.e[i], pv))
                        wm_remove(&m, i);
            }
            break;
        case 8: /* LTRIM a little off either end */
            if (m.n > 4) {
                int a = rand() % 3, b = m.n - 1 - rand() % 3;
                assert_int_equal(db_ltrim(d, 0, K("l"), a, b), 1);
                m.n = b + 1;
                for (int i = 0; i < a; i++)
                    wm_remove(&m, 0);
            }
            break;
        case 9: /* LMOVE onto itself (a rotation) */
            if (m.n) {
                assert_int_equal(db_lmove(d, 0, K("l"), K("l"), 0, 1, &got, &gn), 0);
                free(got);
                char last[8];
                memcpy(last, m.e[m.n - 1], sizeof last);
                m.n--;
                wm_insert(&m, 0, last);
            }
            break;
        case 10: /* RENAME away and back, or DEL now and then */
            if (m.n && rand() % 64 == 0) {
                assert_int_equal(db_del(d, 0, K("l")), 1);
                m.n = 0;
            } else if (m.n) {
                assert_int_equal(db_rename(d, 0, K("l"), K("o"), 0), 1);
                o = m;
                wm_check(d, "o", &o, 0, -1);
                m.n = 0;
                wm_check(d, "l", &m, 0, 9);
                assert_int_equal(db_rename(d, 0, K("o"), K("l"), 0), 1);
                m = o;
            }
            break;
        default: /* reads only */
            break;
        }
        int64_t k = 1 + rand() % 120;
        wm_check(d, "l", &m, 0, k - 1);          /* the first k */
        wm_check(d, "l", &m, k / 2, k - 1);      /* inside that window */
        wm_check(d, "l", &m, -k, -1);            /* the last k */
        wm_check(d, "l", &m, -k / 3 - 1, -2);    /* inside that one */
        wm_check(d, "l", &m, rand() % 8, k / 2); /* near the head */
        wm_check(d, "l", &m, 0, k - 1);          /* again */
        if (step % 50 == 0) {
            uint64_t len;
            assert_int_equal(db_llen(d, 0, K("l"), &len), 0);
            assert_int_equal(len, m.n);
            sizes += m.n;
            wm_check(d, "l", &m, 0, -1);
            wm_check(d, "l", &m, m.n / 2, m.n / 2 + 3);
        }
    }
    assert_true(sizes / 60 > 100); /* lists longer than the windows' slack */
    if (d->scache_max)
        assert_true(d->scache.hits - hits > 1000);
    else
        assert_int_equal(d->scache.hits, hits);

    /* Writes inside a window kept: each seen by the next read of it. */
    db_del(d, 0, K("l"));
    m.n = 0;
    for (int i = 0; i < 300; i++) {
        char e[8];
        snprintf(e, sizeof e, "w%d", i);
        struct db_str es = {e, strlen(e)};
        assert_int_equal(db_push(d, 0, K("l"), 0, &es, 1, 0, &n), 0);
        wm_insert(&m, m.n, e);
    }
    wm_check(d, "l", &m, 0, 99);
    assert_int_equal(db_lset(d, 0, K("l"), 5, K("X")), 0);
    snprintf(m.e[5], sizeof m.e[0], "X");
    wm_check(d, "l", &m, 0, 99);
    wm_check(d, "l", &m, -100, -1);
    assert_int_equal(db_lset(d, 0, K("l"), -3, K("Y")), 0);
    snprintf(m.e[m.n - 3], sizeof m.e[0], "Y");
    wm_check(d, "l", &m, -100, -1);
    int64_t len;
    assert_int_equal(db_linsert(d, 0, K("l"), 0, K("w298"), K("Z"), &len), 0);
    wm_insert(&m, 299, "Z");
    wm_check(d, "l", &m, -100, -1);
    uint64_t removed;
    assert_int_equal(db_lrem(d, 0, K("l"), 1, K("w296"), &removed), 0);
    assert_int_equal(removed, 1);
    wm_remove(&m, 296);
    wm_check(d, "l", &m, -100, -1);

    /* Large values: no window is kept, and each read is right. */
    static char big[2000];
    memset(big, 'b', sizeof big);
    struct db_str bs = {big, sizeof big};
    db_del(d, 0, K("l"));
    for (int i = 0; i < 40; i++)
        assert_int_equal(db_push(d, 0, K("l"), 0, &bs, 1, 0, &n), 0);
    uint64_t fills = d->scache.fills;
    hits = d->scache.hits;
    for (int i = 0; i < 2; i++) {
        struct db_vec v;
        db_vec_init(&v);
        assert_int_equal(db_lrange(d, 0, K("l"), 0, -1, &v), 0);
        assert_int_equal(v.n, 40);
        assert_int_equal(db_vec_len(&v, 39), sizeof big);
        db_vec_destroy(&v);
    }
    assert_int_equal(d->scache.fills, fills);
    assert_int_equal(d->scache.hits, hits);
}

/* Windows of many lists together stay within DB_SCACHE_TOTAL: a fill
 * past it drops others first; every read is still right. */
static void test_db_list_window_budget(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    enum { LISTS = 400, ELEMS = 700 };
    struct db_vec v;
    db_vec_init(&v);
    char e[64];
    for (int i = 0; i < ELEMS; i++) {
        snprintf(e, sizeof e, "%060d", i);
        db_vec_push(&v, e, 60, 0);
    }
    char key[16];
    for (int l = 0; l < LISTS; l++) {
        snprintf(key, sizeof key, "L%d", l);
        assert_int_equal(db_lstore(d, 0, key, strlen(key), &v), 0);
    }
    size_t most = 0;
    for (int round = 0; round < 2; round++)
        for (int l = 0; l < LISTS; l++) {
            snprintf(key, sizeof key, "L%d", l);
            struct db_vec got;
            db_vec_init(&got);
            assert_int_equal(db_lrange(d, 0, key, strlen(key), 0, -1, &got), 0);
            assert_int_equal(got.n, ELEMS);
            snprintf(e, sizeof e, "%060d", ELEMS - 1);
            assert_memory_equal(db_vec_ptr(&got, ELEMS - 1), e, 60);
            db_vec_destroy(&got);
            assert_true(d->scache.bytes <= DB_SCACHE_TOTAL);
            if (d->scache.bytes > most)
                most = d->scache.bytes;
        }
    assert_true(most > DB_SCACHE_TOTAL / 2); /* the windows were kept, up to the limit */
    assert_true(d->scache.fills >= 2 * LISTS - 1);
    db_vec_destroy(&v);
}

static int setup_nocache(void **state)
{
    int rc = fx_setup(state);
    ((struct fx *)*state)->d.scache_max = 0;
    return rc;
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_list_push_pop),
        T(test_db_list_range_index_set),
        T(test_db_list_lrem),
        T(test_db_list_linsert),
        T(test_db_list_ltrim),
        T(test_db_list_lpos),
        T(test_db_list_lmove),
        T(test_db_list_lstore),
        T(test_db_list_window),
        T(test_db_list_window_budget),
        cmocka_unit_test_setup_teardown(test_db_list_window, setup_nocache, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_list_window, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_list_window, fx_setup_wb_overlay, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
