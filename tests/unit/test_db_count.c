/*
 * test_db_count — key counts (DBSIZE, INFO keyspace) kept by every commit,
 * with prior states read at once or deferred to write-back's resolver;
 * the key filter, its rebuild while serving, and the counts file a clean
 * shutdown saves.
 */
#include "fixture.h"

/* The sum of db dbi's expiries in seconds, by a scan: what d->expsum
 * must equal. */
static int64_t expsum_scan(struct db *d, unsigned dbi)
{
    char lo[3], hi[3];
    db_range(dbi, lo, hi);
    struct stor_it *it = stor_it_create(d->s, STOR_CF_META, lo, 3, hi, 3);
    int64_t sum = 0;
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
        size_t vn;
        const char *v = stor_it_value(it, &vn);
        uint8_t t;
        uint64_t exp;
        if (enc_meta_peek(v, vn, &t, &exp) == 0)
            sum += (int64_t)(exp / 1000);
    }
    assert_int_equal(stor_it_status(it), 0);
    stor_it_free(it);
    return sum;
}

/* Every kind of write, at random over a few keys in three dbs, with time
 * moving on and reopens: after each, the kept key and expiry counts equal
 * a scan's. Blind SETs, MSET naming a key twice, RENAME onto itself, MOVE
 * and COPY across dbs, writes to expired keys and active expiry included. */
static void test_db_keycount_kept(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t rng = 0x5eed5eedull, n;
    stor_clock_override = 1000000;
#define RND(m)                                                                                     \
    ((unsigned)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (m))
    struct db_vec out;
    db_vec_init(&out);
    unsigned deferred = 0; /* steps that left a write's prior state to resolve */
    for (int step = 0; step < 3000; step++) {
        char k1[8], k2[8];
        unsigned db1 = RND(3), db2 = RND(3);
        snprintf(k1, sizeof k1, "k%u", RND(8));
        snprintf(k2, sizeof k2, "k%u", RND(8));
        size_t n1 = strlen(k1), n2 = strlen(k2);
        uint64_t now = stor_clock_override;
        uint64_t exp = RND(3) == 0 ? 0 : now + 1 + RND(50);
        char *v = NULL;
        size_t vn;
        struct db_str m[] = {S("a"), S("b")};
        struct db_str kv[] = {{k1, n1}, S("x"), {k2, n2}, S("y"), {k1, n1}, S("z")};
        double sc[] = {1, 2};
        int rc;
        switch (RND(23)) {
        case 0:
            rc = db_set(d, db1, k1, n1, K("v"), exp, 0, NULL, NULL);
            break;
        case 1:
            rc = db_set(d, db1, k1, n1, K("v"), exp, RND(2) ? DB_SET_NX : DB_SET_XX, NULL, NULL);
            break;
        case 2:
            rc = db_set(d, db1, k1, n1, K("v"), 0, DB_SET_KEEPTTL, NULL, NULL);
            break;
        case 3:
            rc = db_del(d, db1, k1, n1);
            break;
        case 4:
            rc = db_hset(d, db1, k1, n1, m, 1, 0, &n);
            break;
        case 5:
            rc = db_hdel(d, db1, k1, n1, m, 2, &n);
            break;
        case 6:
            rc = db_sadd(d, db1, k1, n1, m, 1 + RND(2), &n);
            break;
        case 7:
            rc = db_spop(d, db1, k1, n1, 1, &out);
            break;
        case 8:
            rc = db_zadd(d, db1, k1, n1, sc, m, 2, 0, &n, NULL);
            break;
        case 9:
            rc = db_zrem(d, db1, k1, n1, m, 1, &n);
            break;
        case 10:
            rc = db_push(d, db1, k1, n1, 1, m, 1, 0, &n);
            break;
        case 11:
            rc = db_pop(d, db1, k1, n1, 0, 1, &out);
            break;
        case 12:
            rc = db_expire(d, db1, k1, n1, RND(4) ? exp : now - 1, 0);
            break;
        case 13:
            rc = db_persist(d, db1, k1, n1);
            break;
        case 14:
            rc = db_rename(d, db1, k1, n1, k2, n2, (int)RND(2));
            break;
        case 15:
            rc = db_copy(d, db1, k1, n1, db2, k2, n2, (int)RND(2));
            break;
        case 16:
            rc = db1 == db2 ? 0 : db_move(d, db1, db2, k1, n1);
            break;
        case 17:
            rc = db_mset(d, db1, kv, 3, (int)RND(2));
            break;
        case 18:
            rc = db_getdel(d, db1, k1, n1, &v, &vn);
            break;
        case 19:
            rc = db_smove(d, db1, k1, n1, k2, n2, K("a"));
            break;
        case 21: {
            unsigned char del[3];
            struct db_str ks[] = {{k1, n1}, {k2, n2}, {k1, n1}};
            rc = db_del_many(d, db1, ks, 3, 0, del);
            assert_true(rc != 0 || !del[2]);
            break;
        }
        case 20:
            stor_clock_override += 1 + RND(20); /* some keys expire */
            rc = db_reap(d, RND(2) ? 1000 : 2, &n, &(bool){false});
            break;
        default:
            if (RND(20) == 0)
                rc = db_flushdb(d, db1);
            else if (RND(10) == 0) {
                fx_reopen(f);
                rc = 0;
            } else
                rc = db_getex(d, db1, k1, n1, DB_GETEX_SET, exp ? exp : now - 1, &v, &vn);
            break;
        }
        assert_true(rc >= 0 || rc == KV_ENOTFOUND || rc == KV_EWRONGTYPE);
        free(v);
        db_vec_clear(&out);
        for (unsigned dbi = 0; dbi < 3; dbi++)
            deferred += d->defer_out[dbi] != 0;
        if (stor_can_defer(f->s) && step % 7 == 0) {
            /* The flusher resolves what it writes: once drained, folding
             * alone makes the counts exact, and the overlay is empty, so
             * the next writes of these keys are deferred again. */
            assert_int_equal(stor_drain(f->s), 0);
            assert_int_equal(db_counts_settle(d, false), 0);
            for (unsigned dbi = 0; dbi < 3; dbi++) {
                uint64_t sk, se;
                assert_int_equal(d->defer_out[dbi], 0);
                assert_int_equal(db_keycount_scan(d, dbi, &sk, &se), 0);
                assert_int_equal(d->nkeys[dbi], sk);
                assert_int_equal(d->nexpires[dbi], se);
            }
        }
        for (unsigned dbi = 0; dbi < 3; dbi++) {
            uint64_t k, e, sk, se;
            assert_int_equal(db_keycount(d, dbi, &k, &e), 0);
            assert_int_equal(db_keycount_scan(d, dbi, &sk, &se), 0);
            if (k != sk || e != se)
                fail_msg("step %d db %u: kept %llu keys %llu expires, scan %llu %llu", step, dbi,
                         (unsigned long long)k, (unsigned long long)e, (unsigned long long)sk,
                         (unsigned long long)se);
            int64_t es = expsum_scan(d, dbi);
            if (d->expsum[dbi] != es)
                fail_msg("step %d db %u: kept expiry sum %lld, scan %lld", step, dbi,
                         (long long)d->expsum[dbi], (long long)es);
        }
    }
#undef RND
    db_vec_destroy(&out);
    if (stor_can_defer(f->s))
        assert_true(deferred > 100);
    else
        assert_int_equal(deferred, 0);
}

/* Writes whose keys the overlay no longer holds leave their prior state to
 * the write-back: counted once resolved, by the flusher or by a settle, and
 * a FLUSHDB in between leaves nothing to land on its zeroed counts. */
static void test_db_counts_deferred(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char k[32];
    for (int i = 0; i < 150; i++) {
        int kn = snprintf(k, sizeof k, "dk:%d", i);
        assert_int_equal(db_set(d, i < 100 ? 0 : 1, k, (size_t)kn, K("v"),
                                i < 100 ? 0 : stor_now_ms() + 600000, 0, NULL, NULL),
                         1);
    }
    assert_int_equal(stor_drain(f->s), 0); /* RocksDB has them; the overlay forgets */
    for (int i = 0; i < 150; i++) {
        int kn = snprintf(k, sizeof k, "dk:%d", i);
        assert_int_equal(db_set(d, i < 100 ? 0 : 1, k, (size_t)kn, K("w"), 0, 0, NULL, NULL), 1);
    }
    assert_int_equal(d->defer_out[0], 100);
    assert_int_equal(d->defer_out[1], 50);
    assert_int_equal(d->nkeys[0], 100); /* unchanged until resolved */
    assert_int_equal(d->nexpires[1], 50);
    assert_int_equal(db_flushdb(d, 0), 0);
    assert_int_equal(d->defer_out[0], 0);
    assert_int_equal(d->defer_out[1], 0);
    fx_assert_keys(d, 0, 0, 0);
    fx_assert_keys(d, 1, 50, 0); /* the expiries went with the rewrite */
    /* The flusher's resolutions, folded with no read of our own. */
    for (int i = 0; i < 50; i++) {
        int kn = snprintf(k, sizeof k, "dk:%d", 100 + i);
        assert_int_equal(db_del(d, 1, k, (size_t)kn), 1);
    }
    for (int i = 0; i < 150; i++) {
        int kn = snprintf(k, sizeof k, "dk:%d", 100 + i);
        assert_int_equal(db_set(d, 1, k, (size_t)kn, K("x"), 0, 0, NULL, NULL), 1);
    }
    assert_int_equal(stor_drain(f->s), 0);
    assert_int_equal(db_counts_settle(d, false), 0);
    assert_int_equal(d->nkeys[1], 150);
    assert_int_equal(d->defer_out[1], 0);
    fx_assert_keys(d, 1, 150, 0);
}

/* The key filter never loses a key it was given, also across its growth,
 * and answers "maybe" for few it was not given. */
static void test_db_keyf(void **state)
{
    (void)state;
    struct db_keyf kf;
    memset(&kf, 0, sizeof kf);
    db_keyf_init(&kf, 1000); /* raised to the smallest size, 65,536 keys */
    uint64_t x = 0x12345678;
    enum { N = 300000 };
    for (int i = 0; i < N; i++)
        db_keyf_add(&kf, stor_key_hash(STOR_CF_META, (char *)&(uint64_t){x + (uint64_t)i}, 8));
    assert_true(kf.n >= 3); /* 65,536, 131,072, 262,144 */
    for (int i = 0; i < N; i++)
        assert_true(
            db_keyf_may(&kf, stor_key_hash(STOR_CF_META, (char *)&(uint64_t){x + (uint64_t)i}, 8)));
    int fp = 0;
    for (int i = 0; i < N; i++)
        fp += db_keyf_may(&kf,
                          stor_key_hash(STOR_CF_META, (char *)&(uint64_t){x + N + (uint64_t)i}, 8));
    print_message("key filter: %u filters, %.2f%% false positives\n", kf.n, 100.0 * fp / N);
    assert_true(fp < N / 50); /* under 2% with three filters asked */
    db_keyf_init(&kf, 1 << 20);
    assert_false(db_keyf_may(&kf, stor_key_hash(STOR_CF_META, (char *)&x, 8)));
    for (int i = 0; i < 1000; i++)
        db_keyf_add(&kf, (uint64_t)i * 0x9e3779b97f4a7c15ull);
    assert_int_equal(kf.n, 1);
    fp = 0;
    for (int i = 0; i < N; i++)
        fp += db_keyf_may(&kf, stor_key_hash(STOR_CF_SUB, (char *)&(uint64_t){x + (uint64_t)i}, 8));
    assert_true(fp < 10); /* nearly empty */
    db_keyf_destroy(&kf);
}

/* Saves the counts as a clean shutdown does, then reopens. */
static void save_and_reopen(struct fx *f)
{
    assert_int_equal(db_save_counts(&f->d), 0);
    fx_reopen(f);
}

/* Sets every key "k<i>" of db 0 again: a key the loaded filter lost would
 * be taken for a new one and counted twice. */
static void set_all_again(struct db *d, int n)
{
    char k[16];
    for (int i = 0; i < n; i++) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("w"), 0, 0, NULL, NULL), 1);
    }
}

/* The key counts and the key filter survive a clean shutdown in a file
 * (db_save_counts) that the next open takes instead of counting, only
 * while it still describes the data, and deletes at once. */
static void test_db_counts_saved(void **state)
{
    struct fx *f = *state;
    char k[16], path[300];
    for (int i = 0; i < 3000; i++) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(&f->d, 0, k, (size_t)kn, K("v"),
                                i % 7 == 0 ? stor_now_ms() + 3600000 : 0, 0, NULL, NULL),
                         1);
    }
    assert_int_equal(db_set(&f->d, 9, K("other"), K("v"), 0, 0, NULL, NULL), 1);
    assert_false(f->d.counts_loaded);
    snprintf(path, sizeof path, "%s/key-counts", f->dir);

    save_and_reopen(f);
    assert_true(f->d.counts_loaded);
    assert_int_equal(access(path, F_OK), -1); /* gone once read */
    fx_assert_keys(&f->d, 0, 3000, 429);
    /* The expiries' sum came with the counts: an hour each, within the
     * second the sum drops. */
    uint64_t avg = db_avg_ttl(&f->d, 0, stor_now_ms());
    assert_true(avg > 3600000 - 2000 && avg <= 3600000);
    assert_int_equal(db_avg_ttl(&f->d, 9, stor_now_ms()), 0);
    fx_assert_keys(&f->d, 9, 1, 0);
    set_all_again(&f->d, 3000);
    fx_assert_keys(&f->d, 0, 3000, 0);

    /* No file (the last open deleted it): counted. A save a crash cut
     * short goes too. */
    char tmp[320];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *cut = fopen(tmp, "wb");
    assert_non_null(cut);
    fputs("SHMKVKC2", cut);
    fclose(cut);
    fx_reopen(f);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_false(f->d.counts_loaded);
    fx_assert_keys(&f->d, 0, 3000, 0);

    /* A write after the save: the file no longer describes the data. */
    assert_int_equal(db_save_counts(&f->d), 0);
    assert_int_equal(db_set(&f->d, 0, K("late"), K("v"), 0, 0, NULL, NULL), 1);
    db_destroy(&f->d);
    memset(&f->d, 0, sizeof f->d);
    struct db_opts o = {0};
    assert_int_equal(db_init(&f->d, f->s, &o), 0);
    assert_false(f->d.counts_loaded);
    fx_assert_keys(&f->d, 0, 3001, 0);

    /* One byte changed, or the file cut short: counted. */
    for (int damage = 0; damage < 2; damage++) {
        assert_int_equal(db_save_counts(&f->d), 0);
        FILE *fp = fopen(path, "r+b");
        assert_non_null(fp);
        if (damage == 0) {
            assert_int_equal(fseek(fp, 5000, SEEK_SET), 0);
            int c = fgetc(fp);
            assert_int_equal(fseek(fp, 5000, SEEK_SET), 0);
            fputc(c ^ 0x10, fp);
            fclose(fp);
        } else {
            fclose(fp);
            assert_int_equal(truncate(path, 1000), 0);
        }
        fx_reopen(f);
        assert_false(f->d.counts_loaded);
        fx_assert_keys(&f->d, 0, 3001, 0);
    }

    /* A filter mostly of deleted keys is not saved: the scan builds a
     * tighter one. */
    for (int i = 0; i < 3000; i++) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_del(&f->d, 0, k, (size_t)kn), 1);
    }
    f->d.keyf_dead_slack = 1000;
    assert_int_equal(db_save_counts(&f->d), 1);
    assert_int_equal(access(path, F_OK), -1);
    fx_reopen(f);
    assert_false(f->d.counts_loaded);
    fx_assert_keys(&f->d, 0, 1, 0);
    fx_assert_keys(&f->d, 9, 1, 0);
    uint64_t bytes, added;
    db_keyf_usage(&f->d.keyf, &bytes, &added);
    assert_int_equal(added, 2); /* built afresh from the live keys */
}

/* Whether the key filter may hold db 0's key k. */
static bool keyf_has(struct db *d, const char *k, size_t kn)
{
    char mk[64];
    size_t n = enc_meta_key(mk, 0, enc_slot(k, kn), k, kn);
    return db_keyf_may(&d->keyf, stor_key_hash(STOR_CF_META, mk, n));
}

/* A filter mostly of deleted keys is built again from the live ones, a
 * slice at a time, while commits go on: keys created before and after the
 * cursor, deleted or not, end up as they should. */
static void keyf_rebuild(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    d->keyf_dead_slack = 1000;
    char k[16];
    for (int i = 0; i < 3000; i++) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
    }
    bool more;
    assert_int_equal(db_keyf_rebuild_step(d, 100, &more), 0);
    assert_false(more || d->keyf_building); /* nothing dead yet */
    for (int i = 0; i < 3000; i += 10) {    /* 300 live ones stay: k0, k10, ... */
        for (int j = i + 1; j < i + 10; j++) {
            int kn = snprintf(k, sizeof k, "k%d", j);
            assert_int_equal(db_del(d, 0, k, (size_t)kn), 1);
        }
    }
    int steps = 0, created = 0;
    do {
        assert_int_equal(db_keyf_rebuild_step(d, 40, &more), 0);
        steps++;
        /* New keys all over the key order while the cursor moves, and a
         * few of the live ones deleted. */
        for (int j = 0; j < 3; j++, created++) {
            int kn = snprintf(k, sizeof k, "n%d", created);
            assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
        }
        int kn = snprintf(k, sizeof k, "k%d", steps * 10);
        if (steps % 4 == 0 && steps * 10 < 3000)
            assert_int_equal(db_del(d, 0, k, (size_t)kn), 1);
    } while (more);
    assert_true(steps > 5); /* in slices */
    assert_false(d->keyf_building);
    assert_int_equal(d->keyf_rebuilds, 1);
    uint64_t bytes, added, live, e;
    assert_int_equal(db_keycount(d, 0, &live, &e), 0);
    db_keyf_usage(&d->keyf, &bytes, &added);
    assert_true(added >= live && added < live + 3 * (uint64_t)steps + 10);
    /* Every live key is in it: a lost one would be taken for new, and
     * counted twice, by the SETs below. */
    for (int i = 0; i < 3000; i += 10) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        if (db_exists(d, 0, k, (size_t)kn))
            assert_true(keyf_has(d, k, (size_t)kn));
    }
    for (int i = 0; i < created; i++) {
        int kn = snprintf(k, sizeof k, "n%d", i);
        assert_true(keyf_has(d, k, (size_t)kn));
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("w"), 0, 0, NULL, NULL), 1);
    }
    fx_assert_keys(d, 0, live, 0);
    /* Most dead keys are gone from it. */
    int dead_maybe = 0;
    for (int i = 1; i < 3000; i += 10) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        dead_maybe += keyf_has(d, k, (size_t)kn);
    }
    assert_true(dead_maybe < 10);
    /* FLUSHALL during a rebuild ends it. */
    for (int i = 0; i < 3000; i++) {
        int kn = snprintf(k, sizeof k, "x%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
        assert_int_equal(db_del(d, 0, k, (size_t)kn), 1);
    }
    assert_int_equal(db_keyf_rebuild_step(d, 10, &more), 0);
    assert_true(more && d->keyf_building);
    assert_int_equal(db_flushall(d), 0);
    assert_false(d->keyf_building);
    assert_int_equal(db_keyf_rebuild_step(d, 10, &more), 0);
    assert_false(more);
}

static void test_db_keyf_rebuild(void **state)
{
    keyf_rebuild(state);
}

/* With write-back and no flusher every record stays in the overlay: the
 * slices, which read RocksDB alone, see none of them, and the overlay's
 * walk at the start has to put every key in. */
static int setup_overlay_only(void **state)
{
    fx_writeback = 2;
    int rc = fx_setup(state);
    fx_writeback = 0;
    return rc;
}

static void test_db_keyf_rebuild_overlay(void **state)
{
    keyf_rebuild(state);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_keycount_kept),
        cmocka_unit_test(test_db_keyf),
        T(test_db_counts_saved),
        T(test_db_keyf_rebuild),
        cmocka_unit_test_setup_teardown(test_db_keyf_rebuild_overlay, setup_overlay_only,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_keycount_kept, fx_setup_blind, fx_teardown),
        /* With write-back and its flusher: writes of keys the overlay no
         * longer holds leave their prior state to the flusher
         * (stor_batch_defer). */
        cmocka_unit_test_setup_teardown(test_db_keycount_kept, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_counts_deferred, fx_setup_wb, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
