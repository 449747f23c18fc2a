/*
 * test_db_keys — the key space with Redis 7 semantics: TYPE, EXISTS, DEL
 * in batches, the EXPIRE family, RENAME, COPY, SCAN over deletes and over
 * the overlay, DBSIZE, FLUSHDB, glob patterns, records that read as
 * corrupt, what survives a reopen, and the walk that dumps a database.
 */
#include "fixture.h"

static void test_db_keys_del_type_exists(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str m[] = {S("a")};
    int type;
    assert_int_equal(db_type(d, 0, K("x"), &type), 0);
    assert_int_equal(type, ENC_TYPE_NONE);
    assert_int_equal(db_sadd(d, 0, K("x"), m, 1, &n), 0);
    assert_int_equal(db_type(d, 0, K("x"), &type), 0);
    assert_int_equal(type, ENC_TYPE_SET);
    assert_int_equal(db_exists(d, 0, K("x")), 1);
    assert_int_equal(db_del(d, 0, K("x")), 1);
    assert_int_equal(d->last_commit_ops, 1);
    assert_int_equal(db_del(d, 0, K("x")), 0);
    assert_int_equal(db_exists(d, 0, K("x")), 0);
    /* A re-created key of the same name starts empty (new version). */
    struct db_str m2[] = {S("b")};
    assert_int_equal(db_sadd(d, 0, K("x"), m2, 1, &n), 0);
    assert_int_equal(db_sismember(d, 0, K("x"), K("a")), 0);
    assert_int_equal(db_scard(d, 0, K("x"), &n), 0);
    assert_int_equal(n, 1);
}

static void test_db_keys_expire_flags(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    uint64_t e;
    assert_int_equal(db_set(d, 0, K("k"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_expire(d, 0, K("none"), 5000, 0), 0);
    assert_int_equal(db_expire(d, 0, K("k"), 5000, DB_EXP_XX), 0); /* has no TTL */
    assert_int_equal(db_expire(d, 0, K("k"), 5000, DB_EXP_GT), 0); /* none = infinite */
    assert_int_equal(db_expire(d, 0, K("k"), 5000, DB_EXP_LT), 1);
    assert_int_equal(db_expire(d, 0, K("k"), 6000, DB_EXP_NX), 0);
    assert_int_equal(db_expire(d, 0, K("k"), 4000, DB_EXP_GT), 0);
    assert_int_equal(db_expire(d, 0, K("k"), 6000, DB_EXP_GT), 1);
    assert_int_equal(db_expire(d, 0, K("k"), 7000, DB_EXP_LT), 0);
    assert_int_equal(db_expire(d, 0, K("k"), 3000, DB_EXP_LT | DB_EXP_XX), 1);
    assert_int_equal(db_expiretime(d, 0, K("k"), &e), 0);
    assert_true(e == 3000);
    assert_int_equal(db_persist(d, 0, K("k")), 1);
    assert_int_equal(db_persist(d, 0, K("k")), 0);
    assert_int_equal(db_persist(d, 0, K("none")), 0);
    /* An expiry not in the future deletes the key. */
    assert_int_equal(db_expire(d, 0, K("k"), 1000, 0), 2);
    assert_int_equal(db_exists(d, 0, K("k")), 0);
}

static void test_db_keys_rename_copy(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    uint64_t n, e;
    struct db_str fv[] = {S("f1"), S("v1"), S("f2"), S("v2")};
    assert_int_equal(db_hset(d, 0, K("h"), fv, 2, 0, &n), 0);
    assert_int_equal(db_expire(d, 0, K("h"), 9000, 0), 1);
    assert_int_equal(db_rename(d, 0, K("h"), K("h2"), 0), 1);
    assert_int_equal(db_exists(d, 0, K("h")), 0);
    assert_int_equal(db_hlen(d, 0, K("h2"), &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_expiretime(d, 0, K("h2"), &e), 0);
    assert_true(e == 9000); /* RENAME keeps the TTL */
    assert_int_equal(db_rename(d, 0, K("missing"), K("x"), 0), KV_ENOTFOUND);
    assert_int_equal(db_rename(d, 0, K("h2"), K("h2"), 0), 1);
    assert_int_equal(db_rename(d, 0, K("h2"), K("h2"), 1), 0);
    assert_int_equal(db_set(d, 0, K("s"), K("str"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_rename(d, 0, K("h2"), K("s"), 1), 0); /* RENAMENX: s exists */
    assert_int_equal(db_rename(d, 0, K("h2"), K("s"), 0), 1); /* RENAME replaces it */
    int type;
    assert_int_equal(db_type(d, 0, K("s"), &type), 0);
    assert_int_equal(type, ENC_TYPE_HASH);

    /* COPY: to another db, refusing an existing target unless REPLACE. */
    struct db_str z[] = {S("a"), S("b")};
    double sc[] = {1, 2};
    assert_int_equal(db_zadd(d, 0, K("z"), sc, z, 2, 0, &n, NULL), 0);
    assert_int_equal(db_copy(d, 0, K("z"), 3, K("z"), 0), 1);
    assert_int_equal(db_copy(d, 0, K("z"), 3, K("z"), 0), 0);
    assert_int_equal(db_copy(d, 0, K("z"), 3, K("z"), 1), 1);
    double got;
    assert_int_equal(db_zscore(d, 3, K("z"), K("b"), &got), 0);
    assert_true(got == 2);
    /* The copy is independent of its source. */
    struct db_str only_a[] = {S("a")};
    assert_int_equal(db_zrem(d, 0, K("z"), only_a, 1, &n), 0);
    assert_int_equal(db_zcard(d, 3, K("z"), &n), 0);
    assert_int_equal(n, 2);
    struct db_str l[] = {S("x"), S("y")};
    assert_int_equal(db_push(d, 0, K("l"), 0, l, 2, 0, &n), 0);
    assert_int_equal(db_copy(d, 0, K("l"), 0, K("l2"), 0), 1);
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_lrange(d, 0, K("l2"), 0, -1, &v), 0);
    assert_int_equal(v.n, 2);
    assert_item(&v, 0, "x");
    assert_item(&v, 1, "y");
    db_vec_destroy(&v);

    /* MOVE: the list leaves db 0 for db 5 whole; not over a key already
     * there; an absent key is KV_ENOTFOUND. */
    assert_int_equal(db_move(d, 0, 5, K("l")), 1);
    assert_int_equal(db_exists(d, 0, K("l")), 0);
    assert_int_equal(db_llen(d, 5, K("l"), &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_push(d, 0, K("l"), 0, l, 1, 0, &n), 0);
    assert_int_equal(db_move(d, 0, 5, K("l")), 0);
    assert_int_equal(db_llen(d, 0, K("l"), &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_move(d, 0, 5, K("nokey")), KV_ENOTFOUND);
}

static void test_db_keys_scan_dbsize_flush(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char k[16];
    for (int i = 0; i < 100; i++) {
        int n = snprintf(k, sizeof k, "key:%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
    }
    uint64_t n;
    struct db_str m[] = {S("m")};
    assert_int_equal(db_sadd(d, 0, K("set:1"), m, 1, &n), 0);
    assert_int_equal(db_set(d, 1, K("other"), K("v"), 0, 0, NULL, NULL), 1);
    fx_assert_keys(d, 0, 101, 0);
    fx_assert_keys(d, 1, 1, 0);
    /* A full cursor walk returns every key exactly once. */
    struct db_vec v;
    db_vec_init(&v);
    char *cur = NULL;
    size_t curn = 0;
    int steps = 0;
    do {
        char *next;
        size_t nextn;
        assert_int_equal(db_scan(d, 0, cur, curn, NULL, 0, 0, 7, &v, &next, &nextn), 0);
        free(cur);
        cur = next;
        curn = nextn;
        steps++;
    } while (cur);
    assert_int_equal(v.n, 101);
    assert_true(steps >= 14);
    db_vec_clear(&v);
    /* MATCH and TYPE filter. */
    char *next;
    size_t nextn;
    assert_int_equal(db_scan(d, 0, NULL, 0, K("key:1?"), 0, 1000, &v, &next, &nextn), 0);
    assert_null(next);
    assert_int_equal(v.n, 10);
    db_vec_clear(&v);
    assert_int_equal(db_scan(d, 0, NULL, 0, NULL, 0, ENC_TYPE_SET, 1000, &v, &next, &nextn), 0);
    assert_int_equal(v.n, 1);
    assert_item(&v, 0, "set:1");
    db_vec_destroy(&v);

    char *rk;
    size_t rkn;
    assert_int_equal(db_randomkey(d, 1, &rk, &rkn), 0);
    assert_memory_equal(rk, "other", 5);
    free(rk);
    assert_int_equal(db_randomkey(d, 7, &rk, &rkn), KV_ENOTFOUND);

    assert_int_equal(db_flushdb(d, 0), 0);
    fx_assert_keys(d, 0, 0, 0);
    assert_int_equal(db_sismember(d, 0, K("set:1"), K("m")), 0);
    fx_assert_keys(d, 1, 1, 0);
    assert_int_equal(db_flushall(d), 0);
    fx_assert_keys(d, 1, 0, 0);
    /* A db emptied by deletes answers RANDOMKEY and SCAN from its count,
     * without a walk over the tombstones. */
    for (int i = 0; i < 1000; i++) {
        int kn = snprintf(k, sizeof k, "gone:%d", i);
        assert_int_equal(db_set(d, 2, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
    }
    assert_int_equal(db_randomkey(d, 2, &rk, &rkn), 0);
    free(rk);
    for (int i = 0; i < 1000; i++) {
        int kn = snprintf(k, sizeof k, "gone:%d", i);
        assert_int_equal(db_del(d, 2, k, (size_t)kn), 1);
    }
    fx_assert_keys(d, 2, 0, 0);
    assert_int_equal(db_randomkey(d, 2, &rk, &rkn), KV_ENOTFOUND);
    db_vec_init(&v);
    assert_int_equal(db_scan(d, 2, NULL, 0, NULL, 0, 0, 10, &v, &next, &nextn), 0);
    assert_int_equal(v.n, 0);
    assert_null(next);
    db_vec_destroy(&v);
}

/* A full SCAN over db 0 with COUNT count: which keys of the test below it
 * returned, anything else it returned, and its number of calls. */
struct scan_seen {
    unsigned char t[60000], tag[4000], fresh[50];
    int calls, other;
};

static void scan_note(struct scan_seen *ss, const char *k, size_t kn)
{
    char buf[32];
    int i;
    if (kn >= sizeof buf)
        goto other;
    memcpy(buf, k, kn);
    buf[kn] = 0;
    if (sscanf(buf, "t:%d", &i) == 1 && i >= 0 && i < 60000)
        ss->t[i] = 1;
    else if (sscanf(buf, "{tag}:%d", &i) == 1 && i >= 0 && i < 4000)
        ss->tag[i] = 1;
    else if (sscanf(buf, "fresh:%d", &i) == 1 && i >= 0 && i < 50)
        ss->fresh[i] = 1;
    else
        goto other;
    return;
other:
    ss->other++;
}

static void scan_full(struct db *d, uint64_t count, struct scan_seen *ss)
{
    memset(ss, 0, sizeof *ss);
    struct db_vec v;
    db_vec_init(&v);
    char *cur = NULL;
    size_t curn = 0;
    do {
        char *next;
        size_t nextn;
        assert_int_equal(db_scan(d, 0, cur, curn, NULL, 0, 0, count, &v, &next, &nextn), 0);
        for (size_t i = 0; i < v.n; i++) {
            scan_note(ss, db_vec_ptr(&v, i), db_vec_len(&v, i));
        }
        db_vec_clear(&v);
        free(cur);
        cur = next;
        curn = nextn;
        ss->calls++;
        assert_true(ss->calls < 100000);
    } while (cur);
    db_vec_destroy(&v);
}

/* SCAN over a key space mostly deleted, whose tombstones RocksDB keeps
 * until compaction: every live key comes back, no deleted one, and a call
 * stops short of walking them all (db_scan's ranges). With write-back,
 * keys that only the overlay holds are spread among them. */
static void test_db_scan_over_tombstones(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char k[32];
    for (int i = 0; i < 60000; i++) {
        int n = snprintf(k, sizeof k, "t:%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
    }
    for (int i = 0; i < 4000; i++) { /* one slot: more than a range may pass */
        int n = snprintf(k, sizeof k, "{tag}:%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
    }
    if (fx_writeback)
        assert_int_equal(stor_drain(f->s), 0);
    for (int i = 0; i < 60000; i++) {
        if (i % 600 == 0)
            continue;
        int n = snprintf(k, sizeof k, "t:%d", i);
        assert_int_equal(db_del(d, 0, k, (size_t)n), 1);
    }
    for (int i = 0; i < 4000; i++) {
        if (i % 1000 == 999)
            continue;
        int n = snprintf(k, sizeof k, "{tag}:%d", i);
        assert_int_equal(db_del(d, 0, k, (size_t)n), 1);
    }
    if (fx_writeback) {
        assert_int_equal(stor_drain(f->s), 0);
        for (int i = 0; i < 50; i++) { /* pending, in the overlay */
            int n = snprintf(k, sizeof k, "fresh:%d", i);
            assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
        }
    }
    for (int r = 0; r < 2; r++) {
        struct scan_seen *ss = malloc(sizeof *ss);
        scan_full(d, r ? 1000 : 10, ss);
        for (int i = 0; i < 60000; i++)
            if (ss->t[i] != (i % 600 == 0))
                fail_msg("count %d: t:%d %s", r ? 1000 : 10, i,
                         ss->t[i] ? "deleted, returned" : "missed");
        for (int i = 0; i < 4000; i++)
            assert_int_equal(ss->tag[i], i % 1000 == 999);
        for (int i = 0; i < 50; i++)
            assert_int_equal(ss->fresh[i], fx_writeback != 0);
        assert_int_equal(ss->other, 0);
        /* 105-155 keys and 63,896 tombstones: one walk would take over
         * 10 ms; a call stops after 1 ms. */
        if (r)
            assert_true(ss->calls >= 2);
        print_message("scan over tombstones, count %d: %d calls\n", r ? 1000 : 10, ss->calls);
        free(ss);
    }
}

/* SCAN over keys that all wait in the write-back for their order (no
 * flusher): the first call orders a narrow range's bands, not all of them
 * (db_scan's SCAN_FIRST_NARROW), and the whole scan still returns every
 * key, with writes of new keys and rewrites between its calls. */
static void test_db_scan_waiting(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char k[32];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(k, sizeof k, "t:%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
    }
    size_t w0 = stor_waiting(f->s, STOR_CF_META);
    assert_true(w0 >= 20000);
    struct scan_seen *ss = calloc(1, sizeof *ss);
    struct db_vec v;
    db_vec_init(&v);
    char *cur = NULL;
    size_t curn = 0;
    int calls = 0;
    do {
        char *next;
        size_t nextn;
        assert_int_equal(db_scan(d, 0, cur, curn, NULL, 0, 0, 50, &v, &next, &nextn), 0);
        if (calls == 0) {
            size_t w1 = stor_waiting(f->s, STOR_CF_META);
            if (v.n == 0 || !next || w1 < w0 - w0 / 8)
                fail_msg("the first call: %zu keys, ordered %zu of %zu waiting records", v.n,
                         w0 - w1, w0);
        }
        for (size_t i = 0; i < v.n; i++)
            scan_note(ss, db_vec_ptr(&v, i), db_vec_len(&v, i));
        db_vec_clear(&v);
        free(cur);
        cur = next;
        curn = nextn;
        int n = snprintf(k, sizeof k, "t:%d", calls * 7 % 20000); /* a rewrite */
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("w"), 0, 0, NULL, NULL), 1);
        n = snprintf(k, sizeof k, "new:%d", calls); /* a new key */
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
        assert_true(++calls < 100000);
    } while (cur);
    db_vec_destroy(&v);
    for (int i = 0; i < 20000; i++)
        if (!ss->t[i])
            fail_msg("t:%d missed", i);
    print_message("scan of waiting records: %d calls\n", calls);
    free(ss);
}

static void test_db_keys_glob(void **state)
{
    (void)state;
    struct {
        const char *p, *s;
        int want;
    } c[] = {{"*", "", 1},
             {"*", "abc", 1},
             {"a*", "abc", 1},
             {"a*c", "abbbc", 1},
             {"a*c", "abcd", 0},
             {"h?llo", "hello", 1},
             {"h?llo", "hllo", 0},
             {"h[ae]llo", "hallo", 1},
             {"h[ae]llo", "hillo", 0},
             {"h[^e]llo", "hallo", 1},
             {"h[^e]llo", "hello", 0},
             {"h[a-b]llo", "hbllo", 1},
             {"h[b-a]llo", "hallo", 1},
             {"h\\*llo", "h*llo", 1},
             {"h\\*llo", "hello", 0},
             {"*a*b*c*", "xaxbxcx", 1},
             {"*a*b*c*", "xaxcxbx", 0},
             {"a**", "a", 1},
             {"[abc", "a", 1},
             {"", "", 1},
             {"", "a", 0}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        assert_int_equal(db_glob_match(c[i].p, strlen(c[i].p), c[i].s, strlen(c[i].s), 0),
                         c[i].want);
    assert_int_equal(db_glob_match(K("HELLO"), K("hello"), 1), 1);
    assert_int_equal(db_glob_match(K("HELLO"), K("hello"), 0), 0);
}

static void test_db_keys_persist_across_reopen(void **state)
{
    struct fx *f = *state;
    uint64_t n;
    struct db_str fv[] = {S("f"), S("v")};
    assert_int_equal(db_set(&f->d, 0, K("s"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_hset(&f->d, 0, K("h"), fv, 1, 0, &n), 0);
    fx_reopen(f);
    char *v;
    size_t vn;
    assert_int_equal(db_get(&f->d, 0, K("s"), &v, &vn), 0);
    free(v);
    assert_int_equal(db_hget(&f->d, 0, K("h"), K("f"), &v, &vn), 0);
    assert_memory_equal(v, "v", 1);
    free(v);
    /* Versions keep increasing across a reopen: a new hash never sees old fields. */
    assert_int_equal(db_del(&f->d, 0, K("h")), 1);
    struct db_str fv2[] = {S("g"), S("w")};
    assert_int_equal(db_hset(&f->d, 0, K("h"), fv2, 1, 0, &n), 0);
    assert_int_equal(db_hexists(&f->d, 0, K("h"), K("f")), 0);
}

/* Writes raw bytes as the meta record of key in db 0. */
static void plant_meta(struct fx *f, const char *key, size_t klen, const char *v, size_t vn)
{
    char mk[64];
    size_t mkn = enc_meta_key(mk, 0, enc_slot(key, klen), key, klen);
    struct stor_batch b;
    stor_batch_init(&b);
    stor_batch_put(&b, STOR_CF_META, mk, mkn, v, vn);
    assert_int_equal(stor_commit(f->s, &b), 0);
    stor_batch_destroy(&b);
}

static void test_db_keys_corrupt_records_are_errors(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    plant_meta(f, K("short"), "\x01\x00", 2);                  /* shorter than flags+expiry */
    plant_meta(f, K("badtype"), "\x09\0\0\0\0\0\0\0\0", 9);    /* type 9 */
    plant_meta(f, K("badhash"), "\x02\0\0\0\0\0\0\0\0\1", 10); /* hash without its tail */
    fx_reopen(f); /* counted at open, like any record */
    fx_assert_keys(d, 0, 3, 0);
    char *v;
    size_t vn;
    uint64_t n;
    int type;
    const char *keys[] = {"short", "badtype", "badhash"};
    for (int i = 0; i < 3; i++) {
        size_t kl = strlen(keys[i]);
        assert_int_equal(db_get(d, 0, keys[i], kl, &v, &vn), KV_ECORRUPT);
        assert_int_equal(db_type(d, 0, keys[i], kl, &type), KV_ECORRUPT);
        assert_int_equal(db_hlen(d, 0, keys[i], kl, &n), KV_ECORRUPT);
        assert_int_equal(db_del(d, 0, keys[i], kl), KV_ECORRUPT);
        struct db_str m = S("m");
        assert_int_equal(db_sadd(d, 0, keys[i], kl, &m, 1, &n), KV_ECORRUPT);
    }
    /* Reads of many keys report the damage too, and a DEL of many deletes
     * none of them. */
    assert_int_equal(db_set(d, 0, K("good"), K("v"), 0, 0, NULL, NULL), 1);
    struct db_str many[] = {S("good"), S("short"), S("badtype"), S("badhash")};
    struct fx_mget g = {0};
    unsigned char del[4];
    assert_int_equal(db_mget(d, 0, many, 4, 0, fx_mget_each, &g), KV_ECORRUPT);
    assert_int_equal(g.n, 4);
    for (int i = 0; i < 4; i++)
        free(g.v[i]);
    assert_int_equal(db_exists_many(d, 0, many, 4, 0, &n), KV_ECORRUPT);
    assert_int_equal(db_del_many(d, 0, many, 4, 0, del), KV_ECORRUPT);
    assert_int_equal(del[0], 0);
    assert_get(d, 0, K("good"), "v");
    unsigned char is[1];
    double sc[1];
    assert_int_equal(db_smismember(d, 0, K("badhash"), many, 1, is), KV_ECORRUPT);
    assert_int_equal(db_zmscore(d, 0, K("short"), many, 1, sc), KV_ECORRUPT);
    assert_int_equal(db_del(d, 0, K("good")), 1);
    /* SET replaces a corrupt record without reading it. Scans skip records
     * whose header is unreadable, but list one with a damaged tail: the key
     * exists, and every access to it reports the damage. */
    assert_int_equal(db_set(d, 0, K("short"), K("fixed"), 0, 0, NULL, NULL), 1);
    assert_get(d, 0, K("short"), "fixed");
    fx_assert_keys(d, 0, 3, 0); /* a record counts whatever its bytes */
}

/* DEL of more keys than one batch reads: strings, hashes, keys with an
 * expiry (some due), absent keys, keys of another db, each named up to
 * twice. Each live key is deleted once, the counts agree with a scan, and
 * with write-back, where the flusher has taken every record from the
 * overlay, the counts take what the delete read: nothing is left to
 * resolve later. */
static void test_db_del_many(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char names[150][16];
    struct db_str keys[150];
    unsigned char del[150];
    uint64_t added;
    stor_clock_override = 1000;
    fx_names(names, keys, 150, "dl");
    for (int i = 0; i < 100; i++) {
        char key[16];
        size_t kn = (size_t)snprintf(key, sizeof key, "dl%d", i);
        struct db_str fv[] = {S("f"), S("1")};
        switch (i % 5) {
        case 0: /* absent in db 0 */
            assert_int_equal(db_set(d, 1, key, kn, K("v"), 0, 0, NULL, NULL), 1);
            break;
        case 1:
            assert_int_equal(db_set(d, 0, key, kn, K("v"), 0, 0, NULL, NULL), 1);
            break;
        case 2:
            assert_int_equal(db_hset(d, 0, key, kn, fv, 1, 0, &added), 0);
            break;
        case 3:
            assert_int_equal(db_set(d, 0, key, kn, K("v"), 1500, 0, NULL, NULL), 1);
            break;
        case 4:
            assert_int_equal(db_set(d, 0, key, kn, K("v"), 9000, 0, NULL, NULL), 1);
            break;
        }
    }
    if (stor_can_defer(f->s))
        assert_int_equal(stor_drain(f->s), 0);
    stor_clock_override = 1500;                   /* the i % 5 == 3 keys expire */
    struct db_str twice[] = {S("dl1"), S("dl1")}; /* in one batch */
    assert_int_equal(db_del_many(d, 0, twice, 2, 0, del), 0);
    assert_int_equal(del[0], 1);
    assert_int_equal(del[1], 0);
    assert_int_equal(db_del_many(d, 0, keys, 150, 16, del), 0);
    bool seen[100] = {[1] = true};
    for (int j = 0; j < 150; j++) {
        int i = j * 7 % 100;
        bool live = i % 5 == 1 || i % 5 == 2 || i % 5 == 4;
        assert_int_equal(del[j], live && !seen[i]);
        seen[i] = true;
        assert_int_equal(db_exists(d, 0, keys[j].p, keys[j].n), 0);
        assert_int_equal(db_exists(d, 1, keys[j].p, keys[j].n), i % 5 == 0);
    }
    assert_int_equal(d->defer_out[0], 0);
    fx_assert_keys(d, 0, 20, 20); /* the expired ones, until reaped */
    fx_assert_keys(d, 1, 20, 0);
    assert_int_equal(db_del_many(d, 0, keys, 150, 0, del), 0);
    for (int j = 0; j < 150; j++)
        assert_int_equal(del[j], 0);
    fx_reopen(f);
    for (int j = 0; j < 150; j++)
        assert_int_equal(db_exists(d, 0, keys[j].p, keys[j].n), 0);
}

/* GETDEL, RENAME's source and MOVE's read the key they delete: with
 * write-back, on keys the flusher has taken from the overlay, the counts
 * take that read, leaving nothing to resolve later. */
static void test_db_read_priors(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char *v;
    size_t vn;
    uint64_t later = stor_now_ms() + 600000;
    assert_int_equal(db_set(d, 0, K("gd"), K("v"), later, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("rn"), K("v"), later, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("mv"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("kept"), K("v"), 0, 0, NULL, NULL), 1);
    if (stor_can_defer(f->s))
        assert_int_equal(stor_drain(f->s), 0);
    assert_int_equal(db_getdel(d, 0, K("gd"), &v, &vn), 0);
    free(v);
    assert_int_equal(db_rename(d, 0, K("rn"), K("rn2"), 0), 1);
    assert_int_equal(db_move(d, 0, 1, K("mv")), 1);
    assert_int_equal(d->defer_out[0], 0);
    assert_int_equal(d->defer_out[1], 0);
    fx_assert_keys(d, 0, 2, 1);
    fx_assert_keys(d, 1, 1, 0);
}

/* What db_dump_each hands a walker: every key it saw, and each value as
 * db_dump reads that key. */
struct walked {
    struct db *d;
    unsigned dbi;
    size_t n;
    int stop_at; /* > 0: return 7 at that key */
};

static int walk_one(void *arg, const char *k, size_t kn, const struct db_value *v)
{
    struct walked *w = arg;
    struct db_value want;
    db_vec_init(&want.items);
    assert_int_equal(db_dump(w->d, w->dbi, k, kn, &want), 0);
    assert_int_equal(v->type, want.type);
    assert_true(v->expire_ms == want.expire_ms);
    assert_int_equal(v->items.n, want.items.n);
    for (size_t i = 0; i < want.items.n; i++) {
        assert_int_equal(db_vec_len(&v->items, i), db_vec_len(&want.items, i));
        assert_memory_equal(db_vec_ptr(&v->items, i), db_vec_ptr(&want.items, i),
                            db_vec_len(&want.items, i));
    }
    db_vec_destroy(&want.items);
    return ++w->n == (size_t)w->stop_at ? 7 : 0;
}

/* One walk over a database gives each live key once, with the value a
 * look-up gives: every type, not the expired or deleted ones, not another
 * database's; a walker's non-zero return ends it. */
static void test_db_dump_each(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    stor_clock_override = 1000;
    struct db_str fv[] = {S("f1"), S("v1"), S("f2"), S("v2")};
    struct db_str m[] = {S("a"), S("b"), S("c")};
    double sc[] = {3, 1, 2};
    assert_int_equal(db_set(d, 0, K("s"), K("text"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("ttl"), K("later"), 9000, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("old"), K("gone"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_expire(d, 0, K("old"), 2000, 0), 1);
    assert_int_equal(db_hset(d, 0, K("h"), fv, 2, 0, &n), 0);
    assert_int_equal(db_sadd(d, 0, K("set"), m, 3, &n), 0);
    assert_int_equal(db_zadd(d, 0, K("z"), sc, m, 3, 0, &n, NULL), 0);
    assert_int_equal(db_push(d, 0, K("l"), 0, m, 3, 0, &n), 0);
    assert_int_equal(db_set(d, 0, K("del"), K("x"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_del(d, 0, K("del")), 1);
    assert_int_equal(db_set(d, 1, K("other"), K("db"), 0, 0, NULL, NULL), 1);
    stor_clock_override = 3000; /* "old" has expired */
    struct walked w = {.d = d, .dbi = 0};
    assert_int_equal(db_dump_each(d, 0, walk_one, &w), 0);
    assert_int_equal(w.n, 6);
    w = (struct walked){.d = d, .dbi = 1};
    assert_int_equal(db_dump_each(d, 1, walk_one, &w), 0);
    assert_int_equal(w.n, 1);
    w = (struct walked){.d = d, .dbi = 2};
    assert_int_equal(db_dump_each(d, 2, walk_one, &w), 0);
    assert_int_equal(w.n, 0);
    w = (struct walked){.d = d, .dbi = 0, .stop_at = 2};
    assert_int_equal(db_dump_each(d, 0, walk_one, &w), 7);
    assert_int_equal(w.n, 2);
    stor_clock_override = 0;
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_keys_del_type_exists),
        T(test_db_keys_expire_flags),
        T(test_db_keys_rename_copy),
        T(test_db_keys_scan_dbsize_flush),
        T(test_db_scan_over_tombstones),
        cmocka_unit_test(test_db_keys_glob),
        T(test_db_keys_persist_across_reopen),
        T(test_db_keys_corrupt_records_are_errors),
        T(test_db_del_many),
        T(test_db_read_priors),
        T(test_db_dump_each),
        cmocka_unit_test_setup_teardown(test_db_dump_each, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_read_priors, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_del_many, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_scan_over_tombstones, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_scan_waiting, fx_setup_wb_overlay, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
