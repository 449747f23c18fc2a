/*
 * test_db_gc — O(1) deletes and the compaction filters that reclaim what
 * they leave: deleted, expired, overwritten and re-created collections.
 */
#include "db_int.h"
#include "enc.h"

#include "fixture.h"

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
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 200000);

    /* The delete is one record, whatever the size. */
    assert_int_equal(db_del(d, 0, K("big")), 1);
    assert_int_equal(d->last_commit_ops, 1);
    assert_int_equal(db_exists(d, 0, K("big")), 0);
    char *v;
    size_t vn;
    assert_int_equal(db_hget(d, 0, K("big"), K("f7"), &v, &vn), KV_ENOTFOUND);

    /* A full compaction runs the filter over every sub record: none survive. */
    assert_int_equal(stor_compact(f->s, STOR_CF_SUB), 0);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 0);
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
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 1010);
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
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 500 + 2);
    assert_int_equal(fx_count_cf(f, STOR_CF_SCORE), 2);
    assert_int_equal(fx_count_cf(f, STOR_CF_META), 4);

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
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 500 + 2);
    uint64_t reaped;
    bool more;
    assert_int_equal(db_reap(d, 1000, &reaped, &more), 0);
    assert_int_equal(reaped, 3); /* exp, z, s */
    assert_false(more);
    for (int cf = 0; cf < STOR_CF_COUNT; cf++)
        assert_int_equal(stor_compact(f->s, cf), 0);
    assert_int_equal(fx_count_cf(f, STOR_CF_SUB), 0);
    assert_int_equal(fx_count_cf(f, STOR_CF_SCORE), 0);
    assert_int_equal(fx_count_cf(f, STOR_CF_META), 1);   /* only "over", a live string */
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1); /* only the marker */
}

/* A change to a key whose meta record was read (EXPIRE, PERSIST, DEL)
 * moves or drops its index entry at once. A plain SET does not read, so it
 * leaves a stale entry: active expiry deletes only keys whose expiry is the
 * entry's, and drops every due entry. */
static void test_db_gc_expiry_index_stale_entries(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    const char *keys[] = {"moved",     "persisted", "deleted", "overwritten",
                          "reexpired", "due",       "due3"};
    for (int i = 0; i < 7; i++)
        assert_int_equal(
            db_set(d, i == 6 ? 3 : 0, keys[i], strlen(keys[i]), K("v"), 2000, 0, NULL, NULL), 1);
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1 + 7);
    assert_int_equal(db_expire(d, 0, K("moved"), 5000, 0), 1);
    assert_int_equal(db_persist(d, 0, K("persisted")), 1);
    assert_int_equal(db_del(d, 0, K("deleted")), 1);
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1 + 5); /* moved, dropped, dropped */
    assert_int_equal(db_set(d, 0, K("overwritten"), K("w"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("reexpired"), K("w"), 5000, 0, NULL, NULL), 1);
    /* marker; moved@5000; overwritten@2000 and reexpired@2000, stale;
     * reexpired@5000; due; due3 */
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1 + 6);

    uint64_t reaped;
    bool more;
    assert_int_equal(db_reap(d, 1000, &reaped, &more), 0);
    assert_int_equal(reaped, 0); /* nothing due yet */
    assert_int_equal(d->expiry_next, 2000);

    stor_clock_override = 3000;
    assert_int_equal(db_reap(d, 1000, &reaped, &more), 0);
    assert_int_equal(reaped, 2); /* "due" in db 0, "due3" in db 3 */
    assert_false(more);
    assert_int_equal(d->expiry_next, 5000);
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1 + 2); /* the entries at 5000 */
    assert_int_equal(db_exists(d, 0, K("persisted")), 1);
    assert_int_equal(db_exists(d, 0, K("overwritten")), 1);
    assert_int_equal(db_exists(d, 0, K("reexpired")), 1);
    assert_int_equal(db_exists(d, 0, K("moved")), 1);
    uint64_t metas;
    assert_int_equal(stor_count(f->s, STOR_CF_META, NULL, 0, NULL, 0, &metas), 0);
    assert_int_equal(metas, 4);

    stor_clock_override = 5000;
    assert_int_equal(db_reap(d, 1000, &reaped, &more), 0);
    assert_int_equal(reaped, 2);
    assert_int_equal(d->expiry_next, UINT64_MAX);
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1);
}

/* A rewrite with the same expiry adds no entry; the budget bounds one call;
 * FLUSHDB takes its db's entries. */
static void test_db_gc_expiry_index_budget_and_flush(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    struct db_str fv[] = {S("f"), S("v")}, fv2[] = {S("g"), S("v")};
    uint64_t n;
    assert_int_equal(db_hset(d, 0, K("h"), fv, 1, 0, &n), 0);
    assert_int_equal(db_expire(d, 0, K("h"), 2000, 0), 1);
    assert_int_equal(db_hset(d, 0, K("h"), fv2, 1, 0, &n), 0);
    assert_int_equal(d->last_commit_ops, 2); /* the field and the meta record */
    for (int i = 0; i < 250; i++) {
        char k[16];
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), 2000 + (uint64_t)i, 0, NULL, NULL), 1);
    }
    assert_int_equal(db_set(d, 1, K("other"), K("v"), 9000, 0, NULL, NULL), 1);
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1 + 1 + 250 + 1);

    stor_clock_override = 3000;
    uint64_t reaped, total = 0;
    bool more;
    int calls = 0;
    do {
        assert_int_equal(db_reap(d, 100, &reaped, &more), 0);
        assert_true(reaped <= 100);
        total += reaped;
        calls++;
    } while (more);
    assert_int_equal(total, 251);
    assert_int_equal(calls, 3);
    assert_int_equal(d->expiry_next, 9000);

    assert_int_equal(db_set(d, 0, K("stays"), K("v"), 9000, 0, NULL, NULL), 1);
    assert_int_equal(db_flushdb(d, 1), 0);
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1 + 1); /* the marker, "stays" */
    assert_int_equal(db_flushall(d), 0);
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1); /* the marker survives */
}

/* Active expiry reads each due key's record before deleting it: with
 * write-back, on keys the flusher has taken from the overlay, the key
 * counts take that read (db.priors), leaving nothing to resolve later, and
 * agree with a scan. */
static void test_db_gc_reap_counts(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    for (int i = 0; i < 250; i++) {
        char k[16];
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), i % 5 ? 2000 : 9000, 0, NULL, NULL),
                         1);
    }
    if (stor_can_defer(f->s))
        assert_int_equal(stor_drain(f->s), 0);
    stor_clock_override = 3000;
    uint64_t reaped, total = 0;
    bool more;
    do {
        assert_int_equal(db_reap(d, 64, &reaped, &more), 0);
        total += reaped;
    } while (more);
    assert_int_equal(total, 200);
    assert_int_equal(d->defer_out[0], 0);
    fx_assert_keys(d, 0, 50, 50);
}

/* A data folder from before the index (no marker) gets it built at open. */
/* Active expiry starts each db at its floor, the last index entry it
 * deleted, instead of stepping again over the tombstones of every entry
 * it deleted before (until compaction drops them): reaping n keys in calls
 * of a fixed budget cost O(n^2) steps. A write of an entry at or below a
 * floor (a clock set back) lowers it. */
static void test_db_gc_expiry_floor(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    for (int i = 0; i < 3000; i++) {
        char k[16];
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), 2000 + (uint64_t)i / 3, 0, NULL, NULL),
                         1);
    }
    for (int i = 0; i < 100; i++) {
        char k[16];
        int kn = snprintf(k, sizeof k, "o%d", i);
        assert_int_equal(db_set(d, 2, k, (size_t)kn, K("v"), 2000 + (uint64_t)i, 0, NULL, NULL), 1);
    }
    stor_clock_override = 5000;
    uint64_t reaped, total = 0;
    bool more;
    int calls = 0;
    stor_skips_watch(true);
    uint64_t skips = stor_skips();
    do {
        assert_int_equal(db_reap(d, 100, &reaped, &more), 0);
        total += reaped;
        calls++;
    } while (more);
    skips = stor_skips() - skips;
    stor_skips_watch(false);
    assert_int_equal(total, 3100);
    assert_int_equal(calls, 31);
    /* From the start of each db: about 100 × 31²/2 = 48,000. */
    assert_true(skips < 500);
    fx_assert_keys(d, 0, 0, 0);

    /* The clock set back: a key due before the floor is still reaped. */
    stor_clock_override = 1500;
    assert_int_equal(db_set(d, 0, K("late"), K("v"), 1600, 0, NULL, NULL), 1);
    stor_clock_override = 5000;
    assert_int_equal(db_reap(d, 100, &reaped, &more), 0);
    assert_int_equal(reaped, 1);
    /* And one due in the floor's own millisecond whose entry sorts below
     * the floor's (a key of a lower slot than o99's, the last deleted). */
    uint64_t at = d->efloor[2].exp;
    char low[16];
    int lown = 0;
    for (int i = 0; lown == 0; i++) {
        int n = snprintf(low, sizeof low, "a%d", i);
        if (enc_slot(low, (size_t)n) < enc_slot("o99", 3))
            lown = n;
    }
    stor_clock_override = at - 10;
    assert_int_equal(db_set(d, 2, low, (size_t)lown, K("v"), at, 0, NULL, NULL), 1);
    stor_clock_override = 5000;
    assert_int_equal(db_reap(d, 100, &reaped, &more), 0);
    assert_int_equal(reaped, 1);
    fx_assert_keys(d, 2, 0, 0);
    stor_clock_override = 0;
}

static void test_db_gc_expiry_index_built_at_open(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    assert_int_equal(db_set(d, 0, K("a"), K("v"), 2000, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 5, K("b"), K("v"), 2000, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("c"), K("v"), 0, 0, NULL, NULL), 1);
    /* Take the index away, marker and all, as an old folder has it. */
    char hi[10];
    memset(hi, 0xff, sizeof hi);
    struct stor_batch b;
    stor_batch_init(&b);
    stor_batch_del_range(&b, STOR_CF_EXPIRY, "", 0, hi, sizeof hi);
    assert_int_equal(stor_commit(f->s, &b), 0);
    stor_batch_destroy(&b);
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 0);

    fx_reopen(f);
    d = &f->d;
    assert_int_equal(fx_count_cf(f, STOR_CF_EXPIRY), 1 + 2);
    stor_clock_override = 3000;
    uint64_t reaped;
    bool more;
    assert_int_equal(db_reap(d, 1000, &reaped, &more), 0);
    assert_int_equal(reaped, 2);
    assert_int_equal(db_exists(d, 0, K("c")), 1);
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
    assert_int_equal(db_hget(d, 0, K("h"), K("f"), &v, &vn), KV_ENOTFOUND);
    assert_int_equal(db_sismember(d, 0, K("s"), K("m")), 0);
    assert_int_equal(db_zscore(d, 0, K("z"), K("m"), &got), KV_ENOTFOUND);
    assert_int_equal(db_lrange(d, 0, K("l"), 0, -1, &vec), 0);
    assert_int_equal(vec.n, 0);
    fx_assert_keys(d, 0, 4, 4); /* counted until reaped, as in Redis */
    char *next;
    size_t nextn;
    assert_int_equal(db_scan(d, 0, NULL, 0, NULL, 0, 0, 100, &vec, &next, &nextn), 0);
    assert_int_equal(vec.n, 0);
    /* Writing to an expired key starts a fresh, empty one. */
    assert_int_equal(db_push(d, 0, K("l"), 0, m, 1, 0, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_sadd(d, 0, K("s"), m, 1, &n), 0);
    assert_int_equal(n, 1);
    fx_assert_keys(d, 0, 4, 2);
    uint64_t reaped;
    bool more;
    assert_int_equal(db_reap(d, 100, &reaped, &more), 0);
    assert_int_equal(reaped, 2);
    fx_assert_keys(d, 0, 2, 0);
    db_vec_destroy(&vec);
}

/* Deletes that walks step over: a collection left with a few members among
 * many deleted ones is noted by the walk that meets them, and db_tidy
 * rewrites it under a new version with the same members, scores and
 * expiry; the old version's records are the compaction filter's, and a
 * walk of the new one notes nothing. A collection with more live members
 * than that is left alone. Run with deletes in RocksDB (plain), in the
 * overlay over records in RocksDB (write-back, as far as the flusher has
 * not taken them yet), and in the overlay alone (no flusher). */
static void tidy_fill(struct db *d, int type, const char *key, int n, int del_from, int keep_every)
{
    static char buf[1000][16];
    struct db_str m[1000];
    double sc[1000];
    uint64_t cnt;
    for (int base = 0; base < n; base += 1000) {
        for (int i = 0; i < 1000; i++) {
            m[i] = (struct db_str){buf[i], (size_t)snprintf(buf[i], 16, "m%05d", base + i)};
            sc[i] = -(double)(base + i);
        }
        if (type == ENC_TYPE_HASH) {
            struct db_str fv[2000];
            for (int i = 0; i < 1000; i++)
                fv[2 * i] = fv[2 * i + 1] = m[i];
            assert_int_equal(db_hset(d, 0, key, strlen(key), fv, 1000, 0, &cnt), 0);
        } else if (type == ENC_TYPE_SET) {
            assert_int_equal(db_sadd(d, 0, key, strlen(key), m, 1000, &cnt), 0);
        } else {
            assert_int_equal(db_zadd(d, 0, key, strlen(key), sc, m, 1000, 0, &cnt, NULL), 0);
        }
    }
    if (fx_writeback == 1)
        assert_int_equal(stor_drain(d->s), 0); /* deletes over records in RocksDB */
    for (int i = del_from; i < n; i++) {
        if (i % keep_every == 0)
            continue;
        struct db_str one = {buf[0], (size_t)snprintf(buf[0], 16, "m%05d", i)};
        if (type == ENC_TYPE_HASH)
            assert_int_equal(db_hdel(d, 0, key, strlen(key), &one, 1, &cnt), 0);
        else if (type == ENC_TYPE_SET)
            assert_int_equal(db_srem(d, 0, key, strlen(key), &one, 1, &cnt), 0);
        else
            assert_int_equal(db_zrem(d, 0, key, strlen(key), &one, 1, &cnt), 0);
        assert_int_equal(cnt, 1);
    }
}

/* The whole collection, as its type's full read gives it. */
static void tidy_read(struct db *d, int type, const char *key, struct db_vec *out)
{
    db_vec_clear(out);
    if (type == ENC_TYPE_HASH) {
        assert_int_equal(db_hgetall(d, 0, key, strlen(key), DB_H_BOTH, out), 0);
    } else if (type == ENC_TYPE_SET) {
        assert_int_equal(db_smembers(d, 0, key, strlen(key), out), 0);
    } else {
        struct db_zspec sp = {.by = DB_ZBY_RANK, .start = 0, .stop = -1, .limit = -1};
        assert_int_equal(db_zrange(d, 0, key, strlen(key), &sp, out), 0);
    }
}

static struct enc_meta tidy_meta(struct db *d, const char *key)
{
    struct db_kc kc;
    assert_int_equal(kc_load(d, &kc, 0, key, strlen(key)), 0);
    struct enc_meta m = kc.m;
    kc_free(&kc);
    return m;
}

static void test_db_gc_tidy(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    static const int types[] = {ENC_TYPE_HASH, ENC_TYPE_SET, ENC_TYPE_ZSET};
    const char *keys[] = {"h", "s", "z"};
    struct db_vec a, b;
    db_vec_init(&a);
    db_vec_init(&b);
    for (int t = 0; t < 3; t++) {
        /* 3000 members, all deleted but every 600th: 5 left. */
        tidy_fill(d, types[t], keys[t], 3000, 0, 600);
        uint64_t when = stor_now_ms() + 3600 * 1000;
        assert_int_equal(db_expire(d, 0, keys[t], 1, when, 0), 1);
    }
    uint64_t done = d->tidied;
    for (int t = 0; t < 3; t++) {
        struct enc_meta m0 = tidy_meta(d, keys[t]);
        assert_int_equal(m0.size, 5);
        tidy_read(d, types[t], keys[t], &a);
        assert_int_equal(a.n, types[t] == ENC_TYPE_HASH ? 10 : 5);
        assert_int_equal(d->ntidy, 1); /* the walk noted it */
        db_tidy(d);
        assert_int_equal(d->ntidy, 0);
        assert_int_equal(d->tidied, done + (uint64_t)t + 1);
        struct enc_meta m1 = tidy_meta(d, keys[t]);
        assert_true(m1.version != m0.version);
        assert_int_equal(m1.size, 5);
        assert_int_equal(m1.expire_ms, m0.expire_ms);
        tidy_read(d, types[t], keys[t], &b);
        assert_int_equal(b.n, a.n);
        for (size_t i = 0; i < a.n; i++) {
            assert_int_equal(db_vec_len(&a, i), db_vec_len(&b, i));
            assert_memory_equal(db_vec_ptr(&a, i), db_vec_ptr(&b, i), db_vec_len(&a, i));
            assert_true(a.items[i].score == b.items[i].score);
        }
        assert_int_equal(d->ntidy, 0); /* the new version has nothing to step over */
        db_tidy(d);
        assert_int_equal(d->tidied, done + (uint64_t)t + 1);
    }
    /* 3000 members, 1000 of them deleted: too many live ones to copy. */
    tidy_fill(d, ENC_TYPE_HASH, "big", 3000, 2000, 3001);
    tidy_read(d, ENC_TYPE_HASH, "big", &a);
    assert_int_equal(a.n, 2 * 2000);
    assert_int_equal(d->ntidy, 0);
    db_tidy(d);
    if (fx_writeback != 2) {
        /* What the old versions held goes with the next compaction. */
        if (fx_writeback)
            assert_int_equal(stor_drain(f->s), 0);
        assert_int_equal(stor_compact(f->s, STOR_CF_META), 0);
        assert_int_equal(stor_compact(f->s, STOR_CF_SUB), 0);
        assert_int_equal(stor_compact(f->s, STOR_CF_SCORE), 0);
        uint64_t n;
        /* db 0's records: write-back keeps its applied sequence number in
         * each family too, under a key no db's can reach */
        assert_int_equal(stor_count(f->s, STOR_CF_SUB, "\0", 1, "\1", 1, &n), 0);
        assert_int_equal(n, 5 + 5 + 5 + 2000);
        assert_int_equal(stor_count(f->s, STOR_CF_SCORE, "\0", 1, "\1", 1, &n), 0);
        assert_int_equal(n, 5);
    }
    db_vec_destroy(&a);
    db_vec_destroy(&b);
}

/* One range compaction was asked for: waits (up to 20 s) until it ran. */
static void compacted_once(struct fx *f)
{
    uint64_t asked, done;
    stor_compact_async_stats(f->s, &asked, &done);
    assert_int_equal(asked, 1);
    for (int i = 0; i < 2000 && done < 1; i++) {
        usleep(10 * 1000);
        stor_compact_async_stats(f->s, &asked, &done);
    }
    assert_int_equal(done, 1);
}

/* A collection too large to copy (over DB_TIDY_MAX_SIZE), whose walk
 * stepped over DB_COMPACT_MIN deletes and a quarter of its size, has its
 * records' range compacted on the engine's thread: the walks after it step
 * over none of them, and read the same. A second request right after is
 * dropped (STOR_COMPACT_GAP_US). */
static void test_db_gc_compact_big(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    /* 90,000 fields, 70,000 of them deleted in runs: 20,000 left. */
    fill_hash(d, K("big"), 90000);
    static char buf[1000][16];
    struct db_str fl[1000];
    for (int base = 0; base < 90000; base += 1000) {
        size_t m = 0;
        for (int i = base; i < base + 1000; i++)
            if (i % 9 < 7)
                fl[m] = (struct db_str){buf[m], (size_t)snprintf(buf[m], 16, "f%d", i)}, m++;
        uint64_t n;
        assert_int_equal(db_hdel(d, 0, K("big"), fl, m, &n), 0);
    }
    if (fx_writeback)
        assert_int_equal(stor_drain(f->s), 0);
    struct db_vec a, b;
    db_vec_init(&a);
    db_vec_init(&b);
    assert_int_equal(db_hgetall(d, 0, K("big"), DB_H_BOTH, &a), 0);
    assert_int_equal(a.n, 2 * 20000);
    db_tidy(d);
    compacted_once(f);
    stor_skips_watch(true);
    uint64_t skips = stor_skips();
    assert_int_equal(db_hgetall(d, 0, K("big"), DB_H_BOTH, &b), 0);
    skips = stor_skips() - skips;
    stor_skips_watch(false);
    assert_true(skips < 100);
    assert_int_equal(b.n, a.n);
    for (size_t i = 0; i < a.n; i++)
        assert_memory_equal(db_vec_ptr(&a, i), db_vec_ptr(&b, i), db_vec_len(&a, i));
    db_tidy(d);
    struct stor_range r = {STOR_CF_SUB, NULL, NULL, 0, 0};
    assert_true(stor_compact_async(f->s, &r, 1) == false); /* within the gap */
    db_vec_destroy(&a);
    db_vec_destroy(&b);
}

/* RANDOMKEY over a few keys among many deleted ones asks for a compaction
 * of the db's meta records once a call stepped over DB_TIDY_MIN deletes
 * and four times the keys: the calls after it step over none. */
static void test_db_gc_compact_randomkey(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    for (int i = 0; i < 80000; i++) {
        char k[16];
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(d, 3, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
    }
    for (int i = 0; i < 80000; i++) {
        char k[16];
        int kn = snprintf(k, sizeof k, "k%d", i);
        if (i % 16000)
            assert_int_equal(db_del(d, 3, k, (size_t)kn), 1);
    }
    if (fx_writeback)
        assert_int_equal(stor_drain(f->s), 0);
    uint64_t asked = 0, done = 0;
    /* A call from a random slot may land near a live key: a few calls. */
    for (int i = 0; i < 50 && asked == 0; i++) {
        char *k;
        size_t kn;
        assert_int_equal(db_randomkey(d, 3, &k, &kn), 0);
        free(k);
        db_tidy(d);
        stor_compact_async_stats(f->s, &asked, &done);
    }
    compacted_once(f);
    stor_skips_watch(true);
    uint64_t skips = stor_skips();
    for (int i = 0; i < 20; i++) {
        char *k;
        size_t kn;
        assert_int_equal(db_randomkey(d, 3, &k, &kn), 0);
        char z[16];
        assert_true(kn >= 2 && kn < sizeof z && k[0] == 'k');
        memcpy(z, k + 1, kn - 1);
        z[kn - 1] = 0;
        assert_int_equal(atoi(z) % 16000, 0);
        free(k);
    }
    skips = stor_skips() - skips;
    stor_skips_watch(false);
    db_tidy(d);
    assert_true(skips < 100);
}

/* The engine closes with a range compaction just asked for: it gives up
 * or finishes, and nothing leaks (the sanitizer builds say). */
static void test_db_gc_compact_at_close(void **state)
{
    struct fx *f = *state;
    fill_hash(&f->d, K("h"), 30000);
    struct stor_range r[2] = {{STOR_CF_SUB, "\0", NULL, 1, 0}, {STOR_CF_META, "\0", "\1", 1, 1}};
    assert_true(stor_compact_async(f->s, r, 2));
}

/* A FLUSHALL's range deletes start a flush of the memtables they share
 * with the records they cover (stor_flush_ranged): left there, every
 * iterator that met those records stepped over them one at a time. */
static void test_db_gc_flushall_flushes(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    fill_hash(d, K("h"), 3000);
    if (fx_writeback)
        assert_int_equal(stor_drain(f->s), 0);
    uint64_t n = 0, imm = 0;
    assert_int_equal(stor_property(f->s, STOR_CF_SUB, "rocksdb.num-entries-active-mem-table", &n),
                     0);
    assert_true(n >= 3000);
    assert_int_equal(db_flushall(d), 0);
    if (fx_writeback)
        assert_int_equal(stor_drain(f->s), 0);
    for (int i = 0; i < 1000; i++) { /* the flush runs in the background */
        assert_int_equal(
            stor_property(f->s, STOR_CF_SUB, "rocksdb.num-entries-active-mem-table", &n), 0);
        assert_int_equal(stor_property(f->s, STOR_CF_SUB, "rocksdb.num-immutable-mem-table", &imm),
                         0);
        if (n < 3000 && imm == 0)
            break;
        usleep(10 * 1000);
    }
    assert_true(n < 3000);
    assert_int_equal(imm, 0);
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_hgetall(d, 0, K("h"), DB_H_BOTH, &v), 0);
    assert_int_equal(v.n, 0);
    db_vec_destroy(&v);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_gc_big_hash_delete),
        T(test_db_gc_keeps_live_and_new_versions),
        T(test_db_gc_expired_and_overwritten),
        T(test_db_gc_reads_never_see_expired),
        T(test_db_gc_expiry_index_stale_entries),
        T(test_db_gc_expiry_index_budget_and_flush),
        T(test_db_gc_reap_counts),
        cmocka_unit_test_setup_teardown(test_db_gc_reap_counts, fx_setup_wb, fx_teardown),
        T(test_db_gc_expiry_index_built_at_open),
        T(test_db_gc_expiry_floor),
        cmocka_unit_test_setup_teardown(test_db_gc_expiry_floor, fx_setup_wb_overlay, fx_teardown),
        T(test_db_gc_tidy),
        T(test_db_gc_flushall_flushes),
        T(test_db_gc_compact_big),
        T(test_db_gc_compact_at_close),
        T(test_db_gc_compact_randomkey),
        cmocka_unit_test_setup_teardown(test_db_gc_compact_randomkey, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_gc_compact_big, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_gc_flushall_flushes, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_gc_tidy, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_gc_tidy, fx_setup_wb_overlay, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
