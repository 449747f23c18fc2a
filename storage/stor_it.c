/*
 * stor_it — iterators: RocksDB merged with the write-back overlay (its
 * pending writes win, its tombstones and range deletes hide), RocksDB
 * alone, and snapshot iterators over records copied out. See stor.h.
 *
 * Threads: an iterator belongs to the thread that made it; the overlay is
 * the executor's, so a merged iterator is too.
 */
#include "stor_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_mem.h"

/* An iterator merging RocksDB (r) with the overlay (o) over [lo, hi) of one
 * column family. The overlay wins on equal keys and its tombstones hide;
 * pending range deletes hide RocksDB records. `cur` says which side holds
 * the current entry; `dir` the direction of travel (+1 or -1). */
enum { IT_NONE = 0, IT_R = 1, IT_O = 2, IT_BOTH = 3, IT_SNAP = 4 };

struct stor_it {
    struct stor *s;
    int cf;
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ro;
    char *lo, *hi; /* the bounds must outlive the RocksDB iterator */
    size_t lon, hin;
    const struct wb_ov_node *o;
    int cur, dir;
    char *save; /* the current key, kept across a change of direction */
    size_t savecap;
    bool raw;             /* RocksDB alone: the overlay's pending writes not merged */
    bool limited;         /* a skip limit: where it lands says nothing of what it passed */
    stor_it_edge_fn edge; /* stor_it_on_edge */
    void *edge_arg;
    struct stor_snap *snap; /* a snapshot iterator's records; it->it is NULL */
    size_t pos;             /* its current record (cur IT_SNAP) */
};

struct stor_it *stor_it_create(struct stor *s, int cf, const char *lo, size_t lon, const char *hi,
                               size_t hin)
{
    return stor_it_create_limited(s, cf, lo, lon, hi, hin, 0);
}

struct stor_it *stor_it_create_limited(struct stor *s, int cf, const char *lo, size_t lon,
                                       const char *hi, size_t hin, uint64_t max_skip)
{
    struct stor_it *it = kv_xmalloc(sizeof *it);
    memset(it, 0, sizeof *it);
    it->s = s;
    it->cf = cf;
    it->ro = rocksdb_readoptions_create();
    it->lo = lo ? kv_xmemdup(lo, lon) : NULL;
    it->hi = hi ? kv_xmemdup(hi, hin) : NULL;
    it->lon = lon;
    it->hin = hin;
    if (lo)
        rocksdb_readoptions_set_iterate_lower_bound(it->ro, it->lo, lon);
    if (hi)
        rocksdb_readoptions_set_iterate_upper_bound(it->ro, it->hi, hin);
    it->limited = max_skip != 0;
    if (max_skip)
        rocksdb_readoptions_set_max_skippable_internal_keys(it->ro, max_skip);
    it->it = rocksdb_create_iterator_cf(s->db, it->ro, s->cf[cf]);
    return it;
}

struct stor_it *stor_it_create_raw(struct stor *s, int cf, const char *lo, size_t lon,
                                   const char *hi, size_t hin)
{
    struct stor_it *it = stor_it_create(s, cf, lo, lon, hi, hin);
    it->raw = true;
    return it;
}

/* Whether overlay node n lies inside the iterator's column family and range. */
static bool o_inside(const struct stor_it *it, const struct wb_ov_node *n)
{
    if (!n || n->cf != it->cf)
        return false;
    if (it->lo && wb_ov_cmp(n->cf, n->key, n->klen, it->cf, it->lo, it->lon) < 0)
        return false;
    if (it->hi && wb_ov_cmp(n->cf, n->key, n->klen, it->cf, it->hi, it->hin) >= 0)
        return false;
    return true;
}

static void r_step(struct stor_it *it, int dir)
{
    if (dir > 0)
        rocksdb_iter_next(it->it);
    else
        rocksdb_iter_prev(it->it);
}

/* Links the overlay's waiting nodes that the iterator's range may hold
 * (wb_ov_order): at every seek, as writes may have come since the last. */
static void o_order(struct stor_it *it)
{
    if (!it->raw)
        wb_ov_order(&it->s->ov, it->cf, it->lo, it->lon, it->hi, it->hin);
}

static void o_step(struct stor_it *it, int dir)
{
    it->o = dir > 0 ? wb_ov_next(it->o) : wb_ov_prev(&it->s->ov, it->o);
}

static __thread uint64_t ov_skips; /* the overlay's deletes stepped over */
static __thread uint64_t it_moves; /* moves of storage iterators (stor_moves) */
static __thread bool skips_on;
static __thread rocksdb_perfcontext_t *perf; /* the thread's, for its life */

/* Makes the current entry the first visible one in direction dir. */
static void settle(struct stor_it *it, int dir)
{
    it->dir = dir;
    struct wb_ov *ov = &it->s->ov;
    for (;;) {
        bool rv = rocksdb_iter_valid(it->it);
        size_t rn = 0;
        const char *rk = rv ? rocksdb_iter_key(it->it, &rn) : NULL;
        if (rv && !it->raw && ov->nranges && wb_ov_range_covers(ov, it->cf, rk, rn)) {
            r_step(it, dir);
            ov_skips++;
            continue;
        }
        bool ovld = o_inside(it, it->o);
        if (!rv && !ovld) {
            it->cur = IT_NONE;
            return;
        }
        int c = !rv ? 1 : !ovld ? -1 : wb_ov_cmp(it->cf, rk, rn, it->cf, it->o->key, it->o->klen);
        if (!rv || !ovld)
            c *= dir; /* one side only: "first" whatever the direction */
        if (c == 0) {
            if (it->o->val) {
                it->cur = IT_BOTH;
                return;
            }
            r_step(it, dir); /* a tombstone hides both */
            o_step(it, dir);
            ov_skips++;
            continue;
        }
        bool r_first = dir > 0 ? c < 0 : c > 0;
        if (r_first) {
            it->cur = IT_R;
            return;
        }
        if (it->o->val) {
            it->cur = IT_O;
            return;
        }
        o_step(it, dir); /* a tombstone with nothing under it */
        ov_skips++;
    }
}

void stor_skips_watch(bool on)
{
    if (on == skips_on)
        return;
    skips_on = on;
    rocksdb_set_perf_level(on ? rocksdb_enable_count : rocksdb_disable);
}

void stor_thread_end(void)
{
    if (perf)
        rocksdb_perfcontext_destroy(perf);
    perf = NULL;
    skips_on = false;
}

uint64_t stor_moves(void)
{
    return it_moves;
}

size_t stor_waiting(const struct stor *s, int cf)
{
    return wb_ov_waiting(&s->ov, cf);
}

uint64_t stor_skips(void)
{
    if (!skips_on)
        return ov_skips;
    if (!perf)
        perf = rocksdb_perfcontext_create();
    return ov_skips + rocksdb_perfcontext_metric(perf, rocksdb_internal_delete_skipped_count);
}

void stor_it_on_edge(struct stor_it *it, stor_it_edge_fn fn, void *arg)
{
    it->edge = fn;
    it->edge_arg = arg;
}

/* After a move to the range's edge in direction dir: where it landed. */
static void edge_note(struct stor_it *it, int dir)
{
    if (it->edge && !it->limited && it->cur != IT_NONE) {
        size_t kn;
        const char *k = stor_it_key(it, &kn);
        it->edge(it->edge_arg, dir, k, kn);
    }
}

/* ---- snapshot iterators ---- */

struct stor_snap *stor_snap_new(size_t n, size_t bytes)
{
    struct stor_snap *sn = kv_xmalloc(sizeof *sn);
    sn->n = 0;
    sn->cap = n;
    sn->used = 0;
    sn->room = bytes;
    sn->refs = 1;
    sn->rec = kv_xmalloc((n ? n : 1) * sizeof *sn->rec);
    sn->data = kv_xmalloc(bytes ? bytes : 1);
    return sn;
}

void stor_snap_add(struct stor_snap *sn, const char *k, size_t kn, const char *v, size_t vn)
{
    if (sn->n == sn->cap) {
        sn->cap = sn->cap ? 2 * sn->cap : 8;
        sn->rec = kv_xrealloc(sn->rec, sn->cap * sizeof *sn->rec);
    }
    if (sn->room - sn->used < kn + vn) {
        sn->room = 2 * sn->room > sn->used + kn + vn ? 2 * sn->room : sn->used + kn + vn;
        sn->data = kv_xrealloc(sn->data, sn->room);
    }
    struct stor_snap_rec *r = &sn->rec[sn->n++];
    r->koff = sn->used;
    r->kn = kn;
    memcpy(sn->data + sn->used, k, kn);
    sn->used += kn;
    r->voff = sn->used;
    r->vn = vn;
    if (vn)
        memcpy(sn->data + sn->used, v, vn);
    sn->used += vn;
}

void stor_snap_unref(struct stor_snap *sn)
{
    if (!sn || --sn->refs)
        return;
    free(sn->rec);
    free(sn->data);
    free(sn);
}

struct stor_it *stor_it_create_snap(struct stor_snap *sn)
{
    struct stor_it *it = kv_xmalloc(sizeof *it);
    memset(it, 0, sizeof *it);
    it->snap = sn;
    sn->refs++;
    return it;
}

static void snap_at(struct stor_it *it, size_t pos)
{
    it->pos = pos;
    it->cur = pos < it->snap->n ? IT_SNAP : IT_NONE;
}

/* The first record whose key is at least k (after: greater than k). */
static size_t snap_bound(const struct stor_snap *sn, const char *k, size_t kn, bool after)
{
    size_t lo = 0, hi = sn->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct stor_snap_rec *r = &sn->rec[mid];
        size_t m = r->kn < kn ? r->kn : kn;
        int c = memcmp(sn->data + r->koff, k, m);
        if (!c)
            c = (r->kn > kn) - (r->kn < kn);
        if (after ? c <= 0 : c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void stor_it_seek(struct stor_it *it, const char *k, size_t kn)
{
    if (it->snap) {
        snap_at(it, snap_bound(it->snap, k, kn, false));
        return;
    }
    it_moves++;
    rocksdb_iter_seek(it->it, k, kn);
    bool edge = it->lo ? wb_ov_cmp(it->cf, k, kn, it->cf, it->lo, it->lon) <= 0 : kn == 0;
    if (it->lo && edge)
        k = it->lo, kn = it->lon;
    o_order(it);
    it->o = it->raw ? NULL : wb_ov_seek(&it->s->ov, it->cf, k, kn);
    settle(it, 1);
    if (edge)
        edge_note(it, 1);
}

void stor_it_seek_prev(struct stor_it *it, const char *k, size_t kn)
{
    if (it->snap) {
        size_t b = snap_bound(it->snap, k, kn, true);
        snap_at(it, b ? b - 1 : it->snap->n);
        return;
    }
    it_moves++;
    rocksdb_iter_seek_for_prev(it->it, k, kn);
    bool edge = it->hi && wb_ov_cmp(it->cf, k, kn, it->cf, it->hi, it->hin) >= 0;
    o_order(it);
    if (it->raw)
        it->o = NULL;
    else if (edge)
        it->o = wb_ov_seek_before(&it->s->ov, it->cf, it->hi, it->hin);
    else
        it->o = wb_ov_seek_prev(&it->s->ov, it->cf, k, kn);
    settle(it, -1);
    if (edge)
        edge_note(it, -1);
}

void stor_it_first(struct stor_it *it)
{
    if (it->snap) {
        snap_at(it, 0);
        return;
    }
    it_moves++;
    rocksdb_iter_seek_to_first(it->it);
    o_order(it);
    it->o =
        it->raw ? NULL : wb_ov_seek(&it->s->ov, it->cf, it->lo ? it->lo : "", it->lo ? it->lon : 0);
    settle(it, 1);
    edge_note(it, 1);
}

void stor_it_last(struct stor_it *it)
{
    if (it->snap) {
        snap_at(it, it->snap->n ? it->snap->n - 1 : 0);
        return;
    }
    it_moves++;
    rocksdb_iter_seek_to_last(it->it);
    o_order(it);
    if (it->raw)
        it->o = NULL;
    else if (it->hi)
        it->o = wb_ov_seek_before(&it->s->ov, it->cf, it->hi, it->hin);
    else
        it->o = wb_ov_seek_before(&it->s->ov, it->cf + 1, "", 0);
    settle(it, -1);
    edge_note(it, -1);
}

/* Turning around: both sides are placed just past the current key in the new
 * direction, which a RocksDB iterator cannot do by stepping alone. */
static void turn(struct stor_it *it, int dir)
{
    size_t kn;
    const char *k = stor_it_key(it, &kn);
    if (kn > it->savecap) {
        it->save = kv_xrealloc(it->save, kn);
        it->savecap = kn;
    }
    memcpy(it->save, k, kn);
    struct wb_ov *ov = &it->s->ov;
    o_order(it);
    if (dir < 0) {
        rocksdb_iter_seek_for_prev(it->it, it->save, kn);
        if (rocksdb_iter_valid(it->it)) {
            size_t rn;
            const char *rk = rocksdb_iter_key(it->it, &rn);
            if (rn == kn && memcmp(rk, it->save, kn) == 0)
                rocksdb_iter_prev(it->it);
        }
        it->o = it->raw ? NULL : wb_ov_seek_before(ov, it->cf, it->save, kn);
    } else {
        rocksdb_iter_seek(it->it, it->save, kn);
        if (rocksdb_iter_valid(it->it)) {
            size_t rn;
            const char *rk = rocksdb_iter_key(it->it, &rn);
            if (rn == kn && memcmp(rk, it->save, kn) == 0)
                rocksdb_iter_next(it->it);
        }
        it->o = it->raw ? NULL : wb_ov_seek(ov, it->cf, it->save, kn);
        if (it->o && wb_ov_cmp(it->o->cf, it->o->key, it->o->klen, it->cf, it->save, kn) == 0)
            it->o = wb_ov_next(it->o);
    }
    settle(it, dir);
}

static void step(struct stor_it *it, int dir)
{
    if (it->cur == IT_NONE)
        return;
    if (dir != it->dir) {
        turn(it, dir);
        return;
    }
    if (it->cur & IT_R)
        r_step(it, dir);
    if (it->cur & IT_O)
        o_step(it, dir);
    settle(it, dir);
}

void stor_it_next(struct stor_it *it)
{
    if (it->snap) {
        snap_at(it, it->pos + 1);
    } else {
        it_moves++;
        step(it, 1);
    }
}

void stor_it_prev(struct stor_it *it)
{
    if (it->snap) {
        snap_at(it, it->pos ? it->pos - 1 : it->snap->n);
    } else {
        it_moves++;
        step(it, -1);
    }
}

int stor_it_valid(const struct stor_it *it)
{
    return it->cur != IT_NONE;
}

const char *stor_it_key(const struct stor_it *it, size_t *n)
{
    if (it->cur == IT_SNAP) {
        *n = it->snap->rec[it->pos].kn;
        return it->snap->data + it->snap->rec[it->pos].koff;
    }
    if (it->cur == IT_R)
        return rocksdb_iter_key(it->it, n);
    *n = it->o->klen;
    return it->o->key;
}

const char *stor_it_value(const struct stor_it *it, size_t *n)
{
    if (it->cur == IT_SNAP) {
        *n = it->snap->rec[it->pos].vn;
        return it->snap->data + it->snap->rec[it->pos].voff;
    }
    if (it->cur == IT_R)
        return rocksdb_iter_value(it->it, n);
    *n = it->o->vlen;
    return it->o->val;
}

/* RocksDB's Status::Incomplete, as its message begins: what an iterator
 * that passed its max_skippable_internal_keys reports. */
static bool incomplete(const char *err)
{
    return !strncmp(err, "Result incomplete", 17);
}

int stor_it_status(const struct stor_it *it)
{
    if (it->snap)
        return 0;
    char *err = NULL;
    rocksdb_iter_get_error(it->it, &err);
    if (err && incomplete(err)) {
        rocksdb_free(err);
        return 0;
    }
    return err ? stor_take_err(err) : 0;
}

bool stor_it_stopped(const struct stor_it *it)
{
    if (it->snap)
        return false;
    char *err = NULL;
    rocksdb_iter_get_error(it->it, &err);
    bool stopped = err && incomplete(err);
    rocksdb_free(err);
    return stopped;
}

void stor_it_free(struct stor_it *it)
{
    if (!it)
        return;
    if (it->snap) {
        stor_snap_unref(it->snap);
        free(it);
        return;
    }
    rocksdb_iter_destroy(it->it);
    rocksdb_readoptions_destroy(it->ro);
    free(it->lo);
    free(it->hi);
    free(it->save);
    free(it);
}
