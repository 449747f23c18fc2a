/*
 * test_stor — the engine: record sets (their own look-ups, atomic commit),
 * point reads, bounded iterators, persistence across reopen, errors, the
 * flush and compaction I/O limit.
 */
#include "fixture.h"
#include "t_rnd.h"

#include <sys/stat.h>

static void test_stor_batch_lookup(void **state)
{
    (void)state;
    struct stor_batch b;
    stor_batch_init(&b);
    const char *v;
    size_t vn;
    assert_int_equal(stor_batch_lookup(&b, 0, K("a"), &v, &vn), STOR_ABSENT);
    stor_batch_put(&b, 0, K("a"), K("1"));
    stor_batch_put(&b, 1, K("a"), K("other cf"));
    assert_int_equal(stor_batch_lookup(&b, 0, K("a"), &v, &vn), STOR_PUT);
    assert_int_equal(vn, 1);
    assert_memory_equal(v, "1", 1);
    /* The newest write of a key wins. */
    stor_batch_put(&b, 0, K("a"), K("22"));
    assert_int_equal(stor_batch_lookup(&b, 0, K("a"), &v, &vn), STOR_PUT);
    assert_memory_equal(v, "22", 2);
    stor_batch_del(&b, 0, K("a"));
    assert_int_equal(stor_batch_lookup(&b, 0, K("a"), &v, &vn), STOR_DELETED);
    assert_int_equal(stor_batch_lookup(&b, 1, K("a"), &v, &vn), STOR_PUT);
    /* Many keys: the index grows and every key is still found. */
    char k[16];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(k, sizeof k, "k%d", i);
        stor_batch_put(&b, 2, k, (size_t)n, k, (size_t)n);
    }
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(stor_batch_lookup(&b, 2, k, (size_t)n, &v, &vn), STOR_PUT);
        assert_memory_equal(v, k, (size_t)n);
    }
    /* A later range delete hides what it covers, not what follows it. */
    stor_batch_del_range(&b, 2, K("k1"), K("k2"));
    assert_int_equal(stor_batch_lookup(&b, 2, K("k10"), &v, &vn), STOR_DELETED);
    assert_int_equal(stor_batch_lookup(&b, 2, K("k2"), &v, &vn), STOR_PUT);
    stor_batch_put(&b, 2, K("k15"), K("new"));
    assert_int_equal(stor_batch_lookup(&b, 2, K("k15"), &v, &vn), STOR_PUT);
    assert_int_equal(b.nops, 4 + 5000 + 2); /* every op is kept, in order */
    stor_batch_clear(&b);
    assert_int_equal(stor_batch_lookup(&b, 0, K("a"), &v, &vn), STOR_ABSENT);
    stor_batch_destroy(&b);
}

/* Clearing empties exactly the index slots the ops used (every slot reads
 * empty after it, for sets with rewrites, deletes and range deletes), and
 * a large set's memory is given back at the clear after the one that
 * emptied it, while small sets keep theirs. */
static void test_stor_batch_clear(void **state)
{
    (void)state;
    struct stor_batch b;
    stor_batch_init(&b);
    const char *v;
    size_t vn;
    char k[24];
    for (int round = 0; round < 3; round++) {
        int n = round == 1 ? 100000 : 300;
        for (int i = 0; i < n; i++) {
            int kn = snprintf(k, sizeof k, "k%d", i % (n / 3 + 1)); /* rewrites */
            if (i % 7 == 0)
                stor_batch_del(&b, i % 3, k, (size_t)kn);
            else
                stor_batch_put(&b, i % 3, k, (size_t)kn, k, (size_t)kn);
            if (i % 1000 == 0)
                stor_batch_del_range(&b, 1, K("k1"), K("k2"));
        }
        size_t cap = b.capindex;
        assert_true(cap >= 2 * b.nops);
        stor_batch_clear(&b);
        assert_int_equal(b.capindex, cap); /* sized for what it just held: kept */
        for (size_t i = 0; i < b.capindex; i++)
            assert_int_equal(b.index[i], 0);
        assert_int_equal(stor_batch_lookup(&b, 0, K("k1"), &v, &vn), STOR_ABSENT);
        stor_batch_clear(&b); /* the next command's: an empty set */
        if (round == 1) {
            assert_int_equal(b.capindex, 0);
            assert_null(b.index);
            assert_int_equal(b.capops, 0);
            assert_int_equal(b.caparena, 0);
        } else {
            assert_int_equal(b.capindex, cap); /* small: kept */
        }
        /* And the batch works as new. */
        stor_batch_put(&b, 0, K("a"), K("1"));
        assert_int_equal(stor_batch_lookup(&b, 0, K("a"), &v, &vn), STOR_PUT);
        assert_memory_equal(v, "1", 1);
        stor_batch_clear(&b);
    }
    stor_batch_destroy(&b);
}

/* Record sets of every size, small ones searched by a scan and larger
 * ones through the index, reused after clearing, against a model that
 * looks at every op, newest first. */
static void test_stor_batch_model(void **state)
{
    (void)state;
    uint64_t rng = 0x5eed0b47c4ull;
    struct stor_batch b;
    stor_batch_init(&b);
    for (int round = 0; round < 400; round++) {
        size_t nops = 1 + t_rnd(&rng) % (round % 3 ? 12 : 40);
        for (size_t i = 0; i < nops; i++) {
            char k[4] = {'k', (char)('a' + t_rnd(&rng) % 6), 0, 0}, hi[4];
            int cf = (int)(t_rnd(&rng) % 2);
            unsigned what = (unsigned)(t_rnd(&rng) % 10);
            if (what < 6) {
                char v[8];
                int n = snprintf(v, sizeof v, "%d.%zu", round, i);
                stor_batch_put(&b, cf, k, 2, v, (size_t)n);
            } else if (what < 9) {
                stor_batch_del(&b, cf, k, 2);
            } else {
                memcpy(hi, k, sizeof hi);
                hi[1] = (char)(hi[1] + 1 + t_rnd(&rng) % 3);
                stor_batch_del_range(&b, cf, k, 2, hi, 2);
            }
        }
        for (int cf = 0; cf < 2; cf++) {
            for (char c = 'a'; c <= 'h'; c++) {
                const char k[2] = {'k', c};
                int want = STOR_ABSENT;
                const char *wv = NULL;
                size_t wn = 0;
                for (size_t i = b.nops; i > 0 && want == STOR_ABSENT; i--) {
                    const struct stor_op *op = &b.ops[i - 1];
                    const char *ok = b.arena + op->koff;
                    if (op->cf != cf)
                        continue;
                    if (op->kind == STOR_OP_DELRANGE) {
                        const char *oh = b.arena + op->voff;
                        if (memcmp(k, ok, 2) >= 0 && memcmp(k, oh, 2) < 0)
                            want = STOR_DELETED;
                    } else if (memcmp(k, ok, 2) == 0) {
                        want = op->kind == STOR_OP_DEL ? STOR_DELETED : STOR_PUT;
                        wv = b.arena + op->voff;
                        wn = op->vlen;
                    }
                }
                const char *v = NULL;
                size_t vn = 0;
                assert_int_equal(stor_batch_lookup(&b, cf, k, 2, &v, &vn), want);
                if (want == STOR_PUT) {
                    assert_int_equal(vn, wn);
                    assert_memory_equal(v, wv, wn);
                }
            }
        }
        stor_batch_clear(&b);
    }
    stor_batch_destroy(&b);
}

static void test_stor_commit_and_get(void **state)
{
    struct fx *f = *state;
    struct stor_batch b;
    stor_batch_init(&b);
    stor_batch_put(&b, STOR_CF_META, K("x"), K("1"));
    stor_batch_put(&b, STOR_CF_SUB, K("x"), K("sub"));
    stor_batch_put(&b, STOR_CF_META, K("empty"), "", 0);
    assert_int_equal(stor_commit(f->s, &b), 0);
    char *v;
    size_t vn;
    assert_int_equal(stor_get(f->s, STOR_CF_META, K("x"), &v, &vn), 0);
    assert_int_equal(vn, 1);
    free(v);
    assert_int_equal(stor_get(f->s, STOR_CF_SUB, K("x"), &v, &vn), 0);
    assert_memory_equal(v, "sub", 3);
    free(v);
    assert_int_equal(stor_get(f->s, STOR_CF_META, K("empty"), &v, &vn), 0);
    assert_int_equal(vn, 0);
    assert_non_null(v);
    free(v);
    assert_int_equal(stor_get(f->s, STOR_CF_SCORE, K("x"), &v, &vn), KV_ENOTFOUND);

    stor_batch_clear(&b);
    stor_batch_del(&b, STOR_CF_META, K("x"));
    assert_int_equal(stor_commit(f->s, &b), 0);
    assert_int_equal(stor_get(f->s, STOR_CF_META, K("x"), &v, &vn), KV_ENOTFOUND);
    stor_batch_destroy(&b);
}

static void test_stor_iterator_bounds(void **state)
{
    struct fx *f = *state;
    struct stor_batch b;
    stor_batch_init(&b);
    const char *keys[] = {"a", "b1", "b2", "b3", "c"};
    for (int i = 0; i < 5; i++)
        stor_batch_put(&b, STOR_CF_SUB, keys[i], strlen(keys[i]), "v", 1);
    assert_int_equal(stor_commit(f->s, &b), 0);
    stor_batch_destroy(&b);

    struct stor_it *it = stor_it_create(f->s, STOR_CF_SUB, K("b"), K("c"));
    int n = 0;
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it))
        n++;
    assert_int_equal(n, 3);
    assert_int_equal(stor_it_status(it), 0);
    stor_it_last(it);
    size_t kn;
    const char *k = stor_it_key(it, &kn);
    assert_memory_equal(k, "b3", 2);
    stor_it_seek_prev(it, K("b2zzz"));
    k = stor_it_key(it, &kn);
    assert_memory_equal(k, "b2", 2);
    stor_it_seek(it, K("b25"));
    k = stor_it_key(it, &kn);
    assert_memory_equal(k, "b3", 2);
    stor_it_next(it);
    assert_false(stor_it_valid(it));
    stor_it_free(it);

    uint64_t c;
    assert_int_equal(stor_count(f->s, STOR_CF_SUB, NULL, 0, NULL, 0, &c), 0);
    assert_int_equal(c, 5);
}

static void test_stor_persists_across_reopen(void **state)
{
    struct fx *f = *state;
    struct stor_batch b;
    stor_batch_init(&b);
    stor_batch_put(&b, STOR_CF_META, K("durable"), K("yes"));
    assert_int_equal(stor_commit(f->s, &b), 0);
    stor_batch_destroy(&b);
    fx_reopen(f);
    char *v;
    size_t vn;
    assert_int_equal(stor_get(f->s, STOR_CF_META, K("durable"), &v, &vn), 0);
    assert_memory_equal(v, "yes", 3);
    free(v);
}

static void test_stor_open_error_is_returned(void **state)
{
    struct fx *f = *state;
    /* A regular file where the data folder should be: an error, not an abort. */
    char path[300];
    snprintf(path, sizeof path, "%s/file", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
    struct stor_opts so = {.dir = path};
    struct stor *s = NULL;
    const char *err = NULL;
    assert_true(stor_open(&s, &so, &err) != 0);
    assert_null(s);
    assert_non_null(err);
    assert_true(strlen(err) > 0);
}

static void test_stor_checkpoint(void **state)
{
    struct fx *f = *state;
    struct stor_batch b;
    stor_batch_init(&b);
    stor_batch_put(&b, STOR_CF_META, K("snap"), K("1"));
    assert_int_equal(stor_commit(f->s, &b), 0);
    stor_batch_destroy(&b);
    char path[300];
    snprintf(path, sizeof path, "%s/checkpoint", f->dir);
    assert_int_equal(stor_checkpoint(f->s, path), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    /* The checkpoint opens as a database of its own holding the record. */
    struct stor_opts so = {.dir = path};
    struct stor *s2;
    assert_int_equal(stor_open(&s2, &so, NULL), 0);
    fx_hold(s2);
    char *v;
    size_t vn;
    assert_int_equal(stor_get(s2, STOR_CF_META, K("snap"), &v, &vn), 0);
    free(v);
    fx_close(s2);
    /* A second checkpoint into the same folder is refused. */
    assert_true(stor_checkpoint(f->s, path) != 0);
}

/* RocksDB's LOG line "Options.rate_limiter: VALUE" of the database in dir:
 * 1 where it names a limiter, 0 where it says (nil), -1 where it is not
 * there. */
static int log_rate_limiter(const char *dir)
{
    char path[300], line[512];
    snprintf(path, sizeof path, "%s/LOG", dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, fp)) {
        const char *p = strstr(line, "Options.rate_limiter:");
        if (p)
            found = strstr(p, "(nil)") || strstr(p, "nullptr") ? 0 : 1;
    }
    fclose(fp);
    return found;
}

static void test_stor_compaction_io_limit(void **state)
{
    struct fx *f = *state;
    /* The fixture's engine has no limit; one opened with a limit hands
     * RocksDB a rate limiter, and works as any other. */
    assert_int_equal(log_rate_limiter(f->dir), 0);
    char path[300];
    snprintf(path, sizeof path, "%s/limited", f->dir);
    struct stor_opts so = {
        .dir = path, .write_buffer_bytes = 1u << 20, .compaction_io_bytes = 64u << 20};
    struct stor *s;
    assert_int_equal(stor_open(&s, &so, NULL), 0);
    fx_hold(s);
    assert_int_equal(log_rate_limiter(path), 1);
    static char val[1000];
    memset(val, 'v', sizeof val);
    for (int i = 0; i < 4000; i++) { /* several memtables: flushes through the limiter */
        char k[16];
        snprintf(k, sizeof k, "k%05d", i);
        struct stor_batch b;
        stor_batch_init(&b);
        stor_batch_put(&b, STOR_CF_META, k, strlen(k), val, sizeof val);
        assert_int_equal(stor_commit(s, &b), 0);
        stor_batch_destroy(&b);
    }
    fx_close(s);
    assert_int_equal(stor_open(&s, &so, NULL), 0);
    fx_hold(s);
    char *v;
    size_t vn;
    assert_int_equal(stor_get(s, STOR_CF_META, K("k03999"), &v, &vn), 0);
    assert_int_equal(vn, sizeof val);
    free(v);
    fx_close(s);
}

/* A snapshot iterator (stor_it_create_snap) moves and reads as a RocksDB
 * one over the same records would, empty or not, and keeps its snapshot
 * alive after its maker let go. */
static void snap_expect(struct stor_it *it, const char *k)
{
    if (!k) {
        assert_false(stor_it_valid(it));
        return;
    }
    assert_true(stor_it_valid(it));
    size_t kn, vn;
    const char *got = stor_it_key(it, &kn), *v = stor_it_value(it, &vn);
    assert_int_equal(kn, strlen(k));
    assert_memory_equal(got, k, kn);
    assert_int_equal(vn, kn + 1);
    assert_int_equal(v[0], '=');
    assert_memory_equal(v + 1, k, kn);
}

static void test_stor_snapshot_iterator(void **state)
{
    (void)state;
    static const char *const keys[] = {"a", "ab", "b", "ba", "c"};
    struct stor_snap *sn = stor_snap_new(2, 4); /* grows past both */
    for (int i = 0; i < 5; i++) {
        char v[8];
        size_t kn = strlen(keys[i]);
        v[0] = '=';
        memcpy(v + 1, keys[i], kn);
        stor_snap_add(sn, keys[i], kn, v, kn + 1);
    }
    struct stor_it *it = stor_it_create_snap(sn);
    stor_snap_unref(sn); /* the iterator's reference keeps it */
    stor_it_first(it);
    for (int i = 0; i < 5; i++, stor_it_next(it))
        snap_expect(it, keys[i]);
    snap_expect(it, NULL);
    stor_it_last(it);
    for (int i = 4; i >= 0; i--, stor_it_prev(it))
        snap_expect(it, keys[i]);
    snap_expect(it, NULL);
    static const struct {
        bool prev;
        const char *to, *lands;
    } seeks[] = {{false, "a", "a"}, {false, "aa", "ab"}, {false, "", "a"},  {false, "d", NULL},
                 {true, "b", "b"},  {true, "bb", "ba"},  {true, "0", NULL}, {true, "z", "c"}};
    for (size_t i = 0; i < sizeof seeks / sizeof seeks[0]; i++) {
        if (seeks[i].prev)
            stor_it_seek_prev(it, seeks[i].to, strlen(seeks[i].to));
        else
            stor_it_seek(it, seeks[i].to, strlen(seeks[i].to));
        snap_expect(it, seeks[i].lands);
    }
    assert_int_equal(stor_it_status(it), 0);
    assert_false(stor_it_stopped(it));
    stor_it_free(it);

    struct stor_snap *empty = stor_snap_new(0, 0);
    it = stor_it_create_snap(empty);
    stor_it_first(it);
    snap_expect(it, NULL);
    stor_it_last(it);
    snap_expect(it, NULL);
    stor_it_seek(it, "a", 1);
    snap_expect(it, NULL);
    stor_it_free(it);
    stor_snap_unref(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stor_batch_lookup),
        cmocka_unit_test(test_stor_batch_model),
        cmocka_unit_test(test_stor_batch_clear),
        cmocka_unit_test(test_stor_snapshot_iterator),
        cmocka_unit_test_setup_teardown(test_stor_commit_and_get, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_stor_iterator_bounds, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_stor_persists_across_reopen, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_stor_open_error_is_returned, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_stor_checkpoint, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_stor_compaction_io_limit, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
