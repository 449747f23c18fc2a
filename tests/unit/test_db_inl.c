/*
 * test_db_inl — small collections inline in their meta record
 * (storage/db_inl.c): one record while under the thresholds, records from
 * the write that crosses one on, never back; the same answers in both
 * forms, across restarts and kill -9; and the compaction filter for both.
 */
#include "db_int.h"
#include "enc.h"

#include "fixture.h"

static const struct db_opts small = {.hash_max_entries = 8,
                                     .hash_max_value = 16,
                                     .set_max_intset = 8,
                                     .zset_max_entries = 8,
                                     .zset_max_value = 16,
                                     .list_max_size = 4};

static int setup(void **state)
{
    return fx_setup_opts(state, &small);
}

static int setup_wb(void **state)
{
    fx_writeback = 1;
    return fx_setup_opts(state, &small);
}

static int coding(struct db *d, const char *key, size_t klen)
{
    struct db_keyinfo ki;
    assert_int_equal(db_keyinfo(d, 0, key, klen, &ki), 0);
    return ki.coding;
}

static void hset1(struct db *d, const char *key, size_t klen, const char *f, const char *v)
{
    struct db_str fv[2] = {{f, strlen(f)}, {v, strlen(v)}};
    uint64_t added;
    assert_int_equal(db_hset(d, 0, key, klen, fv, 1, 0, &added), 0);
}

/* HGETALL of key as "f=v," pairs. */
static void assert_hash(struct db *d, const char *key, size_t klen, const char *want)
{
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_hgetall(d, 0, key, klen, DB_H_BOTH, &v), 0);
    char got[4096];
    size_t u = 0;
    for (size_t i = 0; i + 1 < v.n; i += 2)
        u += (size_t)snprintf(got + u, sizeof got - u, "%.*s=%.*s,", (int)db_vec_len(&v, i),
                              db_vec_ptr(&v, i), (int)db_vec_len(&v, i + 1), db_vec_ptr(&v, i + 1));
    got[u] = '\0';
    assert_string_equal(got, want);
    db_vec_destroy(&v);
}

/* A hash lives in one record up to 8 fields; the 9th turns it into
 * records, which stay when it shrinks. */
static void test_db_inl_hash_grows(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char want[512] = "", fn[8], vn[8];
    for (int i = 1; i <= 8; i++) {
        snprintf(fn, sizeof fn, "f%d", i);
        snprintf(vn, sizeof vn, "v%d", i);
        hset1(d, K("h"), fn, vn);
        assert_int_equal(d->last_commit_ops, 1); /* the meta record alone */
        strcat(want, fn), strcat(want, "="), strcat(want, vn), strcat(want, ",");
        assert_int_equal(coding(d, K("h")), ENC_CODING_INLINE);
    }
    assert_hash(d, K("h"), want);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 0);
    fx_reopen(f);
    d = &f->d;
    assert_hash(d, K("h"), want);
    char *v;
    size_t n;
    assert_int_equal(db_hget(d, 0, K("h"), K("f3"), &v, &n), 0);
    assert_int_equal(n, 2);
    free(v);
    assert_int_equal(db_hget(d, 0, K("h"), K("f9"), &v, &n), KV_ENOTFOUND);
    hset1(d, K("h"), "f9", "v9");
    assert_int_equal(coding(d, K("h")), ENC_CODING_COUNTED);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 9);
    strcat(want, "f9=v9,");
    assert_hash(d, K("h"), want);
    uint64_t removed, len;
    struct db_str all[9];
    for (int i = 0; i < 8; i++) {
        static char b[8][8];
        snprintf(b[i], 8, "f%d", i + 1);
        all[i] = (struct db_str){b[i], strlen(b[i])};
    }
    assert_int_equal(db_hdel(d, 0, K("h"), all, 8, &removed), 0);
    assert_int_equal(removed, 8);
    assert_int_equal(coding(d, K("h")), ENC_CODING_COUNTED); /* no way back */
    assert_int_equal(db_hlen(d, 0, K("h"), &len), 0);
    assert_int_equal(len, 1);
    /* a value longer than 16 bytes converts at once */
    hset1(d, K("h2"), "a", "1");
    assert_int_equal(coding(d, K("h2")), ENC_CODING_INLINE);
    hset1(d, K("h2"), "b", "12345678901234567");
    assert_int_equal(coding(d, K("h2")), ENC_CODING_COUNTED);
    assert_hash(d, K("h2"), "a=1,b=12345678901234567,");
}

/* Sets: integers only; sorted sets: scores from the one record. */
static void test_db_inl_set_zset(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t added, n;
    struct db_str ints[3] = {S("3"), S("-1"), S("20")};
    assert_int_equal(db_sadd(d, 0, K("s"), ints, 3, &added), 0);
    assert_int_equal(coding(d, K("s")), ENC_CODING_INLINE);
    assert_int_equal(db_sismember(d, 0, K("s"), K("20")), 1);
    assert_int_equal(db_sismember(d, 0, K("s"), K("2")), 0);
    struct db_str word = S("x");
    assert_int_equal(db_sadd(d, 0, K("s"), &word, 1, &added), 0);
    assert_int_equal(coding(d, K("s")), ENC_CODING_COUNTED);
    assert_int_equal(db_scard(d, 0, K("s"), &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 4);

    double sc[3] = {3, 1, 2};
    struct db_str m[3] = {S("c"), S("a"), S("b")};
    assert_int_equal(db_zadd(d, 0, K("z"), sc, m, 3, 0, &added, NULL), 0);
    assert_int_equal(coding(d, K("z")), ENC_CODING_INLINE);
    assert_int_equal(fx_count_cf(f, STOR_CF_SCORE), 0);
    double s;
    assert_int_equal(db_zscore(d, 0, K("z"), K("b"), &s), 0);
    assert_true(s == 2);
    uint64_t r;
    assert_int_equal(db_zrank(d, 0, K("z"), K("c"), 0, &r), 0);
    assert_int_equal(r, 2);
    struct db_str lm = S("mmmmmmmmmmmmmmmmm"); /* 17 bytes */
    double ls = 0;
    assert_int_equal(db_zadd(d, 0, K("z"), &ls, &lm, 1, 0, &added, NULL), 0);
    assert_int_equal(coding(d, K("z")), ENC_CODING_COUNTED);
    assert_int_equal(fx_count_cf(f, STOR_CF_SCORE), 4);
    assert_int_equal(db_zrank(d, 0, K("z"), K("c"), 0, &r), 0);
    assert_int_equal(r, 3);
}

/* "a,b,c," from LRANGE key 0 -1. */
static void assert_list(struct db *d, const char *key, size_t klen, const char *want)
{
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_lrange(d, 0, key, klen, 0, -1, &v), 0);
    char got[256];
    size_t u = 0;
    for (size_t i = 0; i < v.n; i++)
        u += (size_t)snprintf(got + u, sizeof got - u, "%.*s,", (int)db_vec_len(&v, i),
                              db_vec_ptr(&v, i));
    got[u] = '\0';
    assert_string_equal(got, want);
    db_vec_destroy(&v);
}

/* A list stays inline up to 4 elements here, pops from both ends read
 * the one record, and the 5th element turns it into records. */
static void test_db_inl_list(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t len;
    struct db_str ab[2] = {S("a"), S("b")}, c = S("c"), z = S("z");
    assert_int_equal(db_push(d, 0, K("l"), 0, ab, 2, 0, &len), 0);
    assert_int_equal(db_push(d, 0, K("l"), 1, &z, 1, 0, &len), 0);
    assert_int_equal(db_push(d, 0, K("l"), 0, &c, 1, 0, &len), 0);
    assert_int_equal(d->last_commit_ops, 1);
    assert_int_equal(len, 4);
    assert_int_equal(coding(d, K("l")), ENC_CODING_INLINE);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 0);
    assert_list(d, K("l"), "z,a,b,c,");
    struct db_vec out;
    db_vec_init(&out);
    assert_int_equal(db_pop(d, 0, K("l"), 1, 1, &out), 0);
    assert_int_equal(db_pop(d, 0, K("l"), 0, 1, &out), 0);
    assert_int_equal(out.n, 2);
    assert_memory_equal(db_vec_ptr(&out, 0), "z", 1);
    assert_memory_equal(db_vec_ptr(&out, 1), "c", 1);
    db_vec_destroy(&out);
    assert_list(d, K("l"), "a,b,");
    fx_reopen(f);
    d = &f->d;
    assert_list(d, K("l"), "a,b,");
    struct db_str more[3] = {S("x"), S("y"), S("w")};
    assert_int_equal(db_push(d, 0, K("l"), 0, more, 3, 0, &len), 0);
    assert_int_equal(coding(d, K("l")), ENC_CODING_COUNTED);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 5);
    assert_list(d, K("l"), "a,b,x,y,w,");
}

/* Deleted inline collections leave nothing; a record of an inline
 * collection's version (none is ever written) goes at compaction, and a
 * converted collection's records go when it is deleted. */
static void test_db_inl_gc(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    hset1(d, K("small"), "a", "1");
    for (int i = 0; i < 12; i++) {
        char fn[16];
        snprintf(fn, sizeof fn, "f%d", i);
        hset1(d, K("big"), fn, "v");
    }
    assert_int_equal(coding(d, K("big")), ENC_CODING_COUNTED);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 12);
    /* a stray sub record under small's version */
    struct db_kc kc;
    assert_int_equal(kc_load(d, &kc, 0, K("small")), 0);
    size_t kn;
    const char *k = kc_sub(&kc, "stray", 5, &kn);
    stor_batch_put(&d->b, STOR_CF_SUB, k, kn, "x", 1);
    assert_int_equal(stor_commit(d->s, &d->b), 0);
    stor_batch_clear(&d->b);
    kc_free(&kc);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 13);
    assert_int_equal(stor_compact(f->s, STOR_CF_SUB), 0);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 12);
    assert_hash(d, K("small"), "a=1,");
    assert_int_equal(db_del(d, 0, K("big")), 1);
    assert_int_equal(db_del(d, 0, K("small")), 1);
    assert_int_equal(stor_compact(f->s, STOR_CF_SUB), 0);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 0);
}

/* kill -9 right after writes that convert: the journal's replay gives
 * each one whole, records and meta record together. */
static void test_db_inl_crash(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    for (int round = 0; round < 3; round++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", round);
        for (int i = 0; i < 9 + round; i++) {
            char fn[16];
            snprintf(fn, sizeof fn, "f%d", i);
            hset1(d, key, strlen(key), fn, "v");
        }
        double sc[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        struct db_str m[9] = {S("a"), S("b"), S("c"), S("d"), S("e"),
                              S("f"), S("g"), S("h"), S("i")};
        uint64_t added;
        key[0] = 'z';
        assert_int_equal(db_zadd(d, 0, key, strlen(key), sc, m, 9, 0, &added, NULL), 0);
        struct db_opts o = f->d.o;
        assert_int_equal(stor_sync(f->s), 0); /* all acknowledged */
        db_destroy(&f->d);
        fx_abandon(f->s);
        memset(&f->d, 0, sizeof f->d);
        f->s = NULL;
        assert_int_equal(fx_open_in(f, &o), 0);
        d = &f->d;
        for (int r = 0; r <= round; r++) {
            char hk[16], zk[16];
            snprintf(hk, sizeof hk, "k%d", r);
            snprintf(zk, sizeof zk, "z%d", r);
            uint64_t n;
            assert_int_equal(db_hlen(d, 0, hk, strlen(hk), &n), 0);
            assert_int_equal(n, 9 + (uint64_t)r);
            assert_int_equal(coding(d, hk, strlen(hk)), ENC_CODING_COUNTED);
            assert_int_equal(db_zcard(d, 0, zk, strlen(zk), &n), 0);
            assert_int_equal(n, 9);
            uint64_t rank;
            assert_int_equal(db_zrank(d, 0, zk, strlen(zk), K("i"), 1, &rank), 0);
            assert_int_equal(rank, 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_db_inl_hash_grows, setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_inl_set_zset, setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_inl_list, setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_inl_gc, setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_inl_crash, setup_wb, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
