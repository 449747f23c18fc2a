/*
 * db_zset — Redis sorted sets. Two records per member under the current
 * version: sub record member → score(8) (point look-ups, lex order) and score
 * record score(8)|member → "" (score order). Scores are stored in the
 * order-preserving encoding of enc_score_put(); -0.0 is stored as +0.0 so
 * that byte order agrees with Redis's numeric order (-0 == 0, ties by member).
 */
#include "db_int.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

static double norm0(double s)
{
    return s == 0 ? 0.0 : s;
}

/* Reads a member's score: 0, KV_ENOTFOUND or an error. adding: the
 * caller puts the member if it is absent (db_rget_adding). */
static int zget(struct db *d, struct db_kc *kc, const char *m, size_t mn, double *score,
                bool adding)
{
    size_t kn, vn;
    char *v;
    const char *k = kc_sub(kc, m, mn, &kn);
    int rc = adding ? db_rget_adding(d, STOR_CF_SUB, k, kn, &v, &vn)
                    : db_rget(d, STOR_CF_SUB, k, kn, &v, &vn);
    if (rc)
        return rc;
    if (vn == 8)
        *score = enc_score_get(v);
    else
        rc = KV_ECORRUPT;
    free(v);
    return rc;
}

static void zput(struct db *d, struct db_kc *kc, const char *m, size_t mn, double score)
{
    char s8[8];
    size_t kn;
    enc_score_put(s8, score);
    const char *k = kc_sub(kc, m, mn, &kn);
    db_sub_put(d, STOR_CF_SUB, k, kn, s8, 8);
    k = kc_score(kc, score, m, mn, &kn);
    db_sub_put(d, STOR_CF_SCORE, k, kn, "", 0);
}

static void zdel(struct db *d, struct db_kc *kc, const char *m, size_t mn, double score)
{
    size_t kn;
    const char *k = kc_sub(kc, m, mn, &kn);
    db_sub_del(d, STOR_CF_SUB, k, kn);
    k = kc_score(kc, score, m, mn, &kn);
    db_sub_del(d, STOR_CF_SCORE, k, kn);
}

int db_zadd(struct db *d, unsigned dbi, const char *key, size_t klen, const double *scores,
            const struct db_str *m, size_t n, int flags, uint64_t *count, double *incr_out)
{
    struct db_kc kc;
    db_begin(d);
    *count = 0;
    uint64_t added = 0, changed = 0;
    int applied = 0;
    int rc = kc_open_write(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc)
        goto out;
    uint32_t rank0 = kc.m.rank;
    db_zrix_touch(d, &kc, n);
    for (size_t i = 0; i < n; i++) {
        double cur = 0, ns = scores[i];
        int r = zget(d, &kc, m[i].p, m[i].n, &cur, !(flags & DB_ZADD_XX));
        if (r && r != KV_ENOTFOUND) {
            rc = r;
            goto out;
        }
        bool exists = r == 0;
        if (flags & DB_ZADD_INCR) {
            ns = (exists ? cur : 0) + scores[i];
            if (isnan(ns)) {
                rc = KV_EZNAN;
                goto out;
            }
        }
        ns = norm0(ns);
        if (exists) {
            if ((flags & DB_ZADD_NX) || ((flags & DB_ZADD_GT) && !(ns > cur)) ||
                ((flags & DB_ZADD_LT) && !(ns < cur)))
                continue;
            applied = 1;
            if (ns != cur) {
                zdel(d, &kc, m[i].p, m[i].n, cur);
                zput(d, &kc, m[i].p, m[i].n, ns);
                changed++;
            }
        } else {
            if (flags & DB_ZADD_XX)
                continue;
            applied = 1;
            zput(d, &kc, m[i].p, m[i].n, ns);
            added++;
            kc.m.size++;
        }
        if (flags & DB_ZADD_INCR)
            *incr_out = ns;
    }
    if (!added && !changed)
        kc.m.rank = rank0; /* nothing written: no reason to drop the index */
    if (added || kc.m.rank != rank0)
        kc_put_meta(d, &kc);
    rc = db_commit(d);
    *count = added + ((flags & DB_ZADD_CH) ? changed : 0);
    if (rc == 0 && (flags & DB_ZADD_INCR))
        rc = applied;
out:
    kc_free(&kc);
    return rc;
}

int db_zrem(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
            size_t n, uint64_t *removed)
{
    return db_remove_members(d, dbi, key, klen, ENC_TYPE_ZSET, m, n, removed);
}

int db_zscore(struct db *d, unsigned dbi, const char *key, size_t klen, const char *m, size_t mn,
              double *score)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc == 0)
        rc = zget(d, &kc, m, mn, score, false);
    kc_free(&kc);
    return rc;
}

struct zmscore_out {
    double *score;
    int rc;
};

static void zmscore_one(void *arg, size_t i, const char *v, size_t vn)
{
    struct zmscore_out *o = arg;
    o->score[i] = NAN;
    if (v && vn == 8)
        o->score[i] = enc_score_get(v);
    else if (v && o->rc == 0)
        o->rc = KV_ECORRUPT;
}

int db_zmscore(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
               size_t n, double *score)
{
    struct db_kc kc;
    struct zmscore_out o = {score, 0};
    for (size_t i = 0; i < n; i++)
        score[i] = NAN;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc == 0)
        rc = kc_read_subs(d, &kc, m, n, true, zmscore_one, &o);
    kc_free(&kc);
    if (rc == 0)
        rc = o.rc;
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_zcard(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *n)
{
    return db_coll_size(d, dbi, key, klen, ENC_TYPE_ZSET, n);
}

/* ---- ranges ---- */

/* For walks raced from both ends: the time each has taken. */
static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Collects the range sp of an open zset into out (members with scores, in
 * result order) or, with out == NULL, only counts it into *n. */
static int zcollect(struct db *d, struct db_kc *kc, const struct db_zspec *sp, struct db_vec *out,
                    uint64_t *n)
{
    *n = 0;
    int64_t skip = 0, take = -1;
    /* A range of ranks is reached from either end: two walks, one past the
     * records below it and one past those above, take turns (by the time
     * each has taken, as db_zrank's), and the first there collects it, in
     * its own direction (flip: against the result order, reversed after).
     * ZRANGE -10 -1 of a large set passed every record before. */
    bool flip = false;
    uint64_t need[2] = {0, 0}; /* records below and above the range */
    if (sp->by == DB_ZBY_RANK) {
        int64_t size = (int64_t)kc->m.size, start = sp->start, stop = sp->stop;
        if (start < 0)
            start += size;
        if (stop < 0)
            stop += size;
        if (start < 0)
            start = 0;
        if (start > stop || start >= size)
            return 0;
        if (stop >= size)
            stop = size - 1;
        take = stop - start + 1;
        need[0] = (uint64_t)(sp->rev ? size - 1 - stop : start);
        need[1] = (uint64_t)(sp->rev ? start : size - 1 - stop);
    } else {
        if (sp->offset < 0)
            return 0;
        skip = sp->offset;
        take = sp->limit;
    }
    if (take == 0)
        return 0;

    /* Through the rank index, before any walk of this command starts
     * counting deletes (db_walk_start): building one walks the set. */
    struct stor_it *at = NULL; /* the index's, at the range's first member */
    uint64_t walk = d->zrix_walk ? d->zrix_walk : DB_ZRIX_WALK;
    if (sp->by == DB_ZBY_RANK && need[0] >= walk && need[1] >= walk && db_zrix_ready(d, kc)) {
        int r = db_zrix_select(d, kc, need[0], &at);
        if (r != 0 && r != DB_ZRIX_NONE)
            return r;
    }

    int cf = sp->by == DB_ZBY_LEX ? STOR_CF_SUB : STOR_CF_SCORE;
    size_t pl = kc_prefix_len(kc);
    struct stor_it *it = at ? at : kc_iter(d, kc, cf);
    struct db_buf seek;
    dbb_init(&seek);
    dbb_append(&seek, kc->sk.p, pl);

    /* Position at the first candidate in walk order (result order unless
     * flipped). */
    bool back = sp->rev;
    size_t first = out ? out->n : 0;
    if (at) {
        /* Forward from the index's member: the range in score order. */
        back = false;
        flip = sp->rev;
    } else if (sp->by == DB_ZBY_RANK && (need[0] == 0 || need[1] == 0)) {
        /* The range starts at an end (ZPOPMIN, ZRANGE 0 9, ZRANGE -10 -1):
         * that end's walk wins at once, and the other end is not even
         * sought. Its iterator and seek to the last record were an eighth
         * of a ZPOPMIN's time, more as the set's deleted records spread
         * over more levels. */
        back = need[0] != 0;
        if (back)
            stor_it_last(it);
        else
            stor_it_first(it);
        flip = back != sp->rev;
    } else if (sp->by == DB_ZBY_RANK) {
        struct stor_it *hi = kc_iter(d, kc, cf);
        /* Both seeks are paid for by now: only the steps still to come
         * decide the turns. (Timed in, one slow first seek, a cold block,
         * once gave the other end a walk of all 300 members of a set for
         * ZRANGE 0 9.) */
        uint64_t done[2] = {0, 0}, spent[2] = {0, 0};
        stor_it_first(it);
        stor_it_last(hi);
        int win = -1;
        while (win < 0) {
            int side = spent[1] < spent[0];
            struct stor_it *x = side ? hi : it;
            uint64_t t0 = mono_ns();
            for (int step = 0; step < 4; step++) {
                if (done[side] == need[side] || !stor_it_valid(x)) {
                    win = side;
                    break;
                }
                if (side)
                    stor_it_prev(x);
                else
                    stor_it_next(x);
                done[side]++;
            }
            spent[side] += mono_ns() - t0;
        }
        if (win) {
            stor_it_free(it);
            it = hi;
        } else {
            stor_it_free(hi);
        }
        back = win;
        flip = back != sp->rev;
    } else if (sp->by == DB_ZBY_SCORE) {
        char s8[8];
        if (!sp->rev) {
            enc_score_put(s8, norm0(sp->min));
            dbb_append(&seek, s8, 8);
            stor_it_seek(it, seek.p, seek.n);
        } else {
            /* First key past every member scored max, then one step back. */
            enc_score_put(s8, norm0(sp->max));
            enc_put_u64(s8, enc_get_u64(s8) + 1);
            dbb_append(&seek, s8, 8);
            stor_it_seek(it, seek.p, seek.n);
            if (stor_it_valid(it))
                stor_it_prev(it);
            else
                stor_it_last(it);
        }
    } else {
        if (sp->lmin.inf == 1 || sp->lmax.inf == -1) {
            dbb_free(&seek);
            stor_it_free(it);
            return 0;
        }
        if (!sp->rev) {
            if (sp->lmin.inf == -1) {
                stor_it_first(it);
            } else {
                dbb_append(&seek, sp->lmin.v.p, sp->lmin.v.n);
                stor_it_seek(it, seek.p, seek.n);
            }
        } else {
            if (sp->lmax.inf == 1) {
                stor_it_last(it);
            } else {
                dbb_append(&seek, sp->lmax.v.p, sp->lmax.v.n);
                stor_it_seek_prev(it, seek.p, seek.n);
            }
        }
    }

    for (; stor_it_valid(it); back ? stor_it_prev(it) : stor_it_next(it)) {
        size_t kn, vn, sn;
        const char *k = stor_it_key(it, &kn);
        const char *suffix = kc_suffix(kc, k, kn, &sn);
        const char *m;
        size_t mn;
        double score;
        if (cf == STOR_CF_SCORE) {
            if (sn < 8)
                continue;
            score = enc_score_get(suffix);
            m = suffix + 8;
            mn = sn - 8;
        } else {
            const char *v = stor_it_value(it, &vn);
            if (vn != 8)
                continue;
            score = enc_score_get(v);
            m = suffix;
            mn = sn;
        }
        if (sp->by == DB_ZBY_SCORE) {
            bool below = score < sp->min || (sp->minex && score == sp->min);
            bool above = score > sp->max || (sp->maxex && score == sp->max);
            if (sp->rev ? below : above)
                break;
            if (sp->rev ? above : below)
                continue; /* the exclusive end we started on */
        } else if (sp->by == DB_ZBY_LEX) {
            const struct db_lexb *lo = &sp->lmin, *hi = &sp->lmax;
            int clo = lo->inf ? 1 : db_bytes_cmp(m, mn, lo->v.p, lo->v.n);
            int chi = hi->inf ? -1 : db_bytes_cmp(m, mn, hi->v.p, hi->v.n);
            bool below = clo < 0 || (lo->ex && clo == 0);
            bool above = chi > 0 || (hi->ex && chi == 0);
            if (sp->rev ? below : above)
                break;
            if (sp->rev ? above : below)
                continue;
        }
        if (skip > 0) {
            skip--;
            continue;
        }
        if (out)
            db_vec_push(out, m, mn, score);
        (*n)++;
        if (take > 0 && (int64_t)*n >= take)
            break;
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    dbb_free(&seek);
    if (flip && out)
        for (size_t i = first, j = out->n; i + 1 < j; i++, j--) {
            struct db_vitem t = out->items[i];
            out->items[i] = out->items[j - 1];
            out->items[j - 1] = t;
        }
    return rc;
}

int db_zrange(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_zspec *sp,
              struct db_vec *out)
{
    struct db_kc kc;
    uint64_t n;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc == 0)
        rc = zcollect(d, &kc, sp, out, &n);
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

/* Adds 1 to the 8-byte big-endian number at p: the first score key past
 * every one of that score. false when it was the largest. */
static bool score_next(char *p)
{
    uint64_t v = enc_get_u64(p);
    if (v == UINT64_MAX)
        return false;
    enc_put_u64(p, v + 1);
    return true;
}

/* ZCOUNT and ZLEXCOUNT as the difference of two ranks, through the index;
 * DB_ZRIX_NONE when there is none (or, for ZLEXCOUNT, when the scores
 * differ: a lex range is only defined over equal scores). */
static int zcount_index(struct db *d, struct db_kc *kc, const struct db_zspec *sp, uint64_t *n)
{
    if (!db_zrix_large(d, kc) || (sp->by == DB_ZBY_SCORE && !db_zrix_ready(d, kc)))
        return DB_ZRIX_NONE;
    struct db_buf lo, hi;
    dbb_init(&lo);
    dbb_init(&hi);
    bool lo_start = false, hi_end = false, empty = false;
    int rc = 0;
    if (sp->by == DB_ZBY_SCORE) {
        dbb_reserve(&lo, 8);
        dbb_reserve(&hi, 8);
        lo.n = hi.n = 8;
        enc_score_put(lo.p, norm0(sp->min));
        enc_score_put(hi.p, norm0(sp->max));
        if (sp->minex && !score_next(lo.p))
            empty = true;
        if (!sp->maxex && !score_next(hi.p))
            hi_end = true;
    } else {
        /* Equal scores: the first and the last record's. */
        size_t pl = kc_prefix_len(kc);
        /* A plain iterator: kc_iter would count the index's build as
         * this command's walk (db_walk_start). */
        char *succ = kv_xmemdup(kc->sk.p, pl);
        db_prefix_successor(succ, pl);
        struct stor_it *it = stor_it_create(d->s, STOR_CF_SCORE, kc->sk.p, pl, succ, pl);
        free(succ);
        char s8[8];
        bool same = false;
        stor_it_first(it);
        if (stor_it_valid(it)) {
            size_t kn;
            const char *k = stor_it_key(it, &kn);
            if (kn >= pl + 8) {
                memcpy(s8, k + pl, 8);
                stor_it_last(it);
                k = stor_it_valid(it) ? stor_it_key(it, &kn) : NULL;
                same = k && kn >= pl + 8 && memcmp(k + pl, s8, 8) == 0;
            }
        }
        rc = stor_it_status(it);
        stor_it_free(it);
        if (rc || !same || !db_zrix_ready(d, kc)) { /* no index for a lex count it cannot serve */
            dbb_free(&lo);
            dbb_free(&hi);
            return rc ? rc : DB_ZRIX_NONE;
        }
        const struct db_lexb *a = &sp->lmin, *b = &sp->lmax;
        if (a->inf == 1 || b->inf == -1)
            empty = true;
        lo_start = a->inf == -1;
        hi_end = b->inf == 1;
        dbb_append(&lo, s8, 8);
        dbb_append(&hi, s8, 8);
        if (!lo_start) {
            dbb_append(&lo, a->v.p, a->v.n);
            if (a->ex)
                dbb_append(&lo, "", 1); /* the first member past it */
        }
        if (!hi_end) {
            dbb_append(&hi, b->v.p, b->v.n);
            if (!b->ex)
                dbb_append(&hi, "", 1);
        }
    }
    uint64_t rlo = 0, rhi = kc->m.size;
    if (!empty && !lo_start)
        rc = db_zrix_rank(d, kc, lo.p, lo.n, &rlo);
    if (!empty && rc == 0 && !hi_end)
        rc = db_zrix_rank(d, kc, hi.p, hi.n, &rhi);
    if (rc == 0)
        *n = !empty && rhi > rlo ? rhi - rlo : 0;
    dbb_free(&lo);
    dbb_free(&hi);
    return rc;
}

int db_zcount(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_zspec *sp,
              uint64_t *n)
{
    struct db_kc kc;
    struct db_zspec s = *sp;
    s.rev = 0;
    s.offset = 0;
    s.limit = -1;
    *n = 0;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc == 0)
        rc = zcount_index(d, &kc, &s, n);
    if (rc == DB_ZRIX_NONE)
        rc = zcollect(d, &kc, &s, NULL, n);
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_zrangestore(struct db *d, unsigned dbi, const char *dst, size_t dstn, const char *src,
                   size_t srcn, const struct db_zspec *sp, uint64_t *n)
{
    struct db_vec v;
    db_vec_init(&v);
    *n = 0;
    int rc = db_zrange(d, dbi, src, srcn, sp, &v);
    if (rc == 0 && (rc = db_zstore(d, dbi, dst, dstn, &v)) == 0)
        *n = v.n;
    db_vec_destroy(&v);
    return rc;
}

int db_zeach_score(struct db *d, unsigned dbi, const char *key, size_t klen, const double *ranges,
                   size_t n, db_zeach_fn *fn, void *arg)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc) {
        kc_free(&kc);
        return rc == KV_ENOTFOUND ? 0 : rc;
    }
    size_t pl = kc_prefix_len(&kc);
    struct db_buf seek;
    dbb_init(&seek);
    struct stor_it *it = kc_iter(d, &kc, STOR_CF_SCORE);
    bool stop = false;
    /* One iterator, one seek per range. */
    for (size_t r = 0; r < n && !stop; r++) {
        char s8[8];
        enc_score_put(s8, norm0(ranges[2 * r]));
        seek.n = 0;
        dbb_append(&seek, kc.sk.p, pl);
        dbb_append(&seek, s8, 8);
        for (stor_it_seek(it, seek.p, seek.n); stor_it_valid(it); stor_it_next(it)) {
            size_t kn, sn;
            const char *k = stor_it_key(it, &kn);
            const char *suffix = kc_suffix(&kc, k, kn, &sn);
            if (sn < 8)
                continue;
            double score = enc_score_get(suffix);
            if (score >= ranges[2 * r + 1])
                break;
            if (fn(suffix + 8, sn - 8, score, arg)) {
                stop = true;
                break;
            }
        }
    }
    rc = stor_it_status(it);
    stor_it_free(it);
    dbb_free(&seek);
    kc_free(&kc);
    return rc;
}

int db_zstore(struct db *d, unsigned dbi, const char *dst, size_t dstn, const struct db_vec *v)
{
    struct db_kc t;
    db_begin(d);
    int rc = kc_load(d, &t, dbi, dst, dstn);
    if (rc == 0) {
        db_store_vec(d, &t, ENC_TYPE_ZSET, v);
        rc = db_commit(d);
    }
    kc_free(&t);
    return rc;
}

int db_zrank(struct db *d, unsigned dbi, const char *key, size_t klen, const char *m, size_t mn,
             int rev, uint64_t *rank)
{
    struct db_kc kc;
    double score;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc == 0)
        rc = zget(d, &kc, m, mn, &score, false);
    if (rc == 0) {
        /* Two forward walks take turns, by the time each has taken, until
         * one ends: from the low end to the member's record, counting the
         * records before it, and from the member's record to the high end,
         * counting those after it. Forward, because a backward step in a
         * memtable searches its skiplist from the top. So the cost is at
         * most about twice the cheaper walk's, O(min(rank, size - rank))
         * records when nothing was deleted, where it was O(rank) (a
         * ZREVRANK of the top member of 1M: 190 ms); a leaderboard's top,
         * full of the tombstones its hot members' old scores left, costs
         * more than its count of records says, and the other walk wins. */
        size_t tkn;
        const char *t = kc_score(&kc, score, m, mn, &tkn);
        struct db_buf target;
        dbb_init(&target);
        dbb_append(&target, t, tkn);
        if (db_zrix_ready(d, &kc)) {
            size_t pl = kc_prefix_len(&kc);
            uint64_t r = 0;
            rc = db_zrix_rank(d, &kc, target.p + pl, target.n - pl, &r);
            if (rc != DB_ZRIX_NONE) {
                dbb_free(&target);
                if (rc == 0)
                    *rank = rev ? kc.m.size - 1 - r : r;
                kc_free(&kc);
                return rc;
            }
            rc = 0;
        }
        struct stor_it *lo = kc_iter(d, &kc, STOR_CF_SCORE), *hi = kc_iter(d, &kc, STOR_CF_SCORE);
        uint64_t count[2] = {0, 0}, r = 0, spent[2] = {0, 0}; /* as zcollect's */
        stor_it_first(lo);
        stor_it_seek(hi, target.p, target.n);
        if (stor_it_valid(hi))
            stor_it_next(hi); /* past the member's own record */
        for (bool found = false; !found;) {
            int side = spent[1] < spent[0];
            struct stor_it *it = side ? hi : lo;
            uint64_t t0 = mono_ns();
            for (int step = 0; step < 4; step++) {
                size_t kn;
                if (!stor_it_valid(it)) {
                    rc = stor_it_status(it);
                    if (rc == 0 && side) /* all counted after it */
                        r = kc.m.size - 1 - count[1];
                    else if (rc == 0)
                        rc = KV_ECORRUPT; /* the member's score record is missing */
                    found = true;
                    break;
                }
                if (!side) {
                    const char *k = stor_it_key(it, &kn);
                    if (db_bytes_cmp(k, kn, target.p, target.n) >= 0) {
                        r = count[0];
                        found = true;
                        break;
                    }
                }
                count[side]++;
                stor_it_next(it);
            }
            spent[side] += mono_ns() - t0;
        }
        stor_it_free(lo);
        stor_it_free(hi);
        dbb_free(&target);
        *rank = rev ? kc.m.size - 1 - r : r;
    }
    kc_free(&kc);
    return rc;
}

/* Deletes the members listed in v (with their scores) from an open zset
 * and settles its meta record. */
static int zdel_all(struct db *d, struct db_kc *kc, const struct db_vec *v)
{
    db_zrix_touch(d, kc, v->n);
    for (size_t i = 0; i < v->n; i++)
        zdel(d, kc, db_vec_ptr(v, i), db_vec_len(v, i), v->items[i].score);
    kc->m.size -= v->n;
    return v->n ? kc_settle(d, kc) : 0;
}

int db_zremrange(struct db *d, unsigned dbi, const char *key, size_t klen,
                 const struct db_zspec *sp, uint64_t *removed)
{
    struct db_kc kc;
    struct db_vec v;
    db_vec_init(&v);
    db_begin(d);
    *removed = 0;
    struct db_zspec s = *sp;
    s.rev = 0;
    s.offset = 0;
    s.limit = -1;
    uint64_t n;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc == 0)
        rc = zcollect(d, &kc, &s, &v, &n);
    if (rc == 0)
        rc = zdel_all(d, &kc, &v);
    if (rc == 0)
        rc = db_commit(d);
    if (rc == 0)
        *removed = v.n;
    kc_free(&kc);
    db_vec_destroy(&v);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_zpop(struct db *d, unsigned dbi, const char *key, size_t klen, int max, uint64_t count,
            struct db_vec *out)
{
    struct db_kc kc;
    db_begin(d);
    struct db_zspec s;
    memset(&s, 0, sizeof s);
    s.by = DB_ZBY_RANK;
    s.rev = max;
    s.start = 0;
    s.stop = count > INT64_MAX ? INT64_MAX : (int64_t)count - 1;
    uint64_t n;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc == 0 && count > 0)
        rc = zcollect(d, &kc, &s, out, &n);
    if (rc == 0)
        rc = zdel_all(d, &kc, out);
    if (rc == 0)
        rc = db_commit(d);
    if (rc)
        db_vec_clear(out);
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_zrandmember(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t count,
                   struct db_vec *out)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_ZSET);
    if (rc == 0)
        rc = db_pick(d, &kc, count, DB_PICK_SCORES, out);
    kc_free(&kc);
    if (rc != DB_PICK_READ_ALL)
        return rc == KV_ENOTFOUND ? 0 : rc;
    struct db_vec all;
    db_vec_init(&all);
    struct db_zspec s;
    memset(&s, 0, sizeof s);
    s.by = DB_ZBY_LEX;
    s.lmin.inf = -1;
    s.lmax.inf = 1;
    s.limit = -1;
    uint64_t found = d->looked_found, missing = d->looked_missing;
    rc = db_zrange(d, dbi, key, klen, &s, &all);
    db_lookups_rewind(d, found, missing); /* the same key, read whole */
    if (rc == 0)
        db_sample(d, &all, 1, count, out);
    db_vec_destroy(&all);
    return rc;
}

/* ---- ZUNION / ZINTER / ZDIFF ---- */

/* Every member of input kc (a set or a zset) in member order, scored. */
static int input_members(struct db *d, struct db_kc *kc, struct db_vec *out)
{
    if (kc->m.type == ENC_TYPE_NONE)
        return 0;
    struct stor_it *it = kc_iter(d, kc, STOR_CF_SUB);
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn, mn;
        const char *k = stor_it_key(it, &kn);
        const char *v = stor_it_value(it, &vn);
        const char *m = kc_suffix(kc, k, kn, &mn);
        double score = 1.0;
        if (kc->m.type == ENC_TYPE_ZSET) {
            if (vn != 8)
                continue;
            score = enc_score_get(v);
        }
        db_vec_push(out, m, mn, score);
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    return rc;
}

static double aggregate(double acc, double v, int agg)
{
    switch (agg) {
    case DB_AGG_MIN:
        return v < acc ? v : acc;
    case DB_AGG_MAX:
        return v > acc ? v : acc;
    default:
        acc += v;
        return isnan(acc) ? 0.0 : acc; /* inf + -inf: Redis makes it 0 */
    }
}

static int cmp_score_member(const void *a, const void *b, void *arg)
{
    const struct db_vec *v = arg;
    const struct db_vitem *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return db_bytes_cmp(v->buf + x->off, x->len, v->buf + y->off, y->len);
}

int db_zsetop(struct db *d, unsigned dbi, int op, const struct db_str *keys, size_t nkeys,
              const double *weights, int agg, struct db_vec *out)
{
    struct db_kc *kcs = kv_xmalloc(nkeys * sizeof *kcs);
    struct db_vec *in = kv_xmalloc(nkeys * sizeof *in);
    size_t *pos = kv_xmalloc(nkeys * sizeof *pos);
    int rc = 0;
    for (size_t i = 0; i < nkeys; i++) {
        db_vec_init(&in[i]);
        pos[i] = 0;
        int r = kc_load(d, &kcs[i], dbi, keys[i].p, keys[i].n);
        int t = kcs[i].m.type;
        if (r == 0 && t != ENC_TYPE_NONE && t != ENC_TYPE_SET && t != ENC_TYPE_ZSET)
            r = KV_EWRONGTYPE;
        if (r && !rc)
            rc = r;
    }
    for (size_t i = 0; i < nkeys && rc == 0; i++)
        rc = input_members(d, &kcs[i], &in[i]);
    if (rc)
        goto out;
    if (op == DB_ZINTER)
        for (size_t i = 0; i < nkeys; i++)
            if (in[i].n == 0)
                goto out; /* an empty input empties the intersection */
    /* Scores aggregate in ascending input size, ties in argument order, as
     * Redis does: with inf + -inf made 0 at each step, and rounding, the
     * order shows in the result. A stable insertion sort of the indexes. */
    size_t *order = kv_xmalloc(nkeys * sizeof *order);
    for (size_t i = 0; i < nkeys; i++) {
        size_t j = i;
        while (j > 0 && in[order[j - 1]].n > in[i].n) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }

    /* Inputs are member-sorted: merge them, one member at a time. */
    for (;;) {
        /* The smallest member at any input's position. A pointer cannot say
         * "none": an empty member of an otherwise empty vec is NULL + 0. */
        const char *mm = NULL;
        size_t mmn = 0;
        bool any = false;
        for (size_t i = 0; i < nkeys; i++) {
            if (pos[i] >= in[i].n)
                continue;
            const char *m = db_vec_ptr(&in[i], pos[i]);
            size_t mn = db_vec_len(&in[i], pos[i]);
            if (!any || db_bytes_cmp(m, mn, mm, mmn) < 0) {
                mm = m;
                mmn = mn;
                any = true;
            }
        }
        if (!any)
            break;
        size_t have = 0;
        bool first = false, seen = false;
        double acc = 0;
        for (size_t j = 0; j < nkeys; j++) {
            size_t i = op == DB_ZDIFF ? j : order[j];
            if (pos[i] >= in[i].n ||
                db_bytes_cmp(db_vec_ptr(&in[i], pos[i]), db_vec_len(&in[i], pos[i]), mm, mmn) != 0)
                continue;
            double v = in[i].items[pos[i]].score;
            if (op != DB_ZDIFF) {
                v *= weights ? weights[i] : 1.0;
                if (isnan(v))
                    v = 0; /* inf * 0: Redis makes it 0 */
            }
            acc = seen ? aggregate(acc, v, agg) : v;
            seen = true;
            have++;
            if (i == 0)
                first = true;
        }
        bool keep = op == DB_ZUNION || (op == DB_ZINTER && have == nkeys) ||
                    (op == DB_ZDIFF && first && have == 1);
        if (keep)
            db_vec_push(out, mm, mmn, acc); /* a -0 stays -0 in a reply, as in Redis */
        /* Advance every input past mm (inputs are never modified, so mm
         * stays valid while positions move). */
        for (size_t i = 0; i < nkeys; i++)
            if (pos[i] < in[i].n &&
                db_bytes_cmp(db_vec_ptr(&in[i], pos[i]), db_vec_len(&in[i], pos[i]), mm, mmn) == 0)
                pos[i]++;
    }
    if (out->n > 1) /* qsort of a NULL array is undefined even for zero items */
        qsort_r(out->items, out->n, sizeof *out->items, cmp_score_member, out);
    free(order);
out:
    for (size_t i = 0; i < nkeys; i++) {
        kc_free(&kcs[i]);
        db_vec_destroy(&in[i]);
    }
    free(kcs);
    free(in);
    free(pos);
    if (rc)
        db_vec_clear(out);
    return rc;
}

int db_zsetop_store(struct db *d, unsigned dbi, int op, const char *dst, size_t dstn,
                    const struct db_str *keys, size_t nkeys, const double *weights, int agg,
                    uint64_t *card)
{
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_zsetop(d, dbi, op, keys, nkeys, weights, agg, &v);
    if (rc == 0 && (rc = db_zstore(d, dbi, dst, dstn, &v)) == 0)
        *card = v.n;
    db_vec_destroy(&v);
    return rc;
}
