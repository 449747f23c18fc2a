/*
 * test_db_hash_set — hashes and sets, in both codings (COUNTED: exact
 * replies; BLIND: no read before HSET/SADD, sizes by scan).
 */
#include "db_int.h"
#include "enc.h"
#include "fixture.h"

static void test_db_hash_basic(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str fv[] = {S("f1"), S("v1"), S("f2"), S("v2"), S("f1"), S("v1b")};
    assert_int_equal(db_hset(d, 0, K("h"), fv, 3, 0, &n), 0);
    assert_int_equal(n, 2); /* a field repeated in one command counts once */
    char *v;
    size_t vn;
    assert_int_equal(db_hget(d, 0, K("h"), K("f1"), &v, &vn), 0);
    assert_int_equal(vn, 3);
    assert_memory_equal(v, "v1b", 3); /* the last value wins */
    free(v);
    assert_int_equal(db_hget(d, 0, K("h"), K("zz"), &v, &vn), ENC_ENOTFOUND);
    assert_int_equal(db_hget(d, 0, K("nokey"), K("f1"), &v, &vn), ENC_ENOTFOUND);
    assert_int_equal(db_hlen(d, 0, K("h"), &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_hexists(d, 0, K("h"), K("f2")), 1);
    assert_int_equal(db_hexists(d, 0, K("h"), K("f3")), 0);
    assert_int_equal(db_hstrlen(d, 0, K("h"), K("f2"), &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_hstrlen(d, 0, K("h"), K("nope"), &n), 0);
    assert_int_equal(n, 0);

    struct db_str upd[] = {S("f2"), S("new"), S("f3"), S("v3")};
    assert_int_equal(db_hset(d, 0, K("h"), upd, 2, 0, &n), 0);
    assert_int_equal(n, 1);
    struct db_str nx[] = {S("f3"), S("ignored")};
    assert_int_equal(db_hset(d, 0, K("h"), nx, 1, 1, &n), 0);
    assert_int_equal(n, 0);

    struct db_vec all;
    db_vec_init(&all);
    assert_int_equal(db_hgetall(d, 0, K("h"), DB_H_BOTH, &all), 0);
    assert_int_equal(all.n, 6);
    assert_item(&all, 0, "f1");
    assert_item(&all, 1, "v1b");
    assert_item(&all, 3, "new");
    assert_item(&all, 5, "v3");
    db_vec_clear(&all);
    assert_int_equal(db_hgetall(d, 0, K("h"), DB_H_VALUES, &all), 0);
    assert_int_equal(all.n, 3);
    db_vec_clear(&all);
    struct db_str q[] = {S("f3"), S("none"), S("f1")};
    assert_int_equal(db_hmget(d, 0, K("h"), q, 3, &all), 0);
    assert_int_equal(all.n, 3);
    assert_item(&all, 0, "v3");
    assert_true(db_vec_len(&all, 1) == DB_NIL);
    db_vec_clear(&all);
    assert_int_equal(db_hmget(d, 0, K("nokey"), q, 3, &all), 0);
    assert_true(all.n == 3 && db_vec_len(&all, 0) == DB_NIL);
    db_vec_destroy(&all);

    struct db_str del[] = {S("f1"), S("f1"), S("zz")};
    assert_int_equal(db_hdel(d, 0, K("h"), del, 3, &n), 0);
    assert_int_equal(n, 1);
    struct db_str rest[] = {S("f2"), S("f3")};
    assert_int_equal(db_hdel(d, 0, K("h"), rest, 2, &n), 0);
    assert_int_equal(n, 2);
    /* The last field gone, the key is gone. */
    assert_int_equal(db_exists(d, 0, K("h")), 0);
    assert_int_equal(db_hdel(d, 0, K("h"), rest, 2, &n), 0);
    assert_int_equal(n, 0);
}

static void test_db_hash_incr(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    int64_t i;
    uint64_t n;
    assert_int_equal(db_hincrby(d, 0, K("h"), K("n"), 5, &i), 0);
    assert_int_equal(i, 5);
    assert_int_equal(db_hincrby(d, 0, K("h"), K("n"), -7, &i), 0);
    assert_int_equal(i, -2);
    assert_int_equal(db_hlen(d, 0, K("h"), &n), 0);
    assert_int_equal(n, 1);
    struct db_str fv[] = {S("s"), S("x1"), S("max"), S("9223372036854775807")};
    assert_int_equal(db_hset(d, 0, K("h"), fv, 2, 0, &n), 0);
    assert_int_equal(db_hincrby(d, 0, K("h"), K("s"), 1, &i), ENC_EHASHINT);
    assert_int_equal(db_hincrby(d, 0, K("h"), K("max"), 1, &i), ENC_EOVERFLOW);
    char out[DB_LDSTR_MAX];
    size_t on;
    assert_int_equal(db_hincrbyfloat(d, 0, K("h"), K("fl"), 10.5L, out, &on), 0);
    assert_string_equal(out, "10.5");
    assert_int_equal(db_hincrbyfloat(d, 0, K("h"), K("fl"), 0.1L, out, &on), 0);
    assert_string_equal(out, "10.6");
    assert_int_equal(db_hincrbyfloat(d, 0, K("h"), K("s"), 1, out, &on), ENC_EHASHFLOAT);
    assert_int_equal(db_hlen(d, 0, K("h"), &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(db_set(d, 0, K("str"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_hincrby(d, 0, K("str"), K("n"), 1, &i), ENC_EWRONGTYPE);
}

static void test_db_hash_randfield_scan(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str fv[] = {S("a"), S("1"), S("b"), S("2"), S("c"), S("3")};
    assert_int_equal(db_hset(d, 0, K("h"), fv, 3, 0, &n), 0);
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_hrandfield(d, 0, K("h"), 10, 0, &v), 0);
    assert_int_equal(v.n, 3); /* positive count: distinct, at most all */
    db_vec_clear(&v);
    assert_int_equal(db_hrandfield(d, 0, K("h"), 2, 1, &v), 0);
    assert_int_equal(v.n, 4);
    assert_true(db_vec_len(&v, 0) == 1 && db_vec_len(&v, 1) == 1);
    /* Field and value stay paired. */
    assert_int_equal(db_vec_ptr(&v, 0)[0] - 'a', db_vec_ptr(&v, 1)[0] - '1');
    assert_true(memcmp(db_vec_ptr(&v, 0), db_vec_ptr(&v, 2), 1) != 0);
    db_vec_clear(&v);
    assert_int_equal(db_hrandfield(d, 0, K("h"), -7, 0, &v), 0);
    assert_int_equal(v.n, 7); /* negative count: may repeat */
    db_vec_clear(&v);
    assert_int_equal(db_hrandfield(d, 0, K("none"), 5, 0, &v), 0);
    assert_int_equal(v.n, 0);

    char *next;
    size_t nextn;
    assert_int_equal(db_cscan(d, 0, K("h"), ENC_TYPE_HASH, NULL, 0, NULL, 0, 2, &v, &next, &nextn), 0);
    assert_int_equal(v.n, 4);
    assert_non_null(next);
    char *cur = next;
    assert_int_equal(db_cscan(d, 0, K("h"), ENC_TYPE_HASH, cur, nextn, NULL, 0, 2, &v, &next,
                              &nextn), 0);
    free(cur);
    assert_null(next);
    assert_int_equal(v.n, 6);
    assert_item(&v, 4, "c");
    assert_item(&v, 5, "3");
    db_vec_clear(&v);
    assert_int_equal(db_cscan(d, 0, K("h"), ENC_TYPE_HASH, NULL, 0, K("b*"), 10, &v, &next,
                              &nextn), 0);
    assert_int_equal(v.n, 2);
    assert_int_equal(db_cscan(d, 0, K("h"), ENC_TYPE_SET, NULL, 0, NULL, 0, 10, &v, &next,
                              &nextn), ENC_EWRONGTYPE);
    db_vec_destroy(&v);
}

static void test_db_hash_blind(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str fv[] = {S("f1"), S("v1"), S("f2"), S("v2"), S("f1"), S("v")};
    assert_int_equal(db_hset(d, 0, K("h"), fv, 3, 0, &n), 0);
    assert_int_equal(n, 2); /* deduplicated within the command */
    struct db_str again[] = {S("f1"), S("v3")};
    assert_int_equal(db_hset(d, 0, K("h"), again, 1, 0, &n), 0);
    assert_int_equal(n, 1); /* BLIND: an overwrite is reported as new */
    assert_int_equal(d->last_commit_ops, 1); /* and only the field was written */
    assert_int_equal(db_hlen(d, 0, K("h"), &n), 0);
    assert_int_equal(n, 2); /* counted by scan: exact */
    struct db_keyinfo ki;
    assert_int_equal(db_keyinfo(d, 0, K("h"), &ki), 0);
    assert_int_equal(ki.coding, ENC_CODING_BLIND);
    assert_int_equal(ki.size, 2);
    /* HSETNX still reads, and is exact. */
    struct db_str nx[] = {S("f2"), S("no")};
    assert_int_equal(db_hset(d, 0, K("h"), nx, 1, 1, &n), 0);
    assert_int_equal(n, 0);
    int64_t i;
    assert_int_equal(db_hincrby(d, 0, K("h"), K("c"), 3, &i), 0);
    assert_int_equal(db_hlen(d, 0, K("h"), &n), 0);
    assert_int_equal(n, 3);
    struct db_str del[] = {S("f1"), S("f2"), S("c"), S("none")};
    assert_int_equal(db_hdel(d, 0, K("h"), del, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(db_exists(d, 0, K("h")), 0); /* an emptied blind hash vanishes too */
}

static void test_db_set_basic(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str m[] = {S("c"), S("a"), S("b"), S("a")};
    assert_int_equal(db_sadd(d, 0, K("s"), m, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(db_sadd(d, 0, K("s"), m, 2, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(db_scard(d, 0, K("s"), &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(db_sismember(d, 0, K("s"), K("a")), 1);
    assert_int_equal(db_sismember(d, 0, K("s"), K("z")), 0);
    assert_int_equal(db_sismember(d, 0, K("none"), K("a")), 0);
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_smembers(d, 0, K("s"), &v), 0);
    assert_int_equal(v.n, 3);
    assert_item(&v, 0, "a");
    assert_item(&v, 2, "c");
    db_vec_clear(&v);
    assert_int_equal(db_srandmember(d, 0, K("s"), -10, &v), 0);
    assert_int_equal(v.n, 10);
    db_vec_clear(&v);
    assert_int_equal(db_spop(d, 0, K("s"), 2, &v), 0);
    assert_int_equal(v.n, 2);
    assert_int_equal(db_scard(d, 0, K("s"), &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_sismember(d, 0, K("s"), db_vec_ptr(&v, 0), db_vec_len(&v, 0)), 0);
    db_vec_clear(&v);
    assert_int_equal(db_spop(d, 0, K("s"), 5, &v), 0);
    assert_int_equal(v.n, 1);
    assert_int_equal(db_exists(d, 0, K("s")), 0);
    db_vec_clear(&v);
    assert_int_equal(db_spop(d, 0, K("s"), 1, &v), ENC_ENOTFOUND);
    db_vec_destroy(&v);
    struct db_str r[] = {S("x"), S("y")};
    assert_int_equal(db_sadd(d, 0, K("s2"), r, 2, &n), 0);
    assert_int_equal(db_srem(d, 0, K("s2"), r, 1, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_srem(d, 0, K("s2"), r, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_exists(d, 0, K("s2")), 0);
}

static void test_db_set_smove(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str m[] = {S("a"), S("b")};
    assert_int_equal(db_sadd(d, 0, K("src"), m, 2, &n), 0);
    assert_int_equal(db_smove(d, 0, K("src"), K("dst"), K("a")), 1);
    assert_int_equal(db_smove(d, 0, K("src"), K("dst"), K("a")), 0);
    assert_int_equal(db_sismember(d, 0, K("dst"), K("a")), 1);
    assert_int_equal(db_smove(d, 0, K("src"), K("src"), K("b")), 1);
    assert_int_equal(db_smove(d, 0, K("src"), K("dst"), K("b")), 1);
    assert_int_equal(db_exists(d, 0, K("src")), 0);
    assert_int_equal(db_scard(d, 0, K("dst"), &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_set(d, 0, K("str"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_smove(d, 0, K("dst"), K("str"), K("a")), ENC_EWRONGTYPE);
    assert_int_equal(db_smove(d, 0, K("none"), K("str"), K("a")), 0);
    assert_int_equal(db_smove(d, 0, K("str"), K("dst"), K("a")), ENC_EWRONGTYPE);
}

static void test_db_set_algebra(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str a[] = {S("1"), S("2"), S("3"), S("4")}, b[] = {S("3"), S("4"), S("5")},
                  c[] = {S("4"), S("6")};
    assert_int_equal(db_sadd(d, 0, K("a"), a, 4, &n), 0);
    assert_int_equal(db_sadd(d, 0, K("b"), b, 3, &n), 0);
    assert_int_equal(db_sadd(d, 0, K("c"), c, 2, &n), 0);
    struct db_vec v;
    db_vec_init(&v);
    struct db_str ab[] = {S("a"), S("b")}, abc[] = {S("a"), S("b"), S("c")},
                  amiss[] = {S("a"), S("missing")};
    assert_int_equal(db_setop(d, 0, DB_SINTER, ab, 2, 0, &v), 0);
    assert_int_equal(v.n, 2);
    assert_item(&v, 0, "3");
    assert_item(&v, 1, "4");
    db_vec_clear(&v);
    assert_int_equal(db_setop(d, 0, DB_SINTER, abc, 3, 0, &v), 0);
    assert_int_equal(v.n, 1);
    db_vec_clear(&v);
    assert_int_equal(db_setop(d, 0, DB_SINTER, ab, 2, 1, &v), 0); /* SINTERCARD LIMIT 1 */
    assert_int_equal(v.n, 1);
    db_vec_clear(&v);
    assert_int_equal(db_setop(d, 0, DB_SINTER, amiss, 2, 0, &v), 0);
    assert_int_equal(v.n, 0);
    assert_int_equal(db_setop(d, 0, DB_SUNION, abc, 3, 0, &v), 0);
    assert_int_equal(v.n, 6);
    assert_item(&v, 5, "6");
    db_vec_clear(&v);
    assert_int_equal(db_setop(d, 0, DB_SDIFF, abc, 3, 0, &v), 0);
    assert_int_equal(v.n, 2);
    assert_item(&v, 0, "1");
    assert_item(&v, 1, "2");
    db_vec_clear(&v);
    assert_int_equal(db_setop(d, 0, DB_SDIFF, amiss, 2, 0, &v), 0);
    assert_int_equal(v.n, 4);
    db_vec_clear(&v);
    struct db_str missa[] = {S("missing"), S("a")};
    assert_int_equal(db_setop(d, 0, DB_SDIFF, missa, 2, 0, &v), 0);
    assert_int_equal(v.n, 0);
    /* Every existing key must be a set, even after an absent one. */
    assert_int_equal(db_set(d, 0, K("str"), K("v"), 0, 0, NULL, NULL), 1);
    struct db_str bad[] = {S("missing"), S("str")};
    assert_int_equal(db_setop(d, 0, DB_SINTER, bad, 2, 0, &v), ENC_EWRONGTYPE);
    /* STORE variants replace the target, whatever it held. */
    assert_int_equal(db_setop_store(d, 0, DB_SUNION, K("str"), ab, 2, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(db_scard(d, 0, K("str"), &n), 0);
    assert_int_equal(n, 5);
    /* The destination may be a source. */
    assert_int_equal(db_setop_store(d, 0, DB_SINTER, K("a"), ab, 2, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_sismember(d, 0, K("a"), K("1")), 0);
    assert_int_equal(db_setop_store(d, 0, DB_SINTER, K("a"), amiss, 2, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(db_exists(d, 0, K("a")), 0);
    db_vec_destroy(&v);
}

static void test_db_set_blind(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str m[] = {S("a"), S("b"), S("a")};
    assert_int_equal(db_sadd(d, 0, K("s"), m, 3, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_sadd(d, 0, K("s"), m, 1, &n), 0);
    assert_int_equal(d->last_commit_ops, 1);
    assert_int_equal(db_scard(d, 0, K("s"), &n), 0);
    assert_int_equal(n, 2);
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_spop(d, 0, K("s"), 1, &v), 0);
    assert_int_equal(db_scard(d, 0, K("s"), &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_srem(d, 0, K("s"), m, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_exists(d, 0, K("s")), 0);
    db_vec_destroy(&v);
}

/* What db_prefetch1f asks the cache to load: the last (cf, key) given. */
static int pf_cf = -1;
static char pf_key[256];
static size_t pf_kn;
static uint64_t pf_capture(void *arg, int cf, const char *k, size_t kn, size_t *ckn)
{
    (void)arg;
    pf_cf = cf;
    pf_kn = kn < sizeof pf_key ? kn : sizeof pf_key;
    memcpy(pf_key, k, pf_kn);
    *ckn = kn;
    return 0;
}

/* The hint for HSET key field ...: the field's own sub record, under the
 * version of the hash that was last loaded, and only for that key. */
static void test_db_prefetch_field(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str fv[] = {S("f1"), S("v1")};
    assert_int_equal(db_hset(d, 0, K("h"), fv, 1, 0, &n), 0);
    assert_int_equal(db_hset(d, 0, K("h"), fv, 1, 0, &n), 0); /* loads the hash */
    d->cache_prefetch1 = pf_capture;
    struct db_pf pf;
    db_prefetch1f(d, 0, K("h"), K("f1"), &pf);
    assert_true(pf.set && pf.sub_set);
    assert_int_equal(pf_cf, STOR_CF_SUB);
    struct db_kc kc;
    assert_int_equal(kc_load(d, &kc, 0, K("h")), 0);
    char want[64];
    size_t wn = enc_sub_prefix(want, 0, kc.slot, K("h"), kc.m.version);
    memcpy(want + wn, "f1", 2);
    wn += 2;
    kc_free(&kc);
    assert_int_equal(pf_kn, wn);
    assert_memory_equal(pf_key, want, wn);
    /* Another key, or another db: its meta record only. */
    db_prefetch1f(d, 0, K("other"), K("f1"), &pf);
    assert_true(pf.set && !pf.sub_set);
    assert_int_equal(pf_cf, STOR_CF_META);
    db_prefetch1f(d, 1, K("h"), K("f1"), &pf);
    assert_false(pf.sub_set);
    d->cache_prefetch1 = NULL;
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
#define TB(fn) cmocka_unit_test_setup_teardown(fn, fx_setup_blind, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_hash_basic),  T(test_db_hash_incr), T(test_db_hash_randfield_scan),
        TB(test_db_hash_blind), T(test_db_set_basic), T(test_db_set_smove),
        T(test_db_set_algebra), TB(test_db_set_blind), T(test_db_prefetch_field),
        /* The counted-coding tests hold for blind keys too, but for replies
         * documented as approximate, which these tests do not exercise. */
        TB(test_db_hash_incr),  TB(test_db_set_smove), TB(test_db_set_algebra),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
