/*
 * test_db_list — lists: pushes and pops at both ends, ranges, index/set,
 * LREM in both directions, LINSERT on either side, LTRIM, LPOS, LMOVE, and
 * SORT's STORE (db_lstore).
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
    assert_int_equal(db_pop(d, 0, K("l"), 0, 1, &v), ENC_ENOTFOUND);
    assert_int_equal(db_set(d, 0, K("s"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_push(d, 0, K("s"), 0, cd, 1, 0, &n), ENC_EWRONGTYPE);
    assert_int_equal(db_pop(d, 0, K("s"), 0, 1, &v), ENC_EWRONGTYPE);
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
    } c[] = {{0, -1, 5, "a"}, {1, 2, 2, "b"}, {-2, -1, 2, "d"}, {-100, 0, 1, "a"},
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
    assert_int_equal(db_lindex(d, 0, K("l"), 5, &e, &en), ENC_ENOTFOUND);
    assert_int_equal(db_lindex(d, 0, K("l"), -6, &e, &en), ENC_ENOTFOUND);
    assert_int_equal(db_lset(d, 0, K("l"), 1, K("B")), 0);
    assert_int_equal(db_lset(d, 0, K("l"), -1, K("E")), 0);
    assert_list(d, "aBcdE");
    assert_int_equal(db_lset(d, 0, K("l"), 5, K("x")), ENC_ERANGE);
    assert_int_equal(db_lset(d, 0, K("none"), 0, K("x")), ENC_ENOTFOUND);
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
    assert_int_equal(db_lmove(d, 0, K("none"), K("dst"), 1, 0, &e, &en), ENC_ENOTFOUND);
    assert_int_equal(db_set(d, 0, K("s"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_lmove(d, 0, K("l"), K("s"), 1, 0, &e, &en), ENC_EWRONGTYPE);
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

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_list_push_pop), T(test_db_list_range_index_set), T(test_db_list_lrem),
        T(test_db_list_linsert),  T(test_db_list_ltrim),           T(test_db_list_lpos),
        T(test_db_list_lmove),    T(test_db_list_lstore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
