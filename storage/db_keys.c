/*
 * db_keys — the key-space commands on whole keys: TYPE, EXISTS, DEL and
 * UNLINK, RENAME, COPY, MOVE, DUMP and RESTORE's value lists, FLUSHDB and
 * FLUSHALL, OBJECT's facts and MEMORY USAGE.
 */
#include "db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- key space ---- */

int db_type(struct db *d, unsigned dbi, const char *key, size_t klen, int *type)
{
    struct db_kc kc;
    int rc = kc_load(d, &kc, dbi, key, klen);
    *type = kc.m.type;
    kc_free(&kc);
    return rc;
}

int db_exists(struct db *d, unsigned dbi, const char *key, size_t klen)
{
    int type = 0;
    int rc = db_type(d, dbi, key, klen, &type);
    return rc ? rc : type != ENC_TYPE_NONE;
}

/* The meta keys of keys[0..m) (m at most DB_MANY) of db dbi, laid one
 * after another in buf (which it empties first), named by r->k[], r->kn[]. */
static void meta_keys(struct db_buf *buf, unsigned dbi, const struct db_str *keys, size_t m,
                      struct db_many *r)
{
    size_t total = 0;
    for (size_t i = 0; i < m; i++)
        total += enc_meta_key_len(keys[i].n);
    buf->n = 0;
    dbb_reserve(buf, total); /* once, so that the keys laid in it stay put */
    for (size_t i = 0; i < m; i++) {
        r->k[i] = buf->p + buf->n;
        r->kn[i] = enc_meta_key(buf->p + buf->n, dbi, enc_slot(keys[i].p, keys[i].n), keys[i].p,
                                keys[i].n);
        buf->n += r->kn[i];
    }
}

int db_metas(struct db *d, unsigned dbi, const struct db_str *keys, size_t n, size_t prefetched,
             bool peek, void (*each)(void *arg, size_t i, const struct enc_meta *m), void *arg)
{
    struct db_many r;
    struct db_buf buf;
    int rc = 0;
    dbb_init(&buf);
    uint64_t now = db_expiry_clock(d);
    for (size_t at = 0; at < n; at += DB_MANY) {
        size_t m = n - at < DB_MANY ? n - at : DB_MANY;
        meta_keys(&buf, dbi, keys + at, m, &r);
        db_rget_many(d, STOR_CF_META, &r, m, true, prefetched > at ? prefetched - at : 0,
                     peek ? ENC_META_HDR : SIZE_MAX);
        for (size_t i = 0; i < m; i++) {
            struct enc_meta meta;
            int e = r.rc[i];
            if (e == 0) {
                if (peek) {
                    memset(&meta, 0, sizeof meta);
                    e = enc_meta_peek(r.v[i], r.vn[i], &meta.type, &meta.expire_ms);
                } else {
                    e = enc_meta_value_decode(r.v[i], r.vn[i], &meta);
                }
                bool live = e == 0 && !(meta.expire_ms && meta.expire_ms <= now);
                *(live ? &d->looked_found : &d->looked_missing) += 1;
                each(arg, at + i, live ? &meta : NULL);
                free(r.v[i]);
            } else {
                d->looked_missing += e == KV_ENOTFOUND;
                each(arg, at + i, NULL);
            }
            if (e && e != KV_ENOTFOUND && rc == 0)
                rc = e;
        }
    }
    dbb_free(&buf);
    return rc;
}

static void exists_one(void *arg, size_t i, const struct enc_meta *m)
{
    (void)i;
    *(uint64_t *)arg += m != NULL;
}

int db_exists_many(struct db *d, unsigned dbi, const struct db_str *keys, size_t n,
                   size_t prefetched, uint64_t *count)
{
    *count = 0;
    return db_metas(d, dbi, keys, n, prefetched, true, exists_one, count);
}

int db_del_many(struct db *d, unsigned dbi, const struct db_str *keys, size_t n, size_t prefetched,
                unsigned char *deleted)
{
    struct db_many r;
    struct db_buf buf;
    int rc = 0;
    bool any = false;
    uint64_t now = db_expiry_clock(d);
    db_begin(d);
    memset(deleted, 0, n);
    dbb_init(&buf);
    for (size_t at = 0; at < n && rc == 0; at += DB_MANY) {
        size_t m = n - at < DB_MANY ? n - at : DB_MANY;
        meta_keys(&buf, dbi, keys + at, m, &r);
        /* No fill: the delete would only turn a filled entry into a
         * negative one (kc_take). A key an earlier chunk deleted reads as
         * absent from the record set. */
        db_rget_many(d, STOR_CF_META, &r, m, false, prefetched > at ? prefetched - at : 0,
                     SIZE_MAX);
        for (size_t i = 0; i < m; i++) {
            struct enc_meta meta;
            const char *pv;
            size_t pn;
            int e = r.rc[i];
            if (e == 0) {
                e = enc_meta_value_decode(r.v[i], r.vn[i], &meta);
                /* Live, and not deleted already by this command (a key named
                 * twice in one chunk): what was read is the committed record,
                 * which the key counts take from the note. */
                if (e == 0 && !(meta.expire_ms && meta.expire_ms <= now) &&
                    stor_batch_lookup(&d->b, STOR_CF_META, r.k[i], r.kn[i], &pv, &pn) ==
                        STOR_ABSENT) {
                    struct db_kc kc;
                    kc_blank(&kc, dbi, keys[at + i].p, keys[at + i].n);
                    kc.m = meta;
                    kc.raw = r.v[i]; /* lent: reindex_expiry reads the old expiry */
                    kc.rawn = r.vn[i];
                    kc_del_read(d, &kc);
                    kc.raw = NULL;
                    kc_free(&kc);
                    deleted[at + i] = 1;
                    any = true;
                }
                free(r.v[i]);
            }
            if (e && e != KV_ENOTFOUND && rc == 0)
                rc = e;
        }
    }
    dbb_free(&buf);
    if (rc == 0 && any)
        rc = db_commit(d);
    if (rc) {
        db_begin(d); /* nothing deleted */
        memset(deleted, 0, n);
    }
    return rc;
}

int db_del(struct db *d, unsigned dbi, const char *key, size_t klen)
{
    struct db_str k = {key, klen};
    unsigned char deleted;
    int rc = db_del_many(d, dbi, &k, 1, 0, &deleted);
    return rc ? rc : deleted;
}

/* Shared by RENAME and COPY: src → dst, optionally keeping dst. */
static int move_key(struct db *d, unsigned sdb, const char *src, size_t srcn, unsigned ddb,
                    const char *dst, size_t dstn, int keep_dst, int delete_src)
{
    struct db_kc s, t;
    db_begin(d);
    int rc = delete_src ? kc_take(d, &s, sdb, src, srcn) : kc_load(d, &s, sdb, src, srcn);
    int rc2 = kc_load(d, &t, ddb, dst, dstn);
    if (rc || (rc = rc2))
        goto out;
    if (s.m.type == ENC_TYPE_NONE) {
        rc = KV_ENOTFOUND;
        goto out;
    }
    if (sdb == ddb && srcn == dstn && memcmp(src, dst, srcn) == 0) {
        rc = keep_dst ? 0 : 1; /* RENAME k k: nothing to do */
        goto out;
    }
    if (keep_dst && t.m.type != ENC_TYPE_NONE) {
        rc = 0;
        goto out;
    }
    db_copy_records(d, &s, &t, &rc);
    if (rc)
        goto out;
    if (delete_src)
        kc_del_read(d, &s); /* read first, with nothing in the record set */
    rc = db_commit(d);
    if (rc == 0)
        rc = 1;
out:
    kc_free(&s);
    kc_free(&t);
    return rc;
}

int db_rename(struct db *d, unsigned dbi, const char *src, size_t srcn, const char *dst,
              size_t dstn, int nx)
{
    return move_key(d, dbi, src, srcn, dbi, dst, dstn, nx, 1);
}

int db_copy(struct db *d, unsigned sdb, const char *src, size_t srcn, unsigned ddb, const char *dst,
            size_t dstn, int replace)
{
    return move_key(d, sdb, src, srcn, ddb, dst, dstn, !replace, 0);
}

int db_move(struct db *d, unsigned sdb, unsigned ddb, const char *key, size_t klen)
{
    return move_key(d, sdb, key, klen, ddb, key, klen, 1, 1);
}

/* The whole value of the key kc holds (loaded, present), into v. Sub
 * records sort by field: a list's positions are big-endian, so its
 * elements come in order too. */
static int dump_value(struct db *d, struct db_kc *kc, struct db_value *v)
{
    v->type = kc->m.type;
    v->expire_ms = kc->m.expire_ms;
    if (kc->m.type == ENC_TYPE_STRING) {
        db_vec_push(&v->items, kc->m.value, kc->m.vlen, 0);
        return 0;
    }
    int rc = 0;
    struct stor_it *it = kc_iter(d, kc, STOR_CF_SUB);
    for (stor_it_first(it); rc == 0 && stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn, fn;
        const char *k = stor_it_key(it, &kn), *val = stor_it_value(it, &vn);
        const char *f = kc_suffix(kc, k, kn, &fn);
        switch (kc->m.type) {
        case ENC_TYPE_HASH:
            db_vec_push(&v->items, f, fn, 0);
            db_vec_push(&v->items, val, vn, 0);
            break;
        case ENC_TYPE_SET:
            db_vec_push(&v->items, f, fn, 0);
            break;
        case ENC_TYPE_ZSET:
            if (vn != 8) {
                rc = KV_ECORRUPT;
                break;
            }
            db_vec_push(&v->items, f, fn, enc_score_get(val));
            break;
        default:
            db_vec_push(&v->items, val, vn, 0);
        }
    }
    if (rc == 0)
        rc = stor_it_status(it);
    stor_it_free(it);
    return rc;
}

int db_dump(struct db *d, unsigned dbi, const char *key, size_t klen, struct db_value *v)
{
    struct db_kc kc;
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc == 0 && kc.m.type == ENC_TYPE_NONE)
        rc = KV_ENOTFOUND;
    if (rc == 0)
        rc = dump_value(d, &kc, v);
    kc_free(&kc);
    return rc;
}

int db_dump_each(struct db *d, unsigned dbi, db_dump_fn fn, void *arg)
{
    char lo[3], hi[3];
    db_range(dbi, lo, hi);
    struct stor_it *it = stor_it_create(d->s, STOR_CF_META, lo, 3, hi, 3);
    uint64_t now = db_expiry_clock(d);
    struct db_value v;
    db_vec_init(&v.items);
    int rc = 0;
    for (stor_it_first(it); rc == 0 && stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn, ukn;
        const char *k = stor_it_key(it, &kn), *val = stor_it_value(it, &vn), *uk;
        unsigned kdb;
        uint16_t slot;
        struct db_kc kc;
        if (enc_meta_key_decode(k, kn, &kdb, &slot, &uk, &ukn) != 0)
            continue; /* not a meta record's key: walks pass over it, as SCAN's */
        kc_blank(&kc, dbi, uk, ukn);
        rc = enc_meta_value_decode(val, vn, &kc.m);
        if (rc == 0 && kc.m.coding == ENC_CODING_INLINE)
            rc = db_inl_open(d, &kc); /* its records, from val */
        if (rc == 0 && kc.m.type != ENC_TYPE_NONE && !(kc.m.expire_ms && kc.m.expire_ms <= now)) {
            db_vec_clear(&v.items);
            rc = dump_value(d, &kc, &v);
            if (rc == 0)
                rc = fn(arg, uk, ukn, &v);
        }
        kc_free(&kc);
    }
    if (rc == 0)
        rc = stor_it_status(it);
    stor_it_free(it);
    db_vec_destroy(&v.items);
    return rc;
}

int db_restore(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_value *v,
               int replace)
{
    struct db_kc kc;
    db_begin(d);
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc || (kc.m.type != ENC_TYPE_NONE && !replace))
        goto out;
    const struct db_vec *it = &v->items;
    kc_fresh(d, &kc, v->type);
    if (v->type == ENC_TYPE_STRING) {
        kc.m.value = db_vec_ptr(it, 0);
        kc.m.vlen = db_vec_len(it, 0);
    } else {
        if (kc.m.coding == ENC_CODING_BLIND)
            kc.m.coding = ENC_CODING_COUNTED; /* the size is known: keep it */
        size_t stride = v->type == ENC_TYPE_HASH ? 2 : 1;
        for (size_t i = 0; i < it->n; i += stride) {
            size_t kn, fn = db_vec_len(it, i);
            const char *k, *f = db_vec_ptr(it, i);
            char b8[8];
            switch (v->type) {
            case ENC_TYPE_HASH:
                k = kc_sub(&kc, f, fn, &kn);
                db_sub_put(d, STOR_CF_SUB, k, kn, db_vec_ptr(it, i + 1), db_vec_len(it, i + 1));
                break;
            case ENC_TYPE_SET:
                k = kc_sub(&kc, f, fn, &kn);
                db_sub_put(d, STOR_CF_SUB, k, kn, "", 0);
                break;
            case ENC_TYPE_ZSET: {
                double sc = it->items[i].score == 0 ? 0.0 : it->items[i].score; /* no -0 */
                enc_score_put(b8, sc);
                k = kc_sub(&kc, f, fn, &kn);
                db_sub_put(d, STOR_CF_SUB, k, kn, b8, 8);
                k = kc_score(&kc, sc, f, fn, &kn);
                db_sub_put(d, STOR_CF_SCORE, k, kn, "", 0);
                break;
            }
            default: /* a list */
                enc_put_u64(b8, kc.m.tail++);
                k = kc_sub(&kc, b8, 8, &kn);
                db_sub_put(d, STOR_CF_SUB, k, kn, f, fn);
            }
        }
        kc.m.size = it->n / stride;
    }
    kc.m.expire_ms = v->expire_ms;
    kc_put_meta(d, &kc);
    rc = db_commit(d);
    if (rc == 0)
        rc = 1;
out:
    kc_free(&kc);
    return rc;
}

static int flush_range(struct db *d, unsigned lodb, unsigned hidb)
{
    /* The counts are zeroed below: no resolution may land on them later. */
    int src = db_counts_settle(d, true);
    if (src)
        return src;
    char lo[3], hi[3], unused[3];
    db_range(lodb, lo, unused);
    db_range(hidb, unused, hi);
    db_begin(d);
    for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
        if (cf != STOR_CF_EXPIRY) {
            stor_batch_del_range(&d->b, cf, lo, 3, hi, 3);
            continue;
        }
        /* Expiry keys are db | time | ...: [lodb, hidb | ff ff ...) takes
         * every time (and leaves the marker "", which sorts first). */
        char ehi[10];
        memset(ehi, 0xff, sizeof ehi);
        ehi[0] = (char)hidb;
        stor_batch_del_range(&d->b, cf, lo, 1, ehi, sizeof ehi);
    }
    int rc = db_commit(d);
    db_pick_reset(&d->picks); /* their collections are gone, or soon will be */
    /* The range deletes are the set's only writes: those dbs are empty. */
    for (unsigned dbi = lodb; rc == 0 && dbi <= hidb; dbi++) {
        d->nkeys[dbi] = d->nexpires[dbi] = 0;
        d->expsum[dbi] = 0;
    }
    if (rc == 0 && lodb == 0 && hidb == ENC_DB_MAX) {
        db_keyf_init(&d->keyf, d->keyf.first_cap); /* no key is left */
        db_keyf_rebuild_stop(d);
    }
    return rc;
}

int db_flushdb(struct db *d, unsigned dbi)
{
    return flush_range(d, dbi, dbi);
}

int db_flushall(struct db *d)
{
    return flush_range(d, 0, ENC_DB_MAX);
}

/* The meta family's key of an aux record: ff ff ff and its name. */
static size_t aux_key(const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    if (n + 3 > cap)
        n = cap - 3;
    memset(out, 0xff, 3);
    memcpy(out + 3, name, n);
    return n + 3;
}

int db_aux_get(struct db *d, const char *name, char **v, size_t *vn)
{
    char k[64];
    size_t kn = aux_key(name, k, sizeof k);
    return stor_get(d->s, STOR_CF_META, k, kn, v, vn);
}

int db_aux_put(struct db *d, const char *name, const char *v, size_t vn)
{
    char k[64];
    size_t kn = aux_key(name, k, sizeof k);
    db_begin(d);
    if (v)
        stor_batch_put(&d->b, STOR_CF_META, k, kn, v, vn);
    else
        stor_batch_del(&d->b, STOR_CF_META, k, kn);
    return db_commit(d);
}

int db_keyinfo(struct db *d, unsigned dbi, const char *key, size_t klen, struct db_keyinfo *ki)
{
    struct db_kc kc;
    memset(ki, 0, sizeof *ki);
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc == 0 && kc.m.type == ENC_TYPE_NONE)
        rc = KV_ENOTFOUND;
    if (rc == 0) {
        ki->type = kc.m.type;
        ki->coding = kc.m.coding;
        ki->expire_ms = kc.m.expire_ms;
        if (kc.m.type == ENC_TYPE_STRING)
            ki->size = kc.m.vlen;
        else
            rc = kc_size(d, &kc, &ki->size);
    }
    kc_free(&kc);
    return rc;
}

/* Bytes of up to `limit` records (0: all) of kc's current version in cf,
 * keys and values as encoded; *seen counts them. */
static int usage_cf(struct db *d, struct db_kc *kc, int cf, uint64_t limit, uint64_t *bytes,
                    uint64_t *seen)
{
    struct stor_it *it = kc_iter(d, kc, cf);
    *bytes = *seen = 0;
    for (stor_it_first(it); stor_it_valid(it) && (!limit || *seen < limit); stor_it_next(it)) {
        size_t kn, vn;
        stor_it_key(it, &kn);
        stor_it_value(it, &vn);
        *bytes += kn + vn;
        (*seen)++;
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    return rc;
}

int db_usage(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t samples,
             uint64_t *bytes)
{
    struct db_kc kc;
    *bytes = 0;
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc == 0 && kc.m.type == ENC_TYPE_NONE)
        rc = KV_ENOTFOUND;
    if (rc) {
        kc_free(&kc);
        return rc;
    }
    uint64_t total = kc.mk.n + kc.rawn;
    if (kc.m.expire_ms)
        total += 1 + 8 + 2 + klen; /* its expiry index record */
    uint64_t n = 0;
    if (kc.m.type != ENC_TYPE_STRING && !kc.inl) /* an inline one's are in raw */
        rc = kc_size(d, &kc, &n);
    for (int pass = 0; pass < 2 && n && !rc; pass++) {
        int cf = pass ? STOR_CF_SCORE : STOR_CF_SUB;
        if (pass && kc.m.type != ENC_TYPE_ZSET)
            break;
        uint64_t sum, seen;
        rc = usage_cf(d, &kc, cf, samples, &sum, &seen);
        if (!rc && seen)
            total += seen >= n ? sum : (uint64_t)((double)sum / (double)seen * (double)n + 0.5);
    }
    kc_free(&kc);
    *bytes = total;
    return rc;
}
