/*
 * test_db_gc — O(1) deletes and the compaction filters that reclaim what
 * they leave: deleted, expired, overwritten and re-created collections.
 */
#include "fixture.h"

static uint64_t count_cf(struct fx *f, int cf)
{
    uint64_t n;
    assert_int_equal(stor_count(f->s, cf, NULL, 0, NULL, 0, &n), 0);
    return n;
}

/* Fills hash `key` with n fields f<i> = v<i>, 1000 per record set. */
static void fill_hash(struct db *d, const char *key, size_t klen, int n)
{
    struct db_str fv[2000];
    static char buf[2000][16];
    for (int base = 0; base < n; base += 1000) {
        int m = n - base < 1000 ? n - base : 1000;
        for (int i = 0; i < m; i++) {
            int l = snprintf(buf[2 * i], 16, "f%d", base + i);
            fv[2 * i] = (struct db_str){buf[2 * i], (size_t)l};
            l = snprintf(buf[2 * i + 1], 16, "v%d", base + i);
            fv[2 * i + 1] = (struct db_str){buf[2 * i + 1], (size_t)l};
        }
        uint64_t added;
        assert_int_equal(db_hset(d, 0, key, klen, fv, (size_t)m, 0, &added), 0);
        assert_int_equal(added, (uint64_t)m);
    }
}

static void test_db_gc_big_hash_delete(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    fill_hash(d, K("big"), 200000);
    uint64_t n;
    assert_int_equal(db_hlen(d, 0, K("big"), &n), 0);
    assert_int_equal(n, 200000);
    assert_int_equal(count_cf(f, STOR_CF_SUB), 200000);

    /* The delete is one record, whatever the size. */
    assert_int_equal(db_del(d, 0, K("big")), 1);
    assert_int_equal(d->last_commit_ops, 1);
    assert_int_equal(db_exists(d, 0, K("big")), 0);
    char *v;
    size_t vn;
    assert_int_equal(db_hget(d, 0, K("big"), K("f7"), &v, &vn), ENC_ENOTFOUND);

    /* A full compaction runs the filter over every sub record: none survive. */
    assert_int_equal(stor_compact(f->s, STOR_CF_SUB), 0);
    assert_int_equal(count_cf(f, STOR_CF_SUB), 0);
}

static void test_db_gc_keeps_live_and_new_versions(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    fill_hash(d, K("live"), 1000);
    fill_hash(d, K("recreated"), 1000);
    assert_int_equal(db_del(d, 0, K("recreated")), 1);
    fill_hash(d, K("recreated"), 10); /* same key, new version */
    assert_int_equal(stor_compact(f->s, STOR_CF_SUB), 0);
    assert_int_equal(count_cf(f, STOR_CF_SUB), 1010);
    uint64_t n;
    assert_int_equal(db_hlen(d, 0, K("recreated"), &n), 0);
    assert_int_equal(n, 10);
    assert_int_equal(db_hlen(d, 0, K("live"), &n), 0);
    assert_int_equal(n, 1000);
    char *v;
    size_t vn;
    assert_int_equal(db_hget(d, 0, K("live"), K("f999"), &v, &vn), 0);
    free(v);
}

static void test_db_gc_expired_and_overwritten(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000000;
    fill_hash(d, K("exp"), 500);
    assert_int_equal(db_expire(d, 0, K("exp"), 1001000, 0), 1);
    fill_hash(d, K("over"), 500);
    assert_int_equal(db_set(d, 0, K("over"), K("now a string"), 0, 0, NULL, NULL), 1);
    struct db_str m[] = {S("a"), S("b")};
    double sc[] = {1, 2};
    uint64_t n;
    assert_int_equal(db_zadd(d, 0, K("z"), sc, m, 2, 0, &n, NULL), 0);
    assert_int_equal(db_expire(d, 0, K("z"), 1001000, 0), 1);
    assert_int_equal(db_set(d, 0, K("s"), K("v"), 1001000, 0, NULL, NULL), 1);

    /* Before the expiry everything is live and kept. */
    for (int cf = 0; cf < STOR_CF_COUNT; cf++)
        assert_int_equal(stor_compact(f->s, cf), 0);
    assert_int_equal(count_cf(f, STOR_CF_SUB), 500 + 2);
    assert_int_equal(count_cf(f, STOR_CF_SCORE), 2);
    assert_int_equal(count_cf(f, STOR_CF_META), 4);

    /* After it, reads see nothing at once. */
    stor_clock_override = 1001000;
    assert_int_equal(db_hlen(d, 0, K("exp"), &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(db_zcard(d, 0, K("z"), &n), 0);
    assert_int_equal(n, 0);
    /* Compaction does not judge expiry (RocksDB may lag a PERSIST under
     * write-back): the records stay until active expiry deletes the keys. */
    for (int cf = 0; cf < STOR_CF_COUNT; cf++)
        assert_int_equal(stor_compact(f->s, cf), 0);
    assert_int_equal(count_cf(f, STOR_CF_SUB), 500 + 2);
    uint64_t reaped, ttls;
    char *next;
    size_t nextn;
    assert_int_equal(db_reap(d, 0, NULL, 0, 1000, &reaped, &ttls, &next, &nextn), 0);
    assert_int_equal(reaped, 3); /* exp, z, s */
    assert_int_equal(ttls, 3);
    assert_true(d->ttl_puts >= 3); /* the expiries set above */
    assert_null(next);
    for (int cf = 0; cf < STOR_CF_COUNT; cf++)
        assert_int_equal(stor_compact(f->s, cf), 0);
    assert_int_equal(count_cf(f, STOR_CF_SUB), 0);
    assert_int_equal(count_cf(f, STOR_CF_SCORE), 0);
    assert_int_equal(count_cf(f, STOR_CF_META), 1); /* only "over", a live string */
}

static void test_db_gc_reads_never_see_expired(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 5000;
    uint64_t n;
    struct db_str fv[] = {S("f"), S("v")}, m[] = {S("m")};
    double sc = 1;
    assert_int_equal(db_hset(d, 0, K("h"), fv, 1, 0, &n), 0);
    assert_int_equal(db_sadd(d, 0, K("s"), m, 1, &n), 0);
    assert_int_equal(db_zadd(d, 0, K("z"), &sc, m, 1, 0, &n, NULL), 0);
    assert_int_equal(db_push(d, 0, K("l"), 0, m, 1, 0, &n), 0);
    const char *keys[] = {"h", "s", "z", "l"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(db_expire(d, 0, keys[i], 1, 6000, 0), 1);
    stor_clock_override = 6000;
    char *v;
    size_t vn;
    double got;
    struct db_vec vec;
    db_vec_init(&vec);
    assert_int_equal(db_hget(d, 0, K("h"), K("f"), &v, &vn), ENC_ENOTFOUND);
    assert_int_equal(db_sismember(d, 0, K("s"), K("m")), 0);
    assert_int_equal(db_zscore(d, 0, K("z"), K("m"), &got), ENC_ENOTFOUND);
    assert_int_equal(db_lrange(d, 0, K("l"), 0, -1, &vec), 0);
    assert_int_equal(vec.n, 0);
    assert_int_equal(db_dbsize(d, 0, &n), 0);
    assert_int_equal(n, 0);
    char *next;
    size_t nextn;
    assert_int_equal(db_scan(d, 0, NULL, 0, NULL, 0, 0, 100, &vec, &next, &nextn), 0);
    assert_int_equal(vec.n, 0);
    /* Writing to an expired key starts a fresh, empty one. */
    assert_int_equal(db_push(d, 0, K("l"), 0, m, 1, 0, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_sadd(d, 0, K("s"), m, 1, &n), 0);
    assert_int_equal(n, 1);
    db_vec_destroy(&vec);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_gc_big_hash_delete),
        T(test_db_gc_keeps_live_and_new_versions),
        T(test_db_gc_expired_and_overwritten),
        T(test_db_gc_reads_never_see_expired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
