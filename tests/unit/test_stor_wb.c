/*
 * test_stor_wb — write-back: the overlay merged with RocksDB checked against
 * a model under random operations (the real flusher moving data underneath),
 * journal replay (clean, torn last record, bad checksum, empty, unsynced),
 * and back-pressure.
 */
#include "fixture.h"
#include "stor_int.h"
#include "t_rnd.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

static struct stor *wb_open_dir(const char *dir, const struct stor_opts *extra, int *rc,
                                const char **err)
{
    struct stor_opts o = {.dir = dir, .block_cache_bytes = 8u << 20,
                          .write_buffer_bytes = 4u << 20, .background_jobs = 2,
                          .writeback = 1};
    if (extra) {
        o.flush_interval_ms = extra->flush_interval_ms;
        o.flush_batch_bytes = extra->flush_batch_bytes;
        o.overlay_max_bytes = extra->overlay_max_bytes;
        o.journal_segment_bytes = extra->journal_segment_bytes;
        o.test_no_flusher = extra->test_no_flusher;
        o.fsync = extra->fsync;
    }
    struct stor *s = NULL;
    *err = NULL;
    *rc = stor_open(&s, &o, err);
    return s;
}

static struct stor *wb_open_ok(const char *dir, const struct stor_opts *extra)
{
    int rc;
    const char *err;
    struct stor *s = wb_open_dir(dir, extra, &rc, &err);
    if (rc)
        fail_msg("stor_open: %d %s", rc, err ? err : "");
    return s;
}

static int setup_dir(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/shmkv-wb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static int teardown_dir(void **state)
{
    struct fx *f = *state;
    fx_rmrf(f->dir);
    free(f);
    return 0;
}

/* ---- the model: a sorted map of (cf, key) → value ---- */

#define NKEYS 64
static char model[STOR_CF_COUNT][NKEYS][16]; /* "" with present[] = 0: absent */
static bool present[STOR_CF_COUNT][NKEYS];

static void keyname(int i, char *out)
{
    snprintf(out, 8, "k%03u", (unsigned)i % 1000u); /* fixed width: byte order = numeric order */
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
                assert_int_equal(rc, ENC_ENOTFOUND);
            }
        }
        /* Forward over [k010, k050). */
        struct stor_it *it = stor_it_create(s, cf, "k010", 4, "k050", 4);
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

static void test_stor_wb_overlay_merge_matches_model(void **state)
{
    struct fx *f = *state;
    memset(present, 0, sizeof present);
    struct stor *s = wb_open_ok(f->dir, NULL);
    struct stor_batch b;
    stor_batch_init(&b);
    char k[8], v[16];
    for (int step = 0; step < 3000; step++) {
        stor_batch_clear(&b);
        int nops = 1 + (int)(rnd() % 4);
        for (int j = 0; j < nops; j++) {
            int cf = (int)(rnd() % STOR_CF_COUNT), i = (int)(rnd() % NKEYS);
            keyname(i, k);
            int what = (int)(rnd() % 20);
            if (what < 12) {
                snprintf(v, sizeof v, "v%d", step);
                stor_batch_put(&b, cf, k, 4, v, strlen(v));
                strcpy(model[cf][i], v);
                present[cf][i] = true;
            } else if (what < 19) {
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
        assert_int_equal(stor_commit(s, &b), 0);
        /* Let the flusher and housekeeping move things under the overlay. */
        if (rnd() % 3 == 0)
            assert_int_equal(stor_sync(s), 0);
        if (rnd() % 5 == 0)
            stor_housekeep(s);
        if (rnd() % 200 == 0)
            assert_int_equal(stor_drain(s), 0);
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
    stor_close(s);
    s = wb_open_ok(f->dir, NULL);
    check_against_model(s);
    stor_close(s);
}

/* Commits n record sets "r<i>" = "v<i>" in the metadata CF. */
static void commit_n(struct stor *s, int from, int n)
{
    struct stor_batch b;
    stor_batch_init(&b);
    for (int i = from; i < from + n; i++) {
        char k[16], v[16];
        snprintf(k, sizeof k, "r%05d", i);
        snprintf(v, sizeof v, "v%d", i);
        stor_batch_clear(&b);
        stor_batch_put(&b, STOR_CF_META, k, strlen(k), v, strlen(v));
        stor_batch_put(&b, STOR_CF_SUB, k, strlen(k), v, strlen(v)); /* a set of two */
        assert_int_equal(stor_commit(s, &b), 0);
    }
    stor_batch_destroy(&b);
}

static int count_present(struct stor *s, int n)
{
    int found = 0;
    for (int i = 0; i < n; i++) {
        char k[16], *v;
        size_t vn;
        snprintf(k, sizeof k, "r%05d", i);
        int a = stor_get(s, STOR_CF_META, k, strlen(k), &v, &vn) == 0;
        if (a)
            free(v);
        int b = stor_get(s, STOR_CF_SUB, k, strlen(k), &v, &vn) == 0;
        if (b)
            free(v);
        assert_int_equal(a, b); /* a record set is all or nothing */
        found += a;
    }
    return found;
}

/* The journal file (there is one after a single segment's worth). */
static void journal_file(const char *dir, char *out, size_t cap)
{
    char jd[300];
    snprintf(jd, sizeof jd, "%s/journal", dir);
    DIR *d = opendir(jd);
    assert_non_null(d);
    struct dirent *e;
    out[0] = '\0';
    while ((e = readdir(d)))
        if (strlen(e->d_name) == 16)
            snprintf(out, cap, "%s/%s", jd, e->d_name);
    closedir(d);
    assert_true(out[0] != '\0');
}

static void test_stor_wb_replay_clean_and_unsynced(void **state)
{
    struct fx *f = *state;
    struct stor_opts x = {.test_no_flusher = 1};
    struct stor *s = wb_open_ok(f->dir, &x);
    commit_n(s, 0, 100);
    assert_int_equal(stor_sync(s), 0);
    commit_n(s, 100, 5); /* committed, never synced: never acknowledged */
    assert_int_equal(count_present(s, 105), 105);
    stor_close_abandon(s); /* as kill -9: nothing reached RocksDB */
    s = wb_open_ok(f->dir, NULL);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.replayed_sets, 100);
    assert_int_equal(count_present(s, 105), 100);
    /* Sequence numbers continue after the replayed ones. */
    commit_n(s, 200, 1);
    stor_wb_stats(s, &st);
    assert_int_equal(st.last_seq, 101);
    stor_close(s);
    /* An empty journal (a clean close removes it) replays nothing. */
    s = wb_open_ok(f->dir, NULL);
    stor_wb_stats(s, &st);
    assert_int_equal(st.replayed_sets, 0);
    assert_int_equal(count_present(s, 105), 100);
    stor_close(s);
}

/* Leaves a journal of 50 synced record sets that never reached RocksDB, as
 * a killed daemon would; *path receives the journal file. */
static void journal_of_50(const char *dir, char *path, size_t cap)
{
    struct stor_opts x = {.test_no_flusher = 1};
    struct stor *s = wb_open_ok(dir, &x);
    commit_n(s, 0, 50);
    assert_int_equal(stor_sync(s), 0);
    stor_close_abandon(s);
    journal_file(dir, path, cap);
}

static void test_stor_wb_replay_torn_last_record(void **state)
{
    struct fx *f = *state;
    char path[400];
    journal_of_50(f->dir, path, sizeof path);
    struct stat st0;
    assert_int_equal(stat(path, &st0), 0);
    assert_int_equal(truncate(path, st0.st_size - 3), 0); /* a write cut short */
    struct stor *s = wb_open_ok(f->dir, NULL);
    assert_int_equal(count_present(s, 50), 49);
    stor_close(s);
}

static void test_stor_wb_replay_bad_checksum_refuses(void **state)
{
    struct fx *f = *state;
    char path[400];
    journal_of_50(f->dir, path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    char c;
    assert_int_equal(pread(fd, &c, 1, 30), 1); /* inside the first record's payload */
    c ^= 0x40;
    assert_int_equal(pwrite(fd, &c, 1, 30), 1);
    close(fd);
    int rc;
    const char *err;
    struct stor *s = wb_open_dir(f->dir, NULL, &rc, &err);
    assert_int_equal(rc, ENC_ECORRUPT);
    assert_null(s);
    assert_non_null(err);
    assert_non_null(strstr(err, "bad record at offset 0"));
}

static void test_stor_wb_backpressure(void **state)
{
    struct fx *f = *state;
    /* The flusher waits 300 ms unless a 2 MiB batch fills, and the overlay
     * may hold 1 MiB: the executor must wait, however fast either side is. */
    struct stor_opts x = {.flush_interval_ms = 300, .flush_batch_bytes = 2u << 20,
                          .overlay_max_bytes = 1u << 20};
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
    assert_true(st.waits > 0); /* the executor did wait for the flusher */
    assert_true(st.overlay_bytes < (2u << 20)); /* and the overlay stayed bounded */
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
    stor_close(s);
}

/* The journal's checksum: RFC 3720's CRC-32C test vectors, and the fast
 * path against the table over every alignment and length, chained. */
static void test_stor_wb_crc32c(void **state)
{
    (void)state;
    unsigned char z[32], ff[32], up[32];
    memset(z, 0, sizeof z);
    memset(ff, 0xff, sizeof ff);
    for (int i = 0; i < 32; i++)
        up[i] = (unsigned char)i;
    assert_int_equal(wb_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(wb_crc32c(0, z, 32), 0x8a9136aau);
    assert_int_equal(wb_crc32c(0, ff, 32), 0x62a8ab43u);
    assert_int_equal(wb_crc32c(0, up, 32), 0x46dd794eu);
    assert_int_equal(wb_crc32c_table(0, up, 32), 0x46dd794eu);
    unsigned char buf[300];
    uint64_t r = 7;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)t_rnd(&r);
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= sizeof buf; n += 1 + n / 8) {
            uint32_t a = wb_crc32c(0, buf + off, n), b = wb_crc32c_table(0, buf + off, n);
            assert_int_equal(a, b);
            size_t h = n / 3; /* in two pieces: the journal checksums header, then payload */
            assert_int_equal(wb_crc32c(wb_crc32c(0, buf + off, h), buf + off + h, n - h), a);
        }
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_dir, teardown_dir)
    const struct CMUnitTest tests[] = {
        T(test_stor_wb_overlay_merge_matches_model),
        T(test_stor_wb_replay_clean_and_unsynced),
        T(test_stor_wb_replay_torn_last_record),
        T(test_stor_wb_replay_bad_checksum_refuses),
        T(test_stor_wb_backpressure),
        T(test_stor_wb_crc32c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
