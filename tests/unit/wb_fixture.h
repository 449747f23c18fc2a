/*
 * wb_fixture — what the write-back tests (test_wb_flush, test_wb_journal)
 * share: an engine with write-back opened in a private folder, with the
 * test hooks of its open, and record sets committed and counted.
 * Header-only, as fixture.h.
 */
#ifndef SHMKV_TEST_WB_FIXTURE_H
#define SHMKV_TEST_WB_FIXTURE_H

#include "enc.h"
#include "fixture.h"
#include "stor_int.h"

#include <dirent.h>

/* Opens an engine with write-back in dir: extra's options where given,
 * and the test hooks of hooks (NULL: none) for this open. */
static inline struct stor *wb_open_dir(const char *dir, const struct stor_opts *extra,
                                       const struct wb_test_hooks *hooks, int *rc, const char **err)
{
    struct stor_opts o = {.dir = dir,
                          .block_cache_bytes = 8u << 20,
                          .write_buffer_bytes = 4u << 20,
                          .background_jobs = 2,
                          .writeback = 1};
    if (extra) {
        o.flush_interval_ms = extra->flush_interval_ms;
        o.flush_batch_bytes = extra->flush_batch_bytes;
        o.overlay_max_bytes = extra->overlay_max_bytes;
        o.journal_segment_bytes = extra->journal_segment_bytes;
        o.fsync = extra->fsync;
        o.journal_shm_dir = extra->journal_shm_dir;
        o.flusher_threads = extra->flusher_threads;
    }
    wb_test_hooks = hooks ? *hooks : (struct wb_test_hooks){0};
    struct stor *s = NULL;
    *err = NULL;
    *rc = stor_open(&s, &o, err);
    return *rc ? NULL : fx_hold(s);
}

static inline struct stor *wb_open_hooked(const char *dir, const struct stor_opts *extra,
                                          const struct wb_test_hooks *hooks)
{
    int rc;
    const char *err;
    struct stor *s = wb_open_dir(dir, extra, hooks, &rc, &err);
    if (rc)
        fail_msg("stor_open: %d %s", rc, err ? err : "");
    return s;
}

/* Opens an engine in dir with write-back off, as wb_open_dir's options
 * otherwise; the teardown closes it. */
static inline struct stor *open_without_wb(const char *dir)
{
    struct stor_opts o = {.dir = dir,
                          .block_cache_bytes = 8u << 20,
                          .write_buffer_bytes = 4u << 20,
                          .background_jobs = 2};
    struct stor *s = NULL;
    const char *err = NULL;
    int rc = stor_open(&s, &o, &err);
    if (rc)
        fail_msg("stor_open: %d %s", rc, err ? err : "");
    return fx_hold(s);
}

static inline struct stor *wb_open_ok(const char *dir, const struct stor_opts *extra)
{
    return wb_open_hooked(dir, extra, NULL);
}

static inline int setup_dir(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    if (t_tmp_make(f->dir, sizeof f->dir, "wb") != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static inline int teardown_dir(void **state)
{
    struct fx *f = *state;
    fx_close_held();
    t_tmp_rmrf(f->dir);
    free(f);
    return 0;
}

/* Commits n record sets "r<i>" = "v<i>" in the metadata CF. */
static inline void commit_n(struct stor *s, int from, int n)
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

/* Commits n record sets of one put each, keys prefix0, prefix1, ..., all
 * with the value v. */
static inline void commit_puts(struct stor *s, const char *prefix, int n, const char *v, size_t vn)
{
    struct stor_batch b;
    stor_batch_init(&b);
    for (int i = 0; i < n; i++) {
        char k[32];
        snprintf(k, sizeof k, "%s%d", prefix, i);
        stor_batch_clear(&b);
        stor_batch_put(&b, STOR_CF_SUB, k, strlen(k), v, vn);
        assert_int_equal(stor_commit(s, &b), 0);
    }
    stor_batch_destroy(&b);
}

static inline int count_present(struct stor *s, int n)
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
static inline void journal_file(const char *dir, char *out, size_t cap)
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

#endif
