/*
 * db_scan — walks of the key space: SCAN with its cursor, RANDOMKEY,
 * sampling for the random-pick commands, and HSCAN, SSCAN and ZSCAN.
 */
#include "db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

/* [db|0000, db|4000): every record of one database in every column family,
 * since slots stay below 0x4000. */
void db_range(unsigned dbi, char lo[3], char hi[3])
{
    lo[0] = (char)dbi;
    lo[1] = lo[2] = 0;
    hi[0] = (char)dbi;
    hi[1] = (char)(ENC_SLOTS >> 8);
    hi[2] = 0;
}

/* SCAN's work per call is bounded, as Redis bounds it (ten empty buckets
 * per key asked for): RocksDB keeps a deleted key's tombstone, and older
 * versions of rewritten ones, until compaction, and one iterator step
 * passes all of them in a row. After 950,000 DELs, SCAN 0 COUNT 10 walked
 * them all in one call: 340-480 ms with every client waiting. So a call
 * walks ranges of slots, each with RocksDB allowed SCAN_SKIP unseen
 * entries; a range that needs more is walked again, an eighth as wide
 * (down to one slot, which is walked whole: only keys sharing a hash tag
 * put that many in one slot). Each range that fits sets the next one's
 * width from its own time, aiming at SCAN_RANGE_US. A call starts no
 * range after SCAN_CALL_US once it has finished one, and ends at count
 * keys; its cursor then holds where to go on and the width, so the next
 * call does not learn it again. A call may return fewer keys than count,
 * or none, with a cursor that goes on, as Redis's may. */
#define SCAN_SKIP 1024
#define SCAN_RANGE_US 250
#define SCAN_CALL_US 1000
/* A new scan's first range is all slots, unless more meta records than
 * this wait in the write-back for their order: a walk of all slots would
 * order them all at once (SCAN right after 300,000 SETs: 17-67 ms with
 * every client waiting), where one of SCAN_FIRST_NARROW slots orders one
 * of their 64 bands (stor_waiting), and each range after it one or two. */
#define SCAN_WAITING_MAX 4096
#define SCAN_FIRST_NARROW 128

/* The user key, slot, type and expiry of the meta record it stands on;
 * false for one that does not decode, which walks pass over. */
static bool meta_at(struct stor_it *it, const char **uk, size_t *ukn, uint16_t *slot, uint8_t *type,
                    uint64_t *exp)
{
    size_t kn, vn;
    const char *k = stor_it_key(it, &kn);
    const char *v = stor_it_value(it, &vn);
    unsigned kdb;
    return enc_meta_key_decode(k, kn, &kdb, slot, uk, ukn) == 0 &&
           enc_meta_peek(v, vn, type, exp) == 0;
}

/* The position a SCAN cursor holds: the range width to go on with (its
 * log2, so that the next call does not learn it again), slot(2), then the
 * key to start at, inclusive (empty: the slot's start). */
static char *scan_pos(unsigned span, uint16_t slot, const char *k, size_t kn, bool after, size_t *n)
{
    *n = 3 + kn + after;
    char *p = kv_xmalloc(*n);
    unsigned lg = 0;
    while ((1u << lg) < span)
        lg++;
    p[0] = (char)lg;
    enc_put_u16(p + 1, slot);
    if (kn)
        memcpy(p + 3, k, kn);
    if (after)
        p[3 + kn] = 0; /* the next key up, in bytewise order */
    return p;
}

int db_scan(struct db *d, unsigned dbi, const char *cursor, size_t cn, const char *pat, size_t patn,
            int type, uint64_t count, struct db_vec *out, char **next, size_t *nextn)
{
    *next = NULL;
    *nextn = 0;
    if (db_surely_empty(d, dbi))
        return 0; /* as db_randomkey: no walk over what deletes left */
    if (count == 0)
        count = 10;
    unsigned slot = 0;
    unsigned span =
        stor_waiting(d->s, STOR_CF_META) > SCAN_WAITING_MAX ? SCAN_FIRST_NARROW : ENC_SLOTS;
    const char *from = "";
    size_t fromn = 0;
    if (cursor && cn >= 3 && (unsigned char)cursor[0] <= 14) {
        span = 1u << (unsigned char)cursor[0];
        slot = enc_get_u16(cursor + 1);
        from = cursor + 3;
        fromn = cn - 3;
    }
    if (slot >= ENC_SLOTS)
        return 0;
    uint64_t now = stor_now_ms(), seen = 0;
    struct db_buf start;
    dbb_init(&start);
    int rc = 0;
    uint64_t t0 = stor_mono_us(), tr = t0;
    bool progress = false;
    while (slot < ENC_SLOTS && !(progress && tr - t0 >= SCAN_CALL_US)) {
        unsigned end = span < ENC_SLOTS - slot ? slot + span : ENC_SLOTS;
        char lo[3], hi[3];
        lo[0] = hi[0] = (char)dbi;
        enc_put_u16(lo + 1, (uint16_t)slot);
        enc_put_u16(hi + 1, (uint16_t)end);
        struct stor_it *it =
            stor_it_create_limited(d->s, STOR_CF_META, lo, 3, hi, 3, span > 1 ? SCAN_SKIP : 0);
        dbb_reserve(&start, 3 + fromn);
        memcpy(start.p, lo, 3);
        memcpy(start.p + 3, from, fromn);
        start.n = 3 + fromn;
        stor_it_seek(it, start.p, start.n);
        size_t mark = out->n, mark_used = out->used;
        uint64_t seen0 = seen;
        bool full = false, stopped = false;
        for (; stor_it_valid(it); stor_it_next(it)) {
            const char *uk;
            size_t ukn;
            uint16_t ks;
            uint8_t t;
            uint64_t exp;
            if (!meta_at(it, &uk, &ukn, &ks, &t, &exp))
                continue;
            bool live = !exp || exp > now;
            if (live && (!type || t == type) && (!pat || db_glob_match(pat, patn, uk, ukn, 0)))
                db_vec_push(out, uk, ukn, 0);
            if (++seen >= count) {
                /* Every key up to here is sound unless RocksDB's side
                 * stopped before it: the keys given after that came from
                 * the overlay alone. */
                stopped = stor_it_stopped(it);
                full = true;
                if (!stopped) {
                    char *pos =
                        scan_pos(span, ks, uk, ukn, true, nextn); /* uk dies with the move */
                    stor_it_next(it);
                    if (stor_it_valid(it) || stor_it_stopped(it) || end < ENC_SLOTS)
                        *next = pos;
                    else
                        free(pos); /* nothing after it: the scan is complete */
                }
                break;
            }
        }
        if (!full)
            stopped = stor_it_stopped(it);
        rc = stor_it_status(it);
        stor_it_free(it);
        if (rc) {
            free(*next);
            *next = NULL;
            break;
        }
        if (stopped) {
            /* Too many unseen entries for one walk: this range again,
             * narrower; what it gave may have passed keys over. */
            out->n = mark;
            out->used = mark_used;
            seen = seen0;
            span = span / 8 ? span / 8 : 1;
            tr = stor_mono_us();
            continue;
        }
        if (full)
            break;
        slot = end; /* the range is done */
        from = "";
        fromn = 0;
        progress = true;
        uint64_t now_us = stor_mono_us(), took = now_us - tr + 1;
        tr = now_us;
        /* As wide as SCAN_RANGE_US would take at this range's pace, at
         * most twice and at least a quarter of this one. */
        uint64_t w = (uint64_t)span * SCAN_RANGE_US / took;
        w = w > 2ull * span ? 2ull * span : w < span / 4 ? span / 4 : w;
        span = w < 1 ? 1 : w > ENC_SLOTS ? ENC_SLOTS : (unsigned)w;
    }
    dbb_free(&start);
    if (!rc && !*next && slot < ENC_SLOTS && seen < count) /* out of ranges: on from here */
        *next = scan_pos(span, (uint16_t)slot, from, fromn, false, nextn);
    return rc;
}

int db_randomkey(struct db *d, unsigned dbi, char **key, size_t *klen)
{
    /* An emptied db may still hold tombstones until compaction, which the
     * walk below would step over one by one. */
    if (db_surely_empty(d, dbi))
        return KV_ENOTFOUND;
    char lo[3], hi[3];
    db_range(dbi, lo, hi);
    struct stor_it *it = stor_it_create(d->s, STOR_CF_META, lo, 3, hi, 3);
    db_watch_skips(d);
    uint64_t skip0 = stor_skips();
    char start[3];
    start[0] = (char)dbi;
    enc_put_u16(start + 1, (uint16_t)(db_rand(d) % ENC_SLOTS));
    stor_it_seek(it, start, 3);
    uint64_t now = stor_now_ms();
    int rc = KV_ENOTFOUND;
    /* From a random slot forward, wrapping once; skip expired records. */
    for (int pass = 0; pass < 2 && rc == KV_ENOTFOUND; pass++) {
        if (pass == 1)
            stor_it_first(it);
        for (; stor_it_valid(it); stor_it_next(it)) {
            const char *uk;
            size_t ukn;
            uint16_t slot;
            uint8_t t;
            uint64_t exp;
            if (!meta_at(it, &uk, &ukn, &slot, &t, &exp) || (exp && exp <= now))
                continue;
            *key = kv_xmemdup(uk, ukn);
            *klen = ukn;
            rc = 0;
            break;
        }
    }
    int st = stor_it_status(it);
    stor_it_free(it);
    /* A few keys among many deleted ones: every call walks the tombstones
     * between a random slot and the next live key, until compaction drops
     * them. One that stepped over at least DB_TIDY_MIN, and four times as
     * many as the db holds keys, asks for that compaction now, of the db's
     * meta records: what it rewrites is then mostly what it drops. */
    uint64_t dead = stor_skips() - skip0;
    if (dead >= DB_TIDY_MIN && dead / 4 >= d->nkeys[dbi]) {
        struct stor_range r = {STOR_CF_META, lo, hi, 3, 3};
        stor_compact_async(d->s, &r, 1);
    }
    if (st && rc == 0) {
        free(*key);
        *key = NULL;
    }
    return st ? st : rc;
}

/* ---- sampling ---- */

void db_sample(struct db *d, const struct db_vec *all, size_t stride, int64_t count,
               struct db_vec *out)
{
    size_t n = all->n / stride;
    if (n == 0 || count == 0)
        return;
    if (count < 0) {
        /* With repetition: |count| independent picks. */
        uint64_t want = count == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-count;
        for (uint64_t i = 0; i < want; i++) {
            size_t e = (size_t)(db_rand(d) % n) * stride;
            for (size_t j = 0; j < stride; j++)
                db_vec_push(out, db_vec_ptr(all, e + j), db_vec_len(all, e + j),
                            all->items[e + j].score);
        }
        return;
    }
    /* Distinct: a partial Fisher-Yates shuffle over element indexes. */
    size_t want = (uint64_t)count < n ? (size_t)count : n;
    size_t *idx = kv_xmalloc(n * sizeof *idx);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = 0; i < want; i++) {
        size_t j = i + (size_t)(db_rand(d) % (n - i));
        size_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        size_t e = idx[i] * stride;
        for (size_t k = 0; k < stride; k++)
            db_vec_push(out, db_vec_ptr(all, e + k), db_vec_len(all, e + k),
                        all->items[e + k].score);
    }
    free(idx);
}

/* ---- HSCAN / SSCAN / ZSCAN ---- */

int db_cscan(struct db *d, unsigned dbi, const char *key, size_t klen, int type, const char *cursor,
             size_t cn, const char *pat, size_t patn, uint64_t count, struct db_vec *out,
             char **next, size_t *nextn)
{
    struct db_kc kc;
    *next = NULL;
    *nextn = 0;
    int rc = kc_open(d, &kc, dbi, key, klen, type);
    if (rc) {
        kc_free(&kc);
        return rc == KV_ENOTFOUND ? 0 : rc;
    }
    struct stor_it *it = kc_iter(d, &kc, STOR_CF_SUB);
    if (cursor && !kc.inl) { /* an inline one is returned whole, whatever the cursor */
        size_t kn;
        const char *k = kc_sub(&kc, cursor, cn, &kn);
        stor_it_seek(it, k, kn);
        size_t ikn;
        if (stor_it_valid(it)) {
            const char *ik = stor_it_key(it, &ikn);
            if (ikn == kn && memcmp(ik, k, kn) == 0)
                stor_it_next(it);
        }
    } else {
        stor_it_first(it);
    }
    if (count == 0)
        count = 10;
    if (kc.inl)
        count = UINT64_MAX; /* all in one reply, cursor 0: Redis's small encodings */
    uint64_t seen = 0;
    for (; stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn, fn;
        const char *k = stor_it_key(it, &kn);
        const char *v = stor_it_value(it, &vn);
        const char *f = kc_suffix(&kc, k, kn, &fn);
        if (!pat || db_glob_match(pat, patn, f, fn, 0)) {
            db_vec_push(out, f, fn, 0);
            if (type == ENC_TYPE_HASH) {
                db_vec_push(out, v, vn, 0);
            } else if (type == ENC_TYPE_ZSET && vn == 8) {
                char sbuf[64];
                double sc = enc_score_get(v);
                db_vec_push(out, sbuf, kv_d2str(sbuf, sizeof sbuf, sc), sc);
            }
        }
        if (++seen >= count) {
            char *last = kv_xmemdup(f, fn); /* f dies with the next move */
            stor_it_next(it);
            if (stor_it_valid(it)) {
                *next = last;
                *nextn = fn;
            } else {
                free(last);
            }
            break;
        }
    }
    rc = stor_it_status(it);
    stor_it_free(it);
    kc_free(&kc);
    if (rc) {
        free(*next);
        *next = NULL;
    }
    return rc;
}
