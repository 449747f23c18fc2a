/*
 * test_wb_flush — write-back's overlay and flusher: the overlay merged with
 * RocksDB checked against a model under random operations (the real
 * flusher, split into parts or not, moving data underneath), journal
 * record memory, routing a key's records to one part, deferred prior
 * states resolved in order, back-pressure, batches and back-pressure
 * around groups, the flusher's quiet wake-up, range deletes and
 * housekeeping, and the flush batch's sort.
 */
#include "wb_fixture.h"
#include "t_rnd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the model: a sorted map of (cf, key) → value ---- */

#define NKEYS 64
static char model[STOR_CF_COUNT][NKEYS][16]; /* "" with present[] = 0: absent */
static bool present[STOR_CF_COUNT][NKEYS];

static void keyname(int i, char *out)
{
    /* Fixed width: byte order = numeric order. The digits lead, so the
     * parallel flusher's routing (by the first three bytes, wb_route)
     * spreads the keys over its parts. */
    snprintf(out, 8, "%03uk", (unsigned)i % 1000u);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    return t_rnd(&rng);
}

/* Checks point reads and a full scan, forward then backward, with a random
 * seek and turn, against the model. */
static void check_against_model(struct stor *s)
{
    char k[8];
    for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
        for (int i = 0; i < NKEYS; i++) {
            keyname(i, k);
            char *v;
            size_t vn;
            int rc = stor_get(s, cf, k, 4, &v, &vn);
            if (present[cf][i]) {
                assert_int_equal(rc, 0);
                assert_int_equal(vn, strlen(model[cf][i]));
                assert_memory_equal(v, model[cf][i], vn);
                free(v);
            } else {
                assert_int_equal(rc, KV_ENOTFOUND);
            }
        }
        /* The same in one stor_get_many: every key twice, out of order,
         * and more keys than one of its batches takes. */
        enum { MANY = 2 * NKEYS + 9 };
        char names[MANY][8];
        const char *mk[MANY];
        size_t mkn[MANY], mvn[MANY];
        char *mv[MANY];
        int mrc[MANY];
        for (int j = 0; j < MANY; j++) {
            keyname(j * 37 % NKEYS, names[j]);
            mk[j] = names[j];
            mkn[j] = 4;
        }
        stor_get_many(s, cf, MANY, mk, mkn, mv, mvn, mrc);
        for (int j = 0; j < MANY; j++) {
            int i = j * 37 % NKEYS;
            if (present[cf][i]) {
                assert_int_equal(mrc[j], 0);
                assert_int_equal(mvn[j], strlen(model[cf][i]));
                assert_memory_equal(mv[j], model[cf][i], mvn[j]);
                free(mv[j]);
            } else {
                assert_int_equal(mrc[j], KV_ENOTFOUND);
            }
        }
        /* Forward over [k010, k050). */
        struct stor_it *it = stor_it_create(s, cf, "010k", 4, "050k", 4);
        int want = 10;
        for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
            while (want < 50 && !present[cf][want])
                want++;
            size_t kn, vn;
            const char *ik = stor_it_key(it, &kn);
            const char *iv = stor_it_value(it, &vn);
            keyname(want, k);
            assert_int_equal(kn, 4);
            assert_memory_equal(ik, k, 4);
            assert_int_equal(vn, strlen(model[cf][want]));
            assert_memory_equal(iv, model[cf][want], vn);
            want++;
        }
        while (want < 50 && !present[cf][want])
            want++;
        assert_int_equal(want, 50);
        /* Backward from the end. */
        want = 49;
        for (stor_it_last(it); stor_it_valid(it); stor_it_prev(it)) {
            while (want >= 10 && !present[cf][want])
                want--;
            size_t kn;
            const char *ik = stor_it_key(it, &kn);
            keyname(want, k);
            assert_memory_equal(ik, k, 4);
            want--;
        }
        while (want >= 10 && !present[cf][want])
            want--;
        assert_int_equal(want, 9);
        /* A random seek, forward one step, then turn back twice. */
        int at = 10 + (int)(rnd() % 40);
        keyname(at, k);
        stor_it_seek(it, k, 4);
        int fwd = at;
        while (fwd < 50 && !present[cf][fwd])
            fwd++;
        if (fwd == 50) {
            assert_false(stor_it_valid(it));
        } else {
            size_t kn;
            keyname(fwd, k);
            assert_memory_equal(stor_it_key(it, &kn), k, 4);
            stor_it_prev(it);
            int back = fwd - 1;
            while (back >= 10 && !present[cf][back])
                back--;
            if (back < 10) {
                assert_false(stor_it_valid(it));
            } else {
                keyname(back, k);
                assert_memory_equal(stor_it_key(it, &kn), k, 4);
                stor_it_next(it); /* turning again lands on fwd */
                keyname(fwd, k);
                assert_true(stor_it_valid(it));
                assert_memory_equal(stor_it_key(it, &kn), k, 4);
            }
        }
        /* seek_prev from a random point. */
        at = 10 + (int)(rnd() % 40);
        keyname(at, k);
        stor_it_seek_prev(it, k, 4);
        int back = at;
        while (back >= 10 && !present[cf][back])
            back--;
        if (back < 10) {
            assert_false(stor_it_valid(it));
        } else {
            size_t kn;
            keyname(back, k);
            assert_memory_equal(stor_it_key(it, &kn), k, 4);
        }
        assert_int_equal(stor_it_status(it), 0);
        stor_it_free(it);
    }
}

/* Commits b, then lets the flusher and housekeeping move things under the
 * overlay: a sync one time in sync_1in, housekeeping one in hk_1in, a
 * drain one in drain_1in. */
static void commit_stir(struct stor *s, const struct stor_batch *b, unsigned sync_1in,
                        unsigned hk_1in, unsigned drain_1in)
{
    assert_int_equal(stor_commit(s, b), 0);
    if (rnd() % sync_1in == 0)
        assert_int_equal(stor_sync(s), 0);
    if (rnd() % hk_1in == 0)
        stor_housekeep(s);
    if (rnd() % drain_1in == 0)
        assert_int_equal(stor_drain(s), 0);
}

/* Random record sets against a model, read back through the overlay
 * while the flusher moves them into RocksDB; range_every: one op in that
 * many is a range delete (which keeps a flush batch in one part). */
static void overlay_merge_matches_model(void **state, int threads, int range_every)
{
    struct fx *f = *state;
    memset(present, 0, sizeof present);
    struct stor_opts opt = {.flusher_threads = threads};
    struct stor *s = wb_open_ok(f->dir, &opt);
    struct stor_wb_stats st0;
    stor_wb_stats(s, &st0);
    assert_int_equal(st0.flusher_threads, threads);
    struct stor_batch b;
    stor_batch_init(&b);
    char k[8], v[16];
    for (int step = 0; step < 3000; step++) {
        stor_batch_clear(&b);
        int nops = 1 + (int)(rnd() % 4);
        for (int j = 0; j < nops; j++) {
            int cf = (int)(rnd() % STOR_CF_COUNT), i = (int)(rnd() % NKEYS);
            keyname(i, k);
            int what = (int)(rnd() % (unsigned)range_every);
            if (what < range_every * 3 / 5) {
                snprintf(v, sizeof v, "v%d", step);
                stor_batch_put(&b, cf, k, 4, v, strlen(v));
                strcpy(model[cf][i], v);
                present[cf][i] = true;
            } else if (what < range_every - 1) {
                stor_batch_del(&b, cf, k, 4);
                present[cf][i] = false;
            } else {
                int hi = i + 1 + (int)(rnd() % 8);
                if (hi > NKEYS)
                    hi = NKEYS;
                char kh[8];
                keyname(hi, kh);
                stor_batch_del_range(&b, cf, k, 4, kh, 4);
                for (int x = i; x < hi; x++)
                    present[cf][x] = false;
            }
        }
        commit_stir(s, &b, 3, 5, 200);
        if (step % 100 == 0)
            check_against_model(s);
    }
    check_against_model(s);
    assert_int_equal(stor_drain(s), 0);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_true(st.durable_seq == st.last_seq && st.last_seq == 3000);
    assert_int_equal(st.overlay_entries, 0); /* everything reached RocksDB */
    check_against_model(s);
    stor_batch_destroy(&b);
    /* Reopening sees the same data, from RocksDB alone. */
    fx_close(s);
    s = wb_open_ok(f->dir, NULL);
    check_against_model(s);
    fx_close(s);
}

static void test_wb_flush_overlay_merge_matches_model(void **state)
{
    overlay_merge_matches_model(state, 1, 20);
}

/* Four flusher threads, each writing a share of a batch's keys; range
 * deletes rare enough that most batches are split. */
static void test_wb_flush_parallel_flusher_matches_model(void **state)
{
    overlay_merge_matches_model(state, 4, 400);
}

/* Record memory (rec_alloc): record sets of mixed sizes, from a few bytes
 * to past what a chunk takes (one malloc each), cut from chunks that are
 * freed with their last record, while the flusher and housekeeping free
 * them in bursts; every key reads back its last value throughout, after a
 * clean reopen, and after a kill's replay. Under ASan a chunk freed while
 * a record in it is still queued, or a record cut past its chunk, fails:
 * the run with 2 KiB chunks crosses a chunk's end about 150 times, with
 * record sizes of every multiple of 16 the alignment leaves. */
#define MEMKEYS 32

static void memval(char *v, size_t n, int step, int key)
{
    for (size_t j = 0; j < n; j++)
        v[j] = (char)('a' + (j * 7 + (size_t)step * 13 + (size_t)key) % 26);
}

static void memcheck(struct stor *s, const int *last, const size_t *len, char *want)
{
    char k[8];
    for (int i = 0; i < MEMKEYS; i++) {
        snprintf(k, sizeof k, "m%03d", i);
        char *v;
        size_t vn;
        int rc = stor_get(s, 0, k, 4, &v, &vn);
        if (last[i] < 0) {
            assert_int_equal(rc, KV_ENOTFOUND);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(vn, len[i]);
        memval(want, len[i], last[i], i);
        assert_memory_equal(v, want, vn);
        free(v);
    }
}

static void record_memory(void **state, size_t chunk, size_t small, size_t maxv)
{
    struct fx *f = *state;
    static const size_t sizes[] = {3, 200, 3000, 20000, 40000, 120000};
    int last[MEMKEYS];
    size_t len[MEMKEYS];
    for (int i = 0; i < MEMKEYS; i++)
        last[i] = -1;
    char *v = malloc(120000), *want = malloc(120000);
    assert_non_null(v);
    assert_non_null(want);
    struct stor_opts x = {.flush_interval_ms = 5, .flush_batch_bytes = 1u << 20};
    struct wb_test_hooks h = {.rec_chunk_bytes = chunk};
    struct stor *s = wb_open_hooked(f->dir, &x, &h);
    struct stor_batch b;
    stor_batch_init(&b);
    char k[8];
    for (int step = 0; step < 2000; step++) {
        stor_batch_clear(&b);
        int nops = 1 + (int)(rnd() % 3);
        for (int j = 0; j < nops; j++) {
            int i = (int)(rnd() % MEMKEYS);
            snprintf(k, sizeof k, "m%03d", i);
            /* Mostly small, as under load; now and then one that fills a
             * good part of a chunk or needs a block of its own. */
            size_t n = (size_t)(rnd() % small);
            if (rnd() % 10 == 0)
                n = (size_t)(rnd() % (maxv + 1));
            memval(v, n, step, i);
            stor_batch_put(&b, 0, k, 4, v, n);
            last[i] = step;
            len[i] = n;
        }
        commit_stir(s, &b, 2, 3, 300);
        if (step % 250 == 0)
            memcheck(s, last, len, want);
    }
    memcheck(s, last, len, want);
    fx_close(s);
    s = wb_open_ok(f->dir, NULL);
    memcheck(s, last, len, want);
    /* Then as a killed daemon: what was synced comes back by replay. */
    for (int step = 2000; step < 2300; step++) {
        stor_batch_clear(&b);
        int i = step % MEMKEYS;
        size_t n = sizes[step % 6] % (maxv + 1);
        snprintf(k, sizeof k, "m%03d", i);
        memval(v, n, step, i);
        stor_batch_put(&b, 0, k, 4, v, n);
        last[i] = step;
        len[i] = n;
        assert_int_equal(stor_commit(s, &b), 0);
        assert_int_equal(stor_sync(s), 0);
        if (step % 7 == 0)
            stor_housekeep(s);
    }
    fx_abandon(s);
    s = wb_open_ok(f->dir, NULL);
    memcheck(s, last, len, want);
    fx_close(s);
    stor_batch_destroy(&b);
    free(v);
    free(want);
}

static void test_wb_flush_record_memory(void **state)
{
    record_memory(state, 0, 200, 120000); /* the daemon's chunks */
    t_tmp_rmrf(((struct fx *)*state)->dir);
    assert_int_equal(mkdir(((struct fx *)*state)->dir, 0700), 0);
    record_memory(state, 2048, 60, 400);
}

/* Every record of one user key goes to the same flusher part: a new key's
 * meta and sub records must reach RocksDB together, or a compaction between
 * two parts' writes could judge the sub records dead. */
static void test_wb_flush_route_keeps_a_key_together(void **state)
{
    (void)state;
    char meta[64], sub[96], score[96], exp[64];
    uint32_t seen[8];
    for (unsigned i = 0; i < 8; i++) {
        char key[16];
        snprintf(key, sizeof key, "user:%u", i * 7919u);
        uint16_t slot = enc_slot(key, strlen(key));
        unsigned db = i % 3;
        size_t mn = enc_meta_key(meta, db, slot, key, strlen(key));
        size_t sn = enc_sub_prefix(sub, db, slot, key, strlen(key), 42);
        memcpy(sub + sn, "field", 5);
        size_t cn = enc_sub_prefix(score, db, slot, key, strlen(key), 42);
        enc_score_put(score + cn, 1.5);
        memcpy(score + cn + 8, "member", 6);
        size_t en = enc_expiry_key(exp, db, 1700000000000ull + i, slot, key, strlen(key));
        uint32_t r = wb_route(STOR_CF_META, meta, mn);
        assert_int_equal(r, (uint32_t)db << 16 | slot);
        assert_int_equal(wb_route(STOR_CF_SUB, sub, sn + 5), r);
        assert_int_equal(wb_route(STOR_CF_SCORE, score, cn + 14), r);
        assert_int_equal(wb_route(STOR_CF_EXPIRY, exp, en), r);
        seen[i] = r;
        for (unsigned j = 0; j < i; j++)
            assert_int_not_equal(seen[j], r); /* and different keys spread */
    }
}

/* The hazard wb_route prevents, staged: one record set creates 64 hashes
 * (meta record + two fields each); the flusher splits it over 4 parts and
 * holds its own part while the helpers' are in RocksDB; then the sub CF is
 * flushed and compacted, running the GC filter, which judges each field by
 * its meta record in RocksDB. Had a key's meta record been held back while
 * its fields were written, the filter would have dropped them for good. */
static void test_wb_flush_split_batch_survives_compaction(void **state)
{
    struct fx *f = *state;
    struct stor_opts extra = {.flusher_threads = 4};
    struct stor *s = wb_open_ok(f->dir, &extra);
    assert_int_equal(s->fl.nparts, 4);
    enum { N = 64 };
    struct stor_batch b;
    stor_batch_init(&b);
    char k[64], v[64];
    for (unsigned i = 0; i < N; i++) {
        char key[16];
        snprintf(key, sizeof key, "hash:%u", i);
        uint16_t slot = enc_slot(key, strlen(key));
        struct enc_meta m = {.type = ENC_TYPE_HASH, .version = 1000 + i, .size = 2};
        size_t kn = enc_meta_key(k, 0, slot, key, strlen(key));
        stor_batch_put(&b, STOR_CF_META, k, kn, v, enc_meta_value(v, &m));
        for (int j = 0; j < 2; j++) {
            kn = enc_sub_prefix(k, 0, slot, key, strlen(key), m.version);
            k[kn++] = (char)('a' + j);
            stor_batch_put(&b, STOR_CF_SUB, k, kn, "value", 5);
        }
    }
    __atomic_store_n(&wb_test_hooks.hold, 1, __ATOMIC_RELEASE);
    assert_int_equal(stor_commit(s, &b), 0);
    assert_int_equal(stor_sync(s), 0); /* hands it to the flusher */
    stor_batch_destroy(&b);
    for (int t = 0; t < 5000 && !__atomic_load_n(&wb_test_hooks.held, __ATOMIC_ACQUIRE); t++)
        usleep(1000);
    assert_true(__atomic_load_n(&wb_test_hooks.held, __ATOMIC_ACQUIRE));
    pthread_mutex_lock(&s->fl.pmu);
    for (int t = 0; t < 5000 && s->fl.pndone < s->fl.nparts - 1; t++) {
        pthread_mutex_unlock(&s->fl.pmu);
        usleep(1000);
        pthread_mutex_lock(&s->fl.pmu);
    }
    assert_int_equal(s->fl.pndone, s->fl.nparts - 1); /* the helpers' parts are in RocksDB */
    pthread_mutex_unlock(&s->fl.pmu);
    /* stor_compact would wait for the flusher: compact under it. */
    char *err = NULL;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush_cf(s->db, fo, s->cf[STOR_CF_SUB], &err);
    rocksdb_flushoptions_destroy(fo);
    assert_null(err);
    rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
    rocksdb_compactoptions_set_bottommost_level_compaction(co, 1);
    rocksdb_compact_range_cf_opt(s->db, s->cf[STOR_CF_SUB], co, NULL, 0, NULL, 0);
    rocksdb_compactoptions_destroy(co);
    __atomic_store_n(&wb_test_hooks.hold, 0, __ATOMIC_RELEASE);
    assert_int_equal(stor_drain(s), 0);
    stor_housekeep(s);
    /* Every field is there, read from RocksDB (the overlay has let go). */
    for (unsigned i = 0; i < N; i++) {
        char key[16];
        snprintf(key, sizeof key, "hash:%u", i);
        uint16_t slot = enc_slot(key, strlen(key));
        for (int j = 0; j < 2; j++) {
            size_t kn = enc_sub_prefix(k, 0, slot, key, strlen(key), 1000 + i);
            k[kn++] = (char)('a' + j);
            char *got;
            size_t gn;
            if (stor_get(s, STOR_CF_SUB, k, kn, &got, &gn) != 0)
                fail_msg("hash:%u field %c lost", i, 'a' + j);
            free(got);
        }
    }
    fx_close(s);
}

/* min-free-disk counts what write-back accepted and RocksDB does not have
 * yet, four times over: a flush batch lands on disk at once. 128 MiB queued
 * (no flusher) count as 512 MiB, so a minimum 256 MiB below the free space
 * turns low; the margins leave room for other processes' files. */
static void test_wb_flush_disk_counts_queued(void **state)
{
    struct fx *f = *state;
    struct stor_opts x = {0};
    struct wb_test_hooks h = {.no_flusher = 1};
    struct stor *s = wb_open_hooked(f->dir, &x, &h); /* its files made first */
    struct statvfs sv;
    assert_int_equal(statvfs(f->dir, &sv), 0);
    uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    if (avail < (1u << 30)) {
        fx_abandon(s);
        skip(); /* too little room here to tell */
    }
    /* Tests running beside this one write and delete files meanwhile:
     * with margins of 32 MiB, 1 run in 10 failed here beside a CI run. */
    uint64_t min = avail - (256u << 20);
    char msg[256];
    assert_int_equal(stor_disk_check(s, min, NULL), 0); /* nothing queued: room */
    assert_int_equal(stor_write_error(s, msg, sizeof msg), 0);
    static char v[4096];
    memset(v, 'v', sizeof v);
    commit_puts(s, "q", 32768, v, sizeof v);
    assert_int_equal(stor_disk_check(s, min, NULL), 1); /* turned low */
    assert_int_not_equal(stor_write_error(s, msg, sizeof msg), 0);
    fx_abandon(s);
}

/* Deferred writes reach the resolver in commit order, once each, with
 * what RocksDB held before them: across record sets of one and of several
 * deferred ops (a MultiGet's chunk then ends inside one), past the ring's
 * first size, and with its head moved on before it grows. */
struct rs_seen {
    int next, bad, folds;
};

static void rs_key(char *k, int i)
{
    snprintf(k, 16, "rk%05d", i);
}

static void rs_resolve(void *arg, int kind, const char *k, size_t kn, const char *v, size_t vn,
                       const char *old, size_t oldn, bool had)
{
    struct rs_seen *r = arg;
    char want[16], was[16];
    int i = r->next++;
    rs_key(want, i);
    int wn = snprintf(was, sizeof was, "a%d", i);
    bool ok = kn == strlen(want) && !memcmp(k, want, kn) &&
              kind == (i % 7 == 3 ? STOR_OP_DEL : STOR_OP_PUT) &&
              (kind == STOR_OP_DEL || (vn == 1 && v[0] == 'b')) && had == (i < 1000) &&
              (!had || (oldn == (size_t)wn && !memcmp(old, was, oldn)));
    r->bad += !ok;
}

static void rs_fold(void *arg)
{
    ((struct rs_seen *)arg)->folds++;
}

static void test_wb_flush_resolve_in_order(void **state)
{
    struct fx *f = *state;
    struct stor *s = open_without_wb(f->dir); /* straight to RocksDB */
    struct stor_batch b;
    stor_batch_init(&b);
    char k[16], v[16];
    for (int i = 0; i < 1000; i++) {
        rs_key(k, i);
        snprintf(v, sizeof v, "a%d", i);
        stor_batch_clear(&b);
        stor_batch_put(&b, STOR_CF_META, k, strlen(k), v, strlen(v));
        assert_int_equal(stor_commit(s, &b), 0);
    }
    fx_close(s);
    struct stor_opts x = {0};
    struct wb_test_hooks h = {.no_flusher = 1};
    s = wb_open_hooked(f->dir, &x, &h);
    struct rs_seen seen = {0};
    stor_set_resolver(s, rs_resolve, &seen);
    assert_true(stor_can_defer(s));
    /* Keys 1000 on were never written. */
    int i = 0;
    for (int round = 0; round < 2; round++) {
        int upto = round ? 1200 : 300;
        while (i < upto) {
            stor_batch_clear(&b);
            stor_batch_put(&b, STOR_CF_SUB, "other", 5, "x", 1); /* not deferred */
            int nd = i % 5 == 0 ? 3 : 1;
            for (int j = 0; j < nd && i < upto; j++, i++) {
                rs_key(k, i);
                if (i % 7 == 3)
                    stor_batch_del(&b, STOR_CF_META, k, strlen(k));
                else
                    stor_batch_put(&b, STOR_CF_META, k, strlen(k), "b", 1);
                stor_batch_defer(&b, b.nops - 1);
            }
            assert_int_equal(stor_commit(s, &b), 0);
        }
        assert_int_equal(seen.next, round ? 300 : 0); /* nothing before a settle */
        assert_int_equal(stor_resolve_settle(s, true, rs_fold, &seen), 0);
        assert_int_equal(seen.next, upto);
        assert_int_equal(seen.bad, 0);
    }
    assert_int_equal(stor_resolve_settle(s, true, rs_fold, &seen), 0);
    assert_int_equal(seen.next, 1200); /* once each */
    assert_int_equal(seen.folds, 3);
    stor_batch_destroy(&b);
    fx_abandon(s);
}

/* Active expiry leaves alone what is not an index entry. The storage layer
 * keeps its applied sequence number in the expiry family too; a reap that
 * deleted it as a bad entry left that family with none whenever a kill -9
 * came before the flusher's next batch put it back (as a split batch's
 * last write), and the next start, replaying from 0, refused the journal
 * ("bad record at offset 0 (after sequence 0)", test_crash). */
static void test_wb_flush_reap_keeps_applied(void **state)
{
    struct fx *f = *state;
    struct stor *s = wb_open_ok(f->dir, NULL);
    commit_n(s, 0, 10);
    fx_close(s); /* drained: every family holds its applied number */
    struct stor_opts x = {0};
    struct wb_test_hooks h = {.no_flusher = 1};
    s = wb_open_hooked(f->dir, &x, &h);
    struct db d;
    assert_int_equal(db_init(&d, s, NULL), 0);
    uint64_t reaped;
    bool more;
    assert_int_equal(db_reap(&d, 100, &reaped, &more), 0); /* the first scans */
    assert_int_equal(reaped, 0);
    for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
        char *v;
        size_t vn;
        assert_int_equal(stor_get(s, cf, STOR_APPLIED_KEY, STOR_APPLIED_KEYLEN, &v, &vn), 0);
        free(v);
    }
    db_destroy(&d);
    fx_abandon(s);
}

static void test_wb_flush_backpressure(void **state)
{
    struct fx *f = *state;
    /* The flusher waits 300 ms unless 2 MiB fill its batch or the writes
     * stop, and the overlay may hold 16 KiB: the executor must wait,
     * however fast either side is; and its wait wakes the flusher
     * (otherwise each wait would last until the flusher saw the writes
     * stop, 10 ms). */
    struct stor_opts x = {
        .flush_interval_ms = 300, .flush_batch_bytes = 2u << 20, .overlay_max_bytes = 16u << 10};
    struct stor *s = wb_open_ok(f->dir, &x);
    struct stor_batch b;
    stor_batch_init(&b);
    char k[16], v[1000];
    memset(v, 'x', sizeof v);
    for (int i = 0; i < 2500; i++) {
        snprintf(k, sizeof k, "bp%06d", i);
        stor_batch_clear(&b);
        stor_batch_put(&b, STOR_CF_SUB, k, strlen(k), v, sizeof v);
        assert_int_equal(stor_commit(s, &b), 0);
        stor_housekeep(s);
    }
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_true(st.waits > 0);                   /* the executor did wait for the flusher */
    assert_true(st.overlay_bytes < (64u << 10)); /* and the overlay stayed bounded */
    /* Woken, each time: a flusher left to notice that writes stopped would
     * take 10 ms a wait (WB_QUIET_MS), a whole flush of 16 KiB about a
     * tenth of that here. */
    assert_true(st.wait_us < st.waits * 5000);
    /* Nothing was dropped. */
    for (int i = 0; i < 2500; i += 97) {
        char *got;
        size_t gn;
        snprintf(k, sizeof k, "bp%06d", i);
        assert_int_equal(stor_get(s, STOR_CF_SUB, k, strlen(k), &got, &gn), 0);
        assert_int_equal(gn, sizeof v);
        free(got);
    }
    uint64_t n; /* the test's own keys: the family also holds the applied marker */
    assert_int_equal(stor_count(s, STOR_CF_SUB, "bp", 2, "bq", 2, &n), 0);
    assert_int_equal(n, 2500);
    stor_batch_destroy(&b);
    fx_close(s);
}

/* A group's records reach the flusher together, after the group, and a
 * batch ends only at a group's end, however small the batch size; inside
 * the group, back-pressure does not wait for the group's own records (it
 * could not: the flusher cannot have them), so the overlay can exceed its
 * limit by one group. Outside groups both limits apply as before. */
static void test_wb_flush_group_whole_batches(void **state)
{
    struct fx *f = *state;
    struct stor_opts x = {
        .flush_interval_ms = 0, .flush_batch_bytes = 4096, .overlay_max_bytes = 16u << 10};
    struct stor *s = wb_open_ok(f->dir, &x);
    char v[1000];
    memset(v, 'g', sizeof v);
    stor_group_begin(s);
    commit_puts(s, "grp", 200, v, sizeof v);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.waits, 0);
    assert_true(st.overlay_bytes > 200 * sizeof v);
    assert_int_equal(st.durable_seq, 0);
    stor_group_end(s);
    assert_int_equal(stor_drain(s), 0);
    stor_wb_stats(s, &st);
    assert_int_equal(st.durable_seq, 200);
    assert_int_equal(st.flush_batches, 1); /* 200 KiB in one batch of "4 KiB" */
    uint64_t batches = st.flush_batches;
    commit_puts(s, "solo", 20, v, sizeof v);
    assert_int_equal(stor_drain(s), 0);
    stor_wb_stats(s, &st);
    assert_true(st.flush_batches - batches >= 4); /* 4 KiB batches again */
    fx_close(s);
}

/* Syncs the journal and waits (5 s at most) for the flusher to make every
 * commit durable; returns the microseconds it took. */
static uint64_t wait_all_durable(struct stor *s)
{
    assert_int_equal(stor_sync(s), 0);
    uint64_t t0 = stor_mono_us();
    struct stor_wb_stats st;
    do {
        usleep(1000);
        stor_wb_stats(s, &st);
    } while (st.durable_seq < st.last_seq && stor_mono_us() - t0 < 5u * 1000 * 1000);
    assert_int_equal(st.durable_seq, st.last_seq);
    return stor_mono_us() - t0;
}

/* A batch is waited for only while writes keep coming: once they stop,
 * the flusher writes what it has within about WB_QUIET_MS (10 ms), not
 * after the whole interval (here 10 s), over all its parts. */
static void test_wb_flush_quiet(void **state)
{
    struct fx *f = *state;
    struct stor_opts x = {.flush_interval_ms = 10000};
    struct stor *s = wb_open_ok(f->dir, &x);
    struct stor_batch b;
    stor_batch_init(&b);
    char k[16];
    for (int i = 0; i < 10; i++) {
        snprintf(k, sizeof k, "q%d", i);
        stor_batch_clear(&b);
        stor_batch_put(&b, STOR_CF_SUB, k, strlen(k), "v", 1);
        assert_int_equal(stor_commit(s, &b), 0);
    }
    assert_true(wait_all_durable(s) < 2u * 1000 * 1000); /* 10 ms and a flush, not 10 s */
    /* By default, a part per 4 CPUs under load and one per CPU (up to 8)
     * once the writers are quiet: this batch went to all of them, and
     * every key reads back from RocksDB once the overlay lets go. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int load = ncpu >= 16 ? 4 : ncpu >= 8 ? 2 : 1;
    assert_int_equal(s->fl.nload, load);
    assert_int_equal(s->fl.nparts, ncpu > 8 ? 8 : ncpu > load ? (int)ncpu : load);
    pthread_mutex_lock(&s->fl.pmu);
    assert_int_equal(s->fl.pgen, s->fl.nparts > 1 ? 1 : 0);
    pthread_mutex_unlock(&s->fl.pmu);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.flusher_threads, load);
    stor_housekeep(s);
    for (int i = 0; i < 10; i++) {
        snprintf(k, sizeof k, "q%d", i);
        char *got;
        size_t gn;
        assert_int_equal(stor_get(s, STOR_CF_SUB, k, strlen(k), &got, &gn), 0);
        assert_int_equal(gn, 1);
        free(got);
    }
    stor_batch_destroy(&b);
    fx_close(s);
}

/* A record larger than twice a batch (here 4 MiB against 1 MiB batches)
 * leaves no WriteBatch of that size behind once written, whether the
 * batch went as one part or several; it reads back whole. */
static void test_wb_flush_big_record_shed(void **state)
{
    struct fx *f = *state;
    struct stor_opts x = {.flush_batch_bytes = 1u << 20};
    struct stor *s = wb_open_ok(f->dir, &x);
    struct stor_batch b;
    stor_batch_init(&b);
    size_t n = 4u << 20;
    char *v = malloc(n);
    memset(v, 'b', n);
    stor_batch_put(&b, STOR_CF_META, K("big"), v, n);
    assert_int_equal(stor_commit(s, &b), 0);
    wait_all_durable(s);
    for (int i = 0; i < s->fl.nparts; i++) {
        size_t held;
        rocksdb_writebatch_data(s->fl.parts[i].wb, &held);
        assert_true(held <= 2 * s->fl.batch_max);
    }
    stor_housekeep(s);
    char *got;
    size_t gn;
    assert_int_equal(stor_get(s, STOR_CF_META, K("big"), &got, &gn), 0);
    assert_int_equal(gn, n);
    assert_memory_equal(got, v, n);
    free(got);
    free(v);
    stor_batch_destroy(&b);
    fx_close(s);
}

/* Housekeeping forgets a slice at a time; a range delete that is durable
 * must not outlive the records written after it that the slice already
 * forgot, or it hides them in RocksDB (a key set right after FLUSHALL read
 * as missing until the slice caught up). Here: the range, a key inside it,
 * then 320 KiB of other records; one housekeeping call while nothing is
 * durable spends the credit, then one call once all is durable forgets
 * the range's record, the key's and 64 KiB of the rest. */
static void test_wb_flush_range_outlives_slice(void **state)
{
    struct fx *f = *state;
    struct stor_opts x = {.flush_interval_ms = 10000};
    struct stor *s = wb_open_ok(f->dir, &x);
    struct stor_batch b;
    stor_batch_init(&b);
    static char big[8192];
    memset(big, 'x', sizeof big);
    bool checked = false;
    for (int round = 0; round < 5 && !checked; round++) {
        stor_batch_clear(&b);
        stor_batch_del_range(&b, STOR_CF_SUB, "a", 1, "b", 1);
        assert_int_equal(stor_commit(s, &b), 0);
        char k[16];
        snprintf(k, sizeof k, "a%d", round);
        stor_batch_clear(&b);
        stor_batch_put(&b, STOR_CF_SUB, k, strlen(k), "kept", 4);
        assert_int_equal(stor_commit(s, &b), 0);
        commit_puts(s, "z", 40, big, sizeof big);
        struct stor_wb_stats st;
        stor_wb_stats(s, &st);
        uint64_t first = st.last_seq - 41; /* the range's record set */
        stor_housekeep(s);
        /* The scenario needs the flusher still waiting (it waits 10 ms
         * for more writes); a slow machine may miss it: try again. */
        checked = st.durable_seq < first;
        wait_all_durable(s);
        stor_wb_stats(s, &st);
        stor_housekeep(s);
        if (checked)
            assert_true(s->j.pruned_seq > first && s->j.pruned_seq < st.durable_seq);
        char *v = NULL;
        size_t vn = 0;
        assert_int_equal(stor_get(s, STOR_CF_SUB, k, strlen(k), &v, &vn), 0);
        assert_memory_equal(v, "kept", 4);
        free(v);
        struct stor_it *it = stor_it_create(s, STOR_CF_SUB, "a", 1, "b", 1);
        int n = 0;
        for (stor_it_first(it); stor_it_valid(it); stor_it_next(it))
            n++;
        assert_int_equal(stor_it_status(it), 0);
        stor_it_free(it);
        assert_int_equal(n, 1);
        assert_int_equal(stor_drain(s), 0);
    }
    assert_true(checked);
    stor_batch_destroy(&b);
    fx_close(s);
}

/* The flush batch's sort: its order is a comparison sort's of (cf, key,
 * ord), over keys that are prefixes of others, hold zero bytes, repeat,
 * share more than the radix sort's deepest chunk, or look like the meta
 * keys of redis-benchmark's SETs; at sizes either side of where it turns
 * from insertion to a comparison sort to a radix sort. Each write that a
 * later one of its key follows is marked as replaced, and only those. */
static int ref_cmp(const void *pa, const void *pb)
{
    const struct wb_fop *a = pa, *b = pb;
    if (a->cf != b->cf)
        return a->cf < b->cf ? -1 : 1;
    int c = memcmp(a->k, b->k, a->kn < b->kn ? a->kn : b->kn);
    if (c)
        return c;
    if (a->kn != b->kn)
        return a->kn < b->kn ? -1 : 1;
    return (a->ord > b->ord) - (a->ord < b->ord);
}

static void test_wb_flush_batch_sort(void **state)
{
    (void)state;
    enum { MAXN = 6000, KEYMAX = 80 };
    static const size_t sizes[] = {0, 1, 2, 24, 25, 255, 256, 257, 1000, MAXN};
    struct wb_fop *f = calloc(MAXN, sizeof *f), *ref = calloc(MAXN, sizeof *ref);
    char *pool = calloc(MAXN, KEYMAX);
    struct wb_sitem *buf = NULL;
    size_t cap = 0;
    uint64_t r = 11;
    assert_non_null(f);
    assert_non_null(ref);
    assert_non_null(pool);
    for (int shape = 0; shape < 6; shape++) {
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            size_t n = sizes[si];
            for (size_t i = 0; i < n; i++) {
                char *k = pool + i * KEYMAX;
                size_t kn = 0;
                int cf = (int)(t_rnd(&r) % STOR_CF_COUNT);
                static const char alpha[] = {0, 1, (char)0xff};
                if (shape == 0) { /* short, from three letters: prefixes, zeros */
                    kn = t_rnd(&r) % 16;
                    for (size_t j = 0; j < kn; j++)
                        k[j] = alpha[t_rnd(&r) % 3];
                } else if (shape == 1) { /* a long shared prefix */
                    kn = 60 + t_rnd(&r) % 12;
                    memset(k, 'p', 60);
                    for (size_t j = 60; j < kn; j++)
                        k[j] = alpha[t_rnd(&r) % 3];
                } else if (shape == 2) { /* few keys, written many times */
                    uint64_t which = t_rnd(&r) % 7;
                    kn = (size_t)(which * 5);
                    memset(k, 'a' + (int)which, kn);
                    cf = STOR_CF_META;
                } else if (shape == 3) { /* meta keys of key:%012d */
                    uint32_t u = (uint32_t)(t_rnd(&r) % 3000);
                    kn = enc_meta_key(k, 0, (uint16_t)(t_rnd(&r) % 16384), "key:000000000000", 16);
                    for (int j = 0; j < 12; j++, u /= 10)
                        k[kn - 1 - j] = (char)('0' + u % 10);
                    cf = STOR_CF_META;
                } else if (shape == 4) { /* one shared stem, then random tails */
                    kn = 20 + t_rnd(&r) % 30;
                    memset(k, 's', 20);
                    for (size_t j = 20; j < kn; j++)
                        k[j] = (char)t_rnd(&r);
                } else { /* keys of one another's prefixes, ending at every depth */
                    kn = t_rnd(&r) % 41;
                    memset(k, 'x', kn);
                    k[kn++] = alpha[t_rnd(&r) % 3];
                    cf = STOR_CF_SUB;
                }
                f[i] = (struct wb_fop){k,           NULL,        (uint32_t)kn, 0,
                                       (uint32_t)i, STOR_OP_PUT, (uint8_t)cf};
            }
            memcpy(ref, f, n * sizeof *f);
            qsort(ref, n, sizeof *ref, ref_cmp);
            const struct wb_sitem *o = wb_fops_order(f, n, &buf, &cap);
            for (size_t j = 0; j < n; j++) {
                if (f[o[j].i].ord != ref[j].ord)
                    fail_msg("shape %d, n %zu: item %zu is write %u, not %u", shape, n, j,
                             f[o[j].i].ord, ref[j].ord);
                bool dup = j + 1 < n && ref[j].cf == ref[j + 1].cf && ref[j].kn == ref[j + 1].kn &&
                           memcmp(ref[j].k, ref[j + 1].k, ref[j].kn) == 0;
                if (dup != ((o[j].flags & WB_SITEM_DUP) != 0))
                    fail_msg("shape %d, n %zu: item %zu %s replaced", shape, n, j,
                             dup ? "is not marked" : "is marked, not");
            }
        }
    }
    free(buf);
    free(pool);
    free(ref);
    free(f);
}

/* ---- the journal in shared memory ----
 * The tests stand a folder of their own in for the tmpfs: what differs is
 * only where the files are. */

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_dir, teardown_dir)
    const struct CMUnitTest tests[] = {
        T(test_wb_flush_overlay_merge_matches_model),
        T(test_wb_flush_parallel_flusher_matches_model),
        T(test_wb_flush_record_memory),
        T(test_wb_flush_route_keeps_a_key_together),
        T(test_wb_flush_split_batch_survives_compaction),
        T(test_wb_flush_disk_counts_queued),
        T(test_wb_flush_resolve_in_order),
        T(test_wb_flush_reap_keeps_applied),
        T(test_wb_flush_backpressure),
        T(test_wb_flush_group_whole_batches),
        T(test_wb_flush_quiet),
        T(test_wb_flush_big_record_shed),
        T(test_wb_flush_range_outlives_slice),
        T(test_wb_flush_batch_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
