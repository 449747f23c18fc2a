/*
 * fixture — a fresh engine in a private temp folder for each test, removed
 * afterwards. Header-only so each test program stays one file.
 */
#ifndef SHMKV_TEST_FIXTURE_H
#define SHMKV_TEST_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "db_int.h" /* an embedded struct db, and the internals tests check */
#include "stor.h"
#include "t_tmp.h"
#include "wb_int.h" /* wb_test_hooks */

struct fx {
    char dir[256];
    struct stor *s;
    struct db d;
};

/* Engines a test opens beside the fixture's own (fx_hold). A failed
 * assertion leaves a test by a long jump, past its own close: the teardown
 * closes what is left before it removes the folder, where RocksDB's
 * background work would otherwise write files into it after the removal. */
#define FX_HELD_MAX 4
static struct stor *fx_held[FX_HELD_MAX];

/* Returns s, now closed by the teardown unless fx_close or fx_abandon
 * closes it first. */
static inline struct stor *fx_hold(struct stor *s)
{
    for (size_t i = 0; i < FX_HELD_MAX; i++)
        if (!fx_held[i]) {
            fx_held[i] = s;
            return s;
        }
    fail_msg("a test holds more than %d engines", FX_HELD_MAX);
    return s;
}

static inline void fx_unhold(struct stor *s)
{
    for (size_t i = 0; i < FX_HELD_MAX; i++)
        if (fx_held[i] == s)
            fx_held[i] = NULL;
}

static inline void fx_close(struct stor *s)
{
    fx_unhold(s);
    stor_close(s);
}

/* As kill -9: the journal stays as it is. */
static inline void fx_abandon(struct stor *s)
{
    fx_unhold(s);
    stor_close_abandon(s);
}

static inline void fx_close_held(void)
{
    for (size_t i = 0; i < FX_HELD_MAX; i++)
        if (fx_held[i])
            fx_close(fx_held[i]);
}

/* Write-back for the engines opened from here on (0: off, the default;
 * 2: on, with no flusher, so that every write stays in the overlay). */
static int fx_writeback;

/* Reads key's string and checks it is want (wn bytes). */
static inline void assert_getn(struct db *d, unsigned dbi, const char *k, size_t kn,
                               const char *want, size_t wn)
{
    char *v;
    size_t vn;
    assert_int_equal(db_get(d, dbi, k, kn, &v, &vn), 0);
    assert_int_equal(vn, wn);
    assert_memory_equal(v, want, vn);
    free(v);
}

static inline void assert_get(struct db *d, unsigned dbi, const char *k, size_t kn,
                              const char *want)
{
    assert_getn(d, dbi, k, kn, want, strlen(want));
}

/* What db_mget's callbacks gave, copied: fx_mget_each is the callback. */
struct fx_mget {
    int n;
    char *v[160];
    size_t vn[160];
};

static inline void fx_mget_each(void *arg, const char *v, size_t vn)
{
    struct fx_mget *g = arg;
    g->v[g->n] = v ? strndup(v, vn) : NULL;
    g->vn[g->n++] = vn;
}

/* Opens the engine and the type layer in f->dir; on failure prints why and
 * leaves nothing open. */
static inline int fx_open_in(struct fx *f, const struct db_opts *o)
{
    struct stor_opts so = {.dir = f->dir,
                           .block_cache_bytes = 8u << 20,
                           .write_buffer_bytes = 4u << 20,
                           .background_jobs = 2,
                           .writeback = fx_writeback != 0};
    wb_test_hooks.no_flusher = fx_writeback == 2;
    const char *err = NULL;
    int rc = stor_open(&f->s, &so, &err);
    if (rc) {
        print_error("stor_open: %d %s\n", rc, err ? err : "");
        f->s = NULL;
        return -1;
    }
    rc = db_init(&f->d, f->s, o);
    if (rc) {
        print_error("db_init: %d %s\n", rc, stor_errmsg());
        db_destroy(&f->d);
        memset(&f->d, 0, sizeof f->d); /* the teardown destroys it again */
        stor_close(f->s);
        f->s = NULL;
        return -1;
    }
    return 0;
}

static inline int fx_setup_opts(void **state, const struct db_opts *o)
{
    struct fx *f = calloc(1, sizeof *f);
    if (t_tmp_make(f->dir, sizeof f->dir, "test") != 0) {
        free(f);
        return -1;
    }
    if (fx_open_in(f, o) != 0) {
        t_tmp_rmrf(f->dir); /* a failed setup gets no teardown */
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static inline int fx_setup(void **state)
{
    return fx_setup_opts(state, NULL);
}

static inline int fx_setup_blind(void **state)
{
    struct db_opts o = {.hash_coding = ENC_CODING_BLIND, .set_coding = ENC_CODING_BLIND};
    return fx_setup_opts(state, &o);
}

/* Setups with write-back: with its flusher, or with none, so that every
 * write stays in the overlay. The mode holds for the test's reopens too;
 * fx_teardown ends it. */
static inline int fx_setup_wb(void **state)
{
    fx_writeback = 1;
    return fx_setup(state);
}

static inline int fx_setup_wb_overlay(void **state)
{
    fx_writeback = 2;
    return fx_setup(state);
}

/* Closes and reopens the engine on the same folder (persistence checks). */
static inline void fx_reopen(struct fx *f)
{
    struct db_opts o = f->d.o;
    db_destroy(&f->d);
    memset(&f->d, 0, sizeof f->d);
    stor_close(f->s);
    f->s = NULL;
    if (fx_open_in(f, &o) != 0)
        fail_msg("reopen failed"); /* the teardown still removes the folder */
}

/* The records of column family cf, counted by a walk. */
static inline uint64_t fx_count_cf(struct fx *f, int cf)
{
    uint64_t n;
    assert_int_equal(stor_count(f->s, cf, NULL, 0, NULL, 0, &n), 0);
    return n;
}

/* The kept key counts of db dbi equal both want and a scan's. */
static inline void fx_assert_keys(struct db *d, unsigned dbi, uint64_t keys, uint64_t expires)
{
    uint64_t k, e, sk, se;
    assert_int_equal(db_keycount(d, dbi, &k, &e), 0);
    assert_int_equal(db_keycount_scan(d, dbi, &sk, &se), 0);
    assert_int_equal(sk, keys);
    assert_int_equal(se, expires);
    assert_int_equal(k, keys);
    assert_int_equal(e, expires);
}

static inline int fx_teardown(void **state)
{
    struct fx *f = *state;
    db_destroy(&f->d);
    stor_close(f->s);
    fx_close_held();
    t_tmp_rmrf(f->dir);
    free(f);
    stor_clock_override = 0;
    fx_writeback = 0;
    return 0;
}

/* Shorthands: string literal keys and values in db 0. */
#define K(s) (s), (sizeof(s) - 1)
#define S(s) ((struct db_str){(s), sizeof(s) - 1})

/* Asserts that item i of v equals the literal s. */
/* n names prefix + (j * 7 % 100), 0 <= j < n, into names and s: keys or
 * fields out of order, past 100 repeated. */
static inline void fx_names(char (*names)[16], struct db_str *s, int n, const char *prefix)
{
    for (int j = 0; j < n; j++) {
        snprintf(names[j], sizeof names[j], "%s%d", prefix, j * 7 % 100);
        s[j] = (struct db_str){names[j], strlen(names[j])};
    }
}

#define assert_item(v, i, s)                                                                       \
    do {                                                                                           \
        assert_int_equal(db_vec_len((v), (i)), sizeof(s) - 1);                                     \
        assert_memory_equal(db_vec_ptr((v), (i)), (s), sizeof(s) - 1);                             \
    } while (0)

#endif
